"""r1_sim: the simulated R1 (motor firmware, boards, physics) behind a CAN interface."""
import os

# MuJoCo picks its GL backend when first imported: offscreen OSMesa (the simulated cameras, no display
# needed) unless the environment chose another. Here, so that it holds whichever r1_sim module loads first.
os.environ.setdefault("MUJOCO_GL", "osmesa")

# r1_sim's messages and services are generated into devel/ (r1_sim.msg, r1_sim.srv): when this source tree
# comes first on the path (pytest's pythonpath), find them there too, as catkin's own __init__ does
__path__ = __import__("pkgutil").extend_path(__path__, __name__)
