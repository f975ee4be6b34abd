"""/sim/objects checked before it moves anything: whole messages refused naming the field and value, unknown
names left out and reported, orientations normalised and reordered for MuJoCo (w x y z)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from r1_common.validation import InputError
from r1_sim.object_states import object_poses

KNOWN = {"red_box", "green_can", "blue_ball"}
UP = (0.0, 0.0, 0.0, 1.0)      # x y z w


def test_a_good_message_gives_poses_in_mujocos_order():
    s = math.sin(0.2)
    poses, unknown = object_poses(["red_box", "chair"], [(1.0, 0.2, 0.79), (0.0, 0.0, 0.0)],
                                  [(0.0, 0.0, s, math.cos(0.2)), UP], 2, KNOWN)
    assert unknown == ["chair"] and set(poses) == {"red_box"}
    pos, quat = poses["red_box"]
    np.testing.assert_allclose(pos, [1.0, 0.2, 0.79])
    np.testing.assert_allclose(quat, [math.cos(0.2), 0.0, 0.0, s])        # w first
    # a slightly denormalised quaternion is normalised
    _, q = object_poses(["blue_ball"], [(1, 0, 1)], [(0, 0, 0, 1.05)], 1, KNOWN)[0]["blue_ball"]
    np.testing.assert_allclose(q, [1, 0, 0, 0])
    assert object_poses([], [], [], 0, KNOWN) == ({}, [])


@pytest.mark.parametrize("names, positions, quats, twists, field, text", [
    (["red_box"], [], [], 0, "objects", "differ in length"),
    (["red_box"], [(1, 0, 0)], [UP], 0, "objects", "differ in length"),          # twists missing
    (["red_box", "red_box"], [(1, 0, 0)] * 2, [UP] * 2, 2, "name[1]", "appears twice"),
    (["red_box"], [(float("nan"), 0, 0)], [UP], 1, "pose[0].position (red_box)", "not finite"),
    (["red_box"], [(1e5, 0, 0)], [UP], 1, "pose[0].position (red_box)", "beyond"),
    (["red_box"], [(1, 0, 0)], [(0, 0, 0, 0)], 1, "pose[0].orientation (red_box)", "norm 0"),
    (["green_can"], [(1, 0, 0)], [(0, 0, 0, 2.0)], 1, "pose[0].orientation (green_can)", "norm 2"),
    (["chair"], [(1, 0, 0)], [(0, float("inf"), 0, 1)], 1, "pose[0].orientation (chair)", "not finite"),
], ids=["no poses", "no twists", "twice", "nan", "far", "zero quaternion", "quaternion norm 2", "inf in unknown"])
def test_bad_messages_are_refused_naming_field_and_value(names, positions, quats, twists, field, text):
    with pytest.raises(InputError) as e:
        object_poses(names, positions, quats, twists, KNOWN)
    assert e.value.field == field and text in str(e.value), str(e.value)
