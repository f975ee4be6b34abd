"""Shared by every node of the R1 stack (see package.xml)."""
