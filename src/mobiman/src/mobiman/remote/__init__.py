"""The remote-control manager's core (stick and switch mapping, modes): ROS-free."""
