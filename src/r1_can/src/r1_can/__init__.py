"""The R1's CAN protocol (see package.xml)."""
