"""hdas: the R1 hardware driver's ROS-free core (CAN codecs, device models) and its node."""
