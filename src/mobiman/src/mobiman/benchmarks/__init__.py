"""Benchmarks of the motion-control cores (not runtime code)."""
