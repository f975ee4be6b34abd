"""r1_sim_world: the simulator's world written as an MJCF file that MuJoCo loads."""
from __future__ import annotations

from pathlib import Path

import mujoco

from r1_sim.world_file import main


def test_the_written_world_loads_with_the_robot_and_the_room(tmp_path: Path, capsys) -> None:
    out = tmp_path / "world.xml"
    assert main(["--scene", "room", "--out", str(out)]) == 0
    model = mujoco.MjModel.from_xml_path(str(out))
    assert model.joint("base_yaw") is not None and model.joint("left_arm_joint1") is not None
    assert model.body("green_can") is not None
    assert "mujoco.viewer" in capsys.readouterr().out


def test_a_missing_scene_is_one_clear_line_and_exit_1(capsys) -> None:
    assert main(["--scene", "no_such_scene"]) == 1
    err = capsys.readouterr().err
    assert "no_such_scene" in err and "scenes here" in err
