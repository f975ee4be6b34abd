"""State estimation from feedback: gripper and floating-base poses, merged joint states: ROS-free."""
