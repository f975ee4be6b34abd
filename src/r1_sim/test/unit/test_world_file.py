"""r1_sim_world: the simulator's world written as an MJCF file that MuJoCo loads."""
from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from r1_sim.world_file import main, viewer_framing


def test_the_written_world_loads_with_the_robot_and_the_room(tmp_path: Path, capsys) -> None:
    out = tmp_path / "world.xml"
    assert main(["--scene", "room", "--out", str(out)]) == 0
    model = mujoco.MjModel.from_xml_path(str(out))
    assert model.joint("base_yaw") is not None and model.joint("left_arm_joint1") is not None
    assert model.body("green_can") is not None
    assert "mujoco.viewer" in capsys.readouterr().out


def test_the_viewer_s_free_camera_starts_inside_the_room_looking_at_the_robot(tmp_path: Path) -> None:
    """MuJoCo's viewer starts its free camera from the model's statistic: without the framing it sat outside
    the room's walls, looking at the ceiling."""
    out = tmp_path / "world.xml"
    assert main(["--scene", "room", "--out", str(out)]) == 0
    model = mujoco.MjModel.from_xml_path(str(out))
    camera = mujoco.MjvCamera()
    mujoco.mjv_defaultFreeCamera(model, camera)
    lookat = np.asarray(camera.lookat)
    assert np.linalg.norm(lookat - [0.0, 0.0, 0.9]) < 1e-6
    az, el = np.radians(camera.azimuth), np.radians(camera.elevation)
    eye = lookat - camera.distance * np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])
    assert abs(eye[0]) < 3.0 and abs(eye[1]) < 2.5 and 0.0 < eye[2] < 2.5        # inside room.xml's walls


def test_a_world_s_own_framing_is_kept() -> None:
    framed = viewer_framing('<mujoco><statistic center="1 2 3" extent="9"/>'
                            '<visual><global azimuth="10"/></visual><worldbody/></mujoco>')
    model = mujoco.MjModel.from_xml_string(framed)
    assert np.allclose(model.stat.center, [1, 2, 3]) and model.stat.extent == 9.0
    assert model.vis.global_.azimuth == 10.0 and model.vis.global_.elevation == -20.0


def test_a_missing_scene_is_one_clear_line_and_exit_1(capsys) -> None:
    assert main(["--scene", "no_such_scene"]) == 1
    err = capsys.readouterr().err
    assert "no_such_scene" in err and "scenes here" in err
