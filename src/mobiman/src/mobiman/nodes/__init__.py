"""The ROS nodes: thin rospy wrappers around the cores, one module per node (scripts/ start them)."""
