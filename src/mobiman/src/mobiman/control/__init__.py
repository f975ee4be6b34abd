"""What every upper-body controller shares (the joint tracker's groups, torso speed control), free of ROS:
the base's motion as they see it (`base_motion`), the upper body's dynamics on the moving base
(`upper_body`), the MIT command around a plan (`servo`) and the rules for when a set-point may start
again from the measured position (`setpoint`)."""
