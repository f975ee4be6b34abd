"""The robot's TF tree from the URDF (mobiman.model.tf_tree), checked against pinocchio's kinematics."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from scipy.spatial.transform import Rotation

from mobiman.model.tf_tree import TfTree


def chain_to(link: str, transforms, root: str = "base_footprint") -> np.ndarray:
    """The 4x4 pose of `link` in `root`, composed from (parent, child, xyz, quat) transforms."""
    parent_of = {c: (p, xyz, q) for p, c, xyz, q in transforms}
    m = np.eye(4)
    while link != root:
        p, xyz, q = parent_of[link]
        t = np.eye(4)
        t[:3, :3], t[:3, 3] = Rotation.from_quat(q).as_matrix(), xyz
        m = t @ m
        link = p
    return m


def test_every_link_is_placed_as_pinocchio_places_it(r1_urdf):
    tree = TfTree(r1_urdf)
    model = pin.buildModelFromXML(r1_urdf)
    data = model.createData()
    q = pin.randomConfiguration(model)
    positions = {}
    for jid in range(1, model.njoints):
        j, name = model.joints[jid], model.names[jid]
        if j.nq == 1:
            positions[name] = float(q[j.idx_q])
        else:                                     # continuous joints: (cos, sin) in pinocchio
            positions[name] = float(np.arctan2(q[j.idx_q + 1], q[j.idx_q]))
    pin.framesForwardKinematics(model, data, q)
    transforms = tree.fixed() + tree.moving(positions)
    links = {c for _, c, _, _ in transforms}
    assert len(links) == len(tree.joints)
    for link in links:
        expected = data.oMf[model.getFrameId(link)].homogeneous
        np.testing.assert_allclose(chain_to(link, transforms), expected, atol=1e-9, err_msg=link)


def test_joints_without_a_finite_position_are_left_out(r1_urdf):
    tree = TfTree(r1_urdf)
    out = tree.moving({"torso_joint1": 0.3, "torso_joint2": float("nan")})
    assert [c for _, c, _, _ in out] == ["torso_link1"]
    assert len(tree.fixed()) == 21 and len(tree.moving_joints) == 26


@pytest.mark.parametrize("joint, error", [
    ('<joint type="fixed"><parent link="a"/><child link="b"/></joint>', "a joint without a name"),
    ('<joint name="j" type="fixed"><child link="b"/></joint>', "joint j: no parent link"),
    ('<joint name="j" type="fixed"><parent link="a"/><child/></joint>', "joint j: no child link"),
    ('<joint name="j" type="fixed"><origin xyz="0 1"/><parent link="a"/><child link="b"/></joint>',
     "joint j origin xyz: expected 3 numbers"),
    ('<joint name="j" type="revolute"><axis xyz="0 0 0"/><parent link="a"/><child link="b"/></joint>',
     "joint j: zero axis"),
])
def test_a_malformed_joint_is_a_value_error_naming_it(joint, error):
    with pytest.raises(ValueError, match=error):
        TfTree(f'<robot name="r"><link name="a"/><link name="b"/>{joint}</robot>')
