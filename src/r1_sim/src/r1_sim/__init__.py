"""r1_sim: the simulated R1 (motor firmware, boards, physics) behind a CAN interface."""
