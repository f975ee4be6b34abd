"""r1_sim: the simulated R1 (motor firmware, boards, physics) behind a CAN interface."""
import os

# MuJoCo picks its GL backend when first imported: offscreen OSMesa (the simulated cameras, no display
# needed) unless the environment chose another. Here, so that it holds whichever r1_sim module loads first.
os.environ.setdefault("MUJOCO_GL", "osmesa")
