"""mobiman: motion control of the Galaxea R1 (joint tracking, arm IK, torso, chassis).

The modules of this package are ROS-free cores; the ROS nodes in `mobiman.nodes`
are thin wrappers around them.
"""
