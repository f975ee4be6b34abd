"""mobiman: motion control of the Galaxea R1, one sub-package per capability.

ROS-free cores: `model` (robot model, TF tree), `arm` (arm pose control: IK), `tracker` (joint
tracker), `torso` (torso speed control), `chassis` (swerve), `estimation` (poses, joint states),
`remote` (remote-control manager). `nodes` holds the thin rospy wrappers around them; `benchmarks`
and `demo` are tools, not runtime code.
"""
