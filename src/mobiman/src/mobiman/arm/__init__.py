"""Arm pose control: IK solver, compiled passes, closed-form seeds, collision capsules, pose stream: ROS-free."""
