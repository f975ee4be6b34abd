"""The robot's kinematic and dynamic model (pinocchio) and its TF tree: ROS-free."""
