"""HDAS's benchmarks (tools, not runtime code): `sim` (HDAS against the simulated robot), `delivery` (one ROS
message delivery). Each is run by its short script in scripts/ (`scripts/benchmark hdas`, `... delivery`)."""
