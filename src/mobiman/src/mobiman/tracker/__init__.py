"""The joint tracker's core, ROS-free: Ruckig moves, gravity feed-forward, MIT/PID commands (joint_tracker), one
group's tick (group), the feedback clock it shares with torso speed control (feedback_clock), the settings."""
