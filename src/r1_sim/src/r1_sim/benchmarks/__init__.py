"""r1_sim's benchmarks: tools, not runtime code (`rosrun r1_sim benchmark_sensors`)."""
