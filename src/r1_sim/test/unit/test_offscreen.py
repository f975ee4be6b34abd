"""One render pass for colour and depth (r1_sim.offscreen): the same pixels as `mujoco.Renderer`'s colour
pass, the same metres as its separate depth pass, and the depth of a known plane."""
from __future__ import annotations

import mujoco
import numpy as np
import pytest

from r1_sim.offscreen import OffscreenCamera, gl_backend

gl_backend()      # MUJOCO_GL's backend (r1_sim sets osmesa) for the reference mujoco.Renderer too

# a camera 2 m above a floor looking straight down, a red box and a sphere in view
SCENE = """
<mujoco>
  <visual><global offwidth="96" offheight="64"/><quality offsamples="0"/></visual>
  <worldbody>
    <light pos="0 0 5"/>
    <geom type="plane" size="5 5 0.1" rgba="0.6 0.6 0.6 1"/>
    <geom type="box" pos="0.2 0.1 0.25" size="0.1 0.1 0.25" rgba="1 0 0 1"/>
    <geom type="sphere" pos="-0.3 -0.1 0.2" size="0.2" rgba="0 0 1 1"/>
    <camera name="down" pos="0 0 2" xyaxes="1 0 0 0 1 0" fovy="60"/>
  </worldbody>
</mujoco>
"""


@pytest.fixture()
def world():
    model = mujoco.MjModel.from_xml_string(SCENE)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    camera = OffscreenCamera(model, 96, 64)
    reference = mujoco.Renderer(model, 64, 96)
    yield model, data, camera, reference
    camera.close()
    reference.close()


def test_one_pass_gives_the_renderers_colour_and_depth(world) -> None:
    model, data, camera, reference = world
    rgb, depth = camera.render(data, 0)
    reference.update_scene(data, camera="down")
    expected_rgb = reference.render().copy()
    reference.enable_depth_rendering()
    expected_depth = reference.render().copy()
    assert rgb.shape == (64, 96, 3) and rgb.dtype == np.uint8 and depth.shape == (64, 96)
    assert np.array_equal(rgb, expected_rgb)
    assert np.max(np.abs(depth - expected_depth)) < 1e-6
    # z-depth, along the optical axis: the floor 2 m below even at the image's edge, the box top (0.5 m
    # high) at 1.5 m, the sphere's top (0.4 m) at 1.6 m; the box red, the sphere blue, where the pinhole
    # puts them
    assert depth[0, 0] == pytest.approx(2.0, abs=1e-3)
    focal = 32 / np.tan(np.radians(30))

    def pixel(x: float, y: float, z: float) -> tuple[int, int]:
        # MuJoCo's camera looks along -z with image up = +y here: row grows with -y, column with +x
        return int(round(31.5 - focal * y / (2 - z))), int(round(47.5 + focal * x / (2 - z)))
    box, ball = pixel(0.2, 0.1, 0.5), pixel(-0.3, -0.1, 0.4)
    assert depth[box] == pytest.approx(1.5, abs=1e-3)
    assert depth[ball] == pytest.approx(1.6, abs=5e-3)
    assert rgb[box][0] > 2 * max(rgb[box][1], rgb[box][2])
    assert rgb[ball][2] > 2 * max(rgb[ball][0], rgb[ball][1])


def test_only_what_is_asked_and_closed_refuses(world) -> None:
    _, data, camera, _ = world
    rgb, depth = camera.render(data, 0, depth=False)
    assert rgb is not None and depth is None
    rgb, depth = camera.render(data, 0, rgb=False)
    assert rgb is None and depth is not None
    camera.close()
    camera.close()                                  # idempotent
    with pytest.raises(RuntimeError):
        camera.render(data, 0)


def test_a_size_beyond_the_offscreen_buffer_is_refused() -> None:
    model = mujoco.MjModel.from_xml_string(SCENE)
    with pytest.raises(ValueError, match="offscreen buffer"):
        OffscreenCamera(model, 200, 64)
