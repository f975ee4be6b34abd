"""RobotModel against the vendor's published FK samples and against finite differences."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from scipy.spatial.transform import Rotation

from mobiman.model.robot_model import RobotModel, load_group_config
from r1_common.settings import ConfigError

ARM = {"left": "left_arm", "right": "right_arm"}

# gripper_link in torso_link4 for the same arm q on both arms (r1_kinematics.md §5a): q, left, right
FK_SAMPLES = [
    ((0, 0, 0, 0, 0, 0), ((0.086181, 0.337700, 0.302850), (0, 0, 0)),
     ((0.086182, -0.337703, 0.302850), (0, 0, 0))),
    ((0, np.pi / 2, -np.pi / 2, 0, 0, 0), ((0.455459, 0.666982, 0.302850), (0, 0, 0)),
     ((0.455464, -0.666981, 0.302850), (0, 0, 0))),
    ((-np.pi / 2, 0, 0, 0, 0, 0), ((-0.000338, 0.337700, 0.389369), (0, -np.pi / 2, 0)),
     ((-0.000337, -0.337703, 0.216331), (0, np.pi / 2, 0))),
    ((-np.pi / 2, np.pi / 2, -np.pi / 2, 0, 0, 0), ((-0.000338, 0.666982, 0.758647), (0, -np.pi / 2, 0)),
     ((-0.000337, -0.666981, -0.152951), (0, np.pi / 2, 0))),
    ((0.5, 1.0, -1.5, 0.3, -0.4, 0.8), ((0.182006, 0.800296, 0.271974), (1.30153, 0.08760, 0.34894)),
     ((0.182011, -0.800297, 0.333729), (1.30153, -0.08760, -0.34894))),
    ((-1.0, 2.0, -2.5, -1.0, 1.2, -0.5), ((0.329215, 0.666199, 0.664968), (-1.28657, -0.31719, -0.57230)),
     ((0.329217, -0.666197, -0.059273), (-1.28657, 0.31719, 0.57230))),
]

# torso_link4 in base_link (r1_kinematics.md §4b): q torso, xyz, pitch
TORSO_SAMPLES = [
    ((0, 0, 0, 0), (-0.032845, 0, 1.10062), 0.0),
    ((0.5, -1.0, -0.5, 0), (0.0151, 0, 1.0149), 0.0),
    ((1.0, -2.0, -1.0, 0), (0.0513, 0, 0.7788), 0.0),
    ((1.8326, -2.7925, -0.9599, 0), (0.1078, 0, 0.4692), 0.0),
    ((0.3, 0, 0, 0), (0.2035, 0, 1.0649), 0.3),
    ((0.3, 0, 0.3, 0), (0.174, 0, 1.0694), 0.0),
]


def random_arm(model: RobotModel, group: str, rng: np.random.Generator) -> np.ndarray:
    lim = model.limits(group)
    return rng.uniform(lim.lower, lim.upper)


@pytest.mark.parametrize("q_arm,left,right", FK_SAMPLES)
def test_gripper_pose_in_torso_link4_matches_vendor_samples(r1: RobotModel, q_arm, left, right) -> None:
    for side, (xyz, rpy) in (("left", left), ("right", right)):
        q = r1.configuration({ARM[side]: q_arm})
        pose = r1.pose(f"{side}_gripper_link", q, reference="torso_link4")
        assert pose.translation == pytest.approx(xyz, abs=2e-6)
        expected = Rotation.from_euler("xyz", rpy).as_matrix()
        assert np.allclose(pose.rotation, expected, atol=2e-5)


@pytest.mark.parametrize("q_torso,xyz,pitch", TORSO_SAMPLES)
def test_torso_link4_pose_matches_vendor_samples(r1: RobotModel, q_torso, xyz, pitch) -> None:
    pose = r1.pose("torso_link4", r1.configuration({"torso": q_torso}), "base_link")
    assert pose.translation == pytest.approx(xyz, abs=6e-5)
    assert np.allclose(pose.rotation, Rotation.from_euler("y", pitch).as_matrix(), atol=1e-6)


def test_mirror_relation_between_arms(r1: RobotModel) -> None:
    """q_right = (-q1, q2, q3, -q4, -q5, -q6) mirrors the left gripper pose in the x-z plane."""
    rng = np.random.default_rng(7)
    flip = np.diag([1.0, -1.0, 1.0])
    sign = np.array([-1, 1, 1, -1, -1, -1])
    for _ in range(200):
        q_left = random_arm(r1, "left_arm", rng)
        q = r1.configuration({"left_arm": q_left, "right_arm": sign * q_left})
        pl = r1.pose("left_gripper_link", q, "torso_link4")
        pr = r1.pose("right_gripper_link", q, "torso_link4")
        assert np.allclose(flip @ pl.translation, pr.translation, atol=1e-5)
        assert np.allclose(flip @ pl.rotation @ flip, pr.rotation, atol=1e-4)


@pytest.mark.parametrize("frame,ref,group", [
    ("left_gripper_link", "torso_link4", "left_arm"),
    ("right_gripper_link", "torso_link4", "right_arm"),
    ("left_gripper_link", None, "torso"),
    ("right_gripper_link", "torso_link1", "torso"),
    ("torso_link4", None, "torso"),
])
def test_jacobian_matches_finite_differences(r1: RobotModel, frame, ref, group) -> None:
    rng = np.random.default_rng(3)
    eps = 1e-6
    for _ in range(20):
        q = r1.configuration({g: random_arm(r1, g, rng) for g in ("torso", "left_arm", "right_arm")})
        jac = r1.jacobian(frame, q, reference=ref, group=group)
        x0 = r1.pose(frame, q, ref)
        fd = np.zeros_like(jac)
        for k in range(jac.shape[1]):
            vals = r1.group_values(q, group)
            vals[k] += eps
            x1 = r1.pose(frame, r1.configuration({group: vals}, base=q), ref)
            fd[:3, k] = (x1.translation - x0.translation) / eps
            fd[3:, k] = pin.log3(x1.rotation @ x0.rotation.T) / eps
        assert np.allclose(jac, fd, atol=1e-5), np.abs(jac - fd).max()


def test_gravity_is_gradient_of_potential_energy(r1: RobotModel) -> None:
    """RNEA gravity torques equal dV/dq, computed independently from the potential energy."""
    rng = np.random.default_rng(11)
    eps = 1e-6
    for _ in range(10):
        q = r1.configuration({g: random_arm(r1, g, rng) for g in ("torso", "left_arm", "right_arm")})
        for group in ("torso", "left_arm", "right_arm"):
            tau = r1.gravity(q, group)
            vals = r1.group_values(q, group)
            grad = []
            for k in range(len(vals)):
                up, down = vals.copy(), vals.copy()
                up[k] += eps
                down[k] -= eps
                e_up = pin.computePotentialEnergy(r1.model, r1.data, r1.configuration({group: up}, base=q))
                e_dn = pin.computePotentialEnergy(r1.model, r1.data, r1.configuration({group: down}, base=q))
                grad.append((e_up - e_dn) / (2 * eps))
            assert tau == pytest.approx(grad, abs=1e-5)


def test_gravity_depends_on_torso_posture(r1: RobotModel) -> None:
    """The torso's pitch changes the arms' gravity load: a leaning trunk loads the shoulder differently."""
    arm = (0.3, 1.2, -1.5, 0.0, 0.3, 0.0)
    upright = r1.gravity(r1.configuration({"left_arm": arm}), "left_arm")
    leaning = r1.gravity(r1.configuration({"left_arm": arm, "torso": (0.6, 0, 0, 0)}), "left_arm")
    assert np.abs(upright - leaning).max() > 0.5


def test_inverse_dynamics_at_rest_is_gravity(r1: RobotModel) -> None:
    q = r1.configuration({"left_arm": (0.2, 1.0, -1.0, 0.1, 0.2, 0.3)})
    zero = np.zeros(r1.model.nv)
    assert r1.inverse_dynamics(q, zero, zero, "left_arm") == pytest.approx(r1.gravity(q, "left_arm"))
    a = r1.velocity_vector({"left_arm": np.ones(6)})
    assert not np.allclose(r1.inverse_dynamics(q, zero, a, "left_arm"), r1.gravity(q, "left_arm"))


def test_limits_come_from_the_urdf(r1: RobotModel) -> None:
    arm = r1.limits("left_arm")
    assert arm.velocity == pytest.approx([3, 3, 3, 5, 5, 5])
    assert arm.effort == pytest.approx([40, 40, 27, 7, 7, 7])
    assert arm.lower == pytest.approx([-2.8798, 0, -3.3161, -2.8798, -1.6581, -2.8798])
    assert arm.upper == pytest.approx([2.8798, 3.2289, 0, 2.8798, 1.6581, 2.8798])
    torso = r1.limits("torso")
    assert torso.velocity == pytest.approx([1.5] * 4)
    assert torso.lower == pytest.approx([-1.1345, -2.7925, -1.8326, -3.0543])
    wheels = r1.limits("chassis_wheels")
    assert np.all(np.isinf(wheels.lower)) and np.all(np.isinf(wheels.upper))
    assert arm.clamp(np.full(6, 10.0)) == pytest.approx(arm.upper)


def test_continuous_wheel_angles_round_trip(r1: RobotModel) -> None:
    q = r1.configuration({"chassis_wheels": (3.0, -2.0, 0.5)})
    assert r1.group_values(q, "chassis_wheels") == pytest.approx([3.0, -2.0, 0.5])
    assert q.shape == (r1.model.nq,) and r1.model.nq == 29 and r1.model.nv == 26


def test_groups_cover_every_moving_joint(r1: RobotModel) -> None:
    grouped = {j for joints in r1.groups.values() for j in joints}
    moving = {r1.model.names[i] for i in range(1, r1.model.njoints)}
    assert grouped == moving


def test_bad_input_is_reported_clearly(r1: RobotModel, r1_urdf: str) -> None:
    with pytest.raises(ValueError, match="takes 6 values"):
        r1.configuration({"left_arm": (0.0, 1.0)})
    with pytest.raises(KeyError, match="unknown joint group"):
        r1.group("left_leg")
    with pytest.raises(KeyError, match="not in the URDF"):
        r1.pose("no_such_link", r1.configuration())
    with pytest.raises(KeyError, match="not in the URDF"):
        RobotModel(r1_urdf, {"bad": ["no_joint"]})


def test_floating_urdf_agrees_with_full_urdf(r1: RobotModel, floating: RobotModel) -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        arms = {g: random_arm(r1, g, rng) for g in ("left_arm", "right_arm")}
        for side in ("left", "right"):
            full = r1.pose(f"{side}_gripper_link", r1.configuration(arms), "torso_link4")
            flo = floating.pose(f"{side}_gripper_link", floating.configuration(arms))
            assert np.allclose(full.homogeneous, flo.homogeneous, atol=1e-9)


@pytest.mark.parametrize("text, why", [
    (None, "cannot read"),
    ("joint_groups: [a, b", "cannot read"),
    ("- just a list", "joint_groups"),
    ("joint_groups: {arm: [j1, 2]}", "joint_groups"),
    ("joint_groups: {arm: [j1]}\nframes: {base: [base_link]}", "frames"),
])
def test_a_joint_group_table_that_cannot_be_used_names_the_parameter(tmp_path, text, why) -> None:
    path = tmp_path / "groups.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ConfigError, match=why) as e:
        load_group_config(path, key="/node/joint_groups_file")
    assert e.value.key == "/node/joint_groups_file" and str(path) in str(e.value)
