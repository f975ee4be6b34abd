"""The joint tracker's core: Ruckig moves, gravity feed-forward, MIT/PID commands: ROS-free."""
