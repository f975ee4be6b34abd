"""Swerve kinematics and chassis control: ROS-free."""
