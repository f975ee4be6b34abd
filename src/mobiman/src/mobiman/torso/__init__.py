"""Torso speed control's core: ROS-free."""
