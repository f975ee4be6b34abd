"""TorsoSpeedController: Cartesian speed of torso_link3 with the pitch held, judged by FK (RobotModel)
of the integrated joints; workspace box, joint limits, speed cap, the singular straight posture,
the command timeout, joint-target moves and their takeover, bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mobiman.model.robot_model import RobotModel
from mobiman.torso.speed_control import CommandError, TorsoSpeedConfig, TorsoSpeedController
from mobiman.tracker.joint_tracker import TargetError

DT = 0.002                               # 500 Hz feedback, as on the R1
SLOW = 0.01                              # 100 Hz, the light simulation's torso bus: for the long runs
BENT = [1.0, -2.0, -1.0, 0.0]            # torso_link3 at x 0.084, z 0.378, pitch 0
SLACK = 1e-9


class Run:
    """Drives a controller tick by tick with perfect tracking (measured = commanded) and records it."""

    def __init__(self, ctrl: TorsoSpeedController, q0, dt: float = DT):
        self.c, self.t, self.dt = ctrl, 0.0, dt
        ctrl.start(q0)
        ctrl.step(self.t, q0)
        self.q, self.qd, self.v, self.state = [ctrl.position], [ctrl.velocity], [ctrl.cartesian_velocity], \
            [ctrl.task_state(ctrl.position)]

    def ticks(self, seconds: float, speed=None, measured_offset=0.0) -> None:
        """`seconds` of ticks; `speed` (vx, vz) sent before every tick, None: no command (stream silent)."""
        for _ in range(int(round(seconds / self.dt))):
            if speed is not None:
                self.c.set_speed(speed[0], speed[1], self.t)
            self.t += self.dt
            cmd = self.c.step(self.t, self.c.position + measured_offset)
            assert np.all(np.isfinite(cmd.position)) and np.all(np.isfinite(cmd.velocity))
            self.q.append(cmd.position)
            self.qd.append(cmd.velocity)
            self.v.append(self.c.cartesian_velocity)
            self.state.append(self.c.task_state(cmd.position))

    def until_still(self, speed=(0.0, 0.0), limit: float = 5.0) -> None:
        for _ in range(int(limit / 0.1)):
            self.ticks(0.1, speed)
            if np.max(np.abs(self.qd[-1])) < 1e-12:
                return
        raise AssertionError(f"still moving after {limit} s: {self.qd[-1]}")

    def arrays(self):
        return np.array(self.q), np.array(self.qd), np.array(self.v), np.array(self.state)


@pytest.fixture
def ctrl(r1: RobotModel) -> TorsoSpeedController:
    return TorsoSpeedController(r1)


def test_geometry_matches_the_reference(ctrl: TorsoSpeedController) -> None:
    # r1_kinematics.md §4: straight torso -> torso_link3 0.7 above torso_joint1; pitch = q1 + q2 - q3
    np.testing.assert_allclose(ctrl.task_state([0, 0, 0, 0]), [0.0, 0.7, 0.0], atol=1e-9)
    q = [0.3, -0.5, 0.1, 0.7]
    x, z = 0.4 * math.sin(0.3) + 0.3 * math.sin(-0.2), 0.4 * math.cos(0.3) + 0.3 * math.cos(-0.2)
    np.testing.assert_allclose(ctrl.task_state(q), [x, z, 0.3 - 0.5 - 0.1], atol=1e-9)


@pytest.mark.parametrize("axis,sign", [(0, 1), (0, -1), (1, 1), (1, -1)])
def test_speed_for_one_second_moves_by_v_t_and_holds_pitch(ctrl: TorsoSpeedController, axis: int, sign: int) -> None:
    run = Run(ctrl, BENT)
    speed = np.zeros(2)
    speed[axis] = 0.1 * sign
    run.ticks(1.0, speed)
    run.until_still()
    q, qd, v, state = run.arrays()
    moved = state[-1] - state[0]
    # a symmetric ramp up and down at the acceleration limit covers exactly v·t
    assert moved[axis] == pytest.approx(0.1 * sign, abs=1e-3)
    assert abs(moved[1 - axis]) < 1e-3
    assert np.max(np.abs(state[:, 2] - state[0, 2])) < 1e-3
    assert np.all(q[:, 3] == q[0, 3]), "yaw held"
    # the Cartesian velocity never changes faster than the acceleration limit, never above 0.1
    assert np.max(np.abs(np.diff(v, axis=0))) <= 0.5 * DT * (1 + SLACK)
    assert np.max(np.abs(v)) <= 0.1 + 1e-12
    # and the FK of the integrated joints moves as the velocity state says
    np.testing.assert_allclose(np.diff(state[:, axis]) / DT, v[1:, axis], atol=2e-3)


def test_speed_is_clamped_to_the_limit(ctrl: TorsoSpeedController) -> None:
    run = Run(ctrl, BENT)
    assert ctrl.set_speed(0.5, -0.05, 0.0) == ["v_x 0.5 clamped to 0.2 m/s"]
    run.ticks(0.5, (-0.5, 0.0))
    _, _, v, state = run.arrays()
    assert np.max(np.abs(v)) == pytest.approx(0.2)
    assert (state[-1, 0] - state[-2, 0]) / DT == pytest.approx(-0.2, abs=2e-3)
    assert ctrl.stats["clamped"] > 0


def box_config(**kw) -> TorsoSpeedConfig:
    return TorsoSpeedConfig(workspace_x=(-0.05, 0.15), workspace_z=(0.3, 0.6), **kw)


@pytest.mark.parametrize("speed", [(0.2, 0.2), (-0.2, -0.2), (0.0, -0.2)])
def test_workspace_box_is_never_left(r1: RobotModel, speed) -> None:
    # a box all of whose faces are reachable from BENT (the guide's lower face is behind joint limits
    # and its upper one is reached only at x = 0, both tested below); the diagonals hit all four
    ctrl = TorsoSpeedController(r1, box_config())
    run = Run(ctrl, BENT, SLOW)
    run.ticks(3.0, speed)
    _, _, v, state = run.arrays()
    lo, hi = np.array([-0.05, 0.3]), np.array([0.15, 0.6])
    assert np.all(state[:, :2] >= lo - 1e-4) and np.all(state[:, :2] <= hi + 1e-4)
    for i, s in enumerate(speed):        # driven into the face: ends on it, at rest
        if s:
            assert state[-1, i] == pytest.approx(hi[i] if s > 0 else lo[i], abs=1e-3)
    np.testing.assert_allclose(v[-1], 0.0, atol=1e-9)
    assert np.max(np.abs(state[:, 2])) < 1e-3
    # braking before the face stays within the acceleration limit (to rounding)
    assert np.max(np.abs(np.diff(v, axis=0))) <= 0.5 * SLOW * 1.05
    assert ctrl.stats["workspace_limited"] > 0


def test_pushing_into_a_face_at_rest_holds_still_and_keeps_counting(r1: RobotModel) -> None:
    ctrl = TorsoSpeedController(r1, box_config())
    run = Run(ctrl, BENT, SLOW)
    run.ticks(3.0, (0.0, 0.2))           # up into the top face, where it comes to rest
    before, n = ctrl.stats["workspace_limited"], len(run.q)
    run.ticks(1.0, (0.0, 0.2))           # still commanded upward: 100 ticks at rest on the face
    q, qd, _, _ = run.arrays()
    assert np.all(qd[n:] == 0.0) and np.all(q[n:] == q[n])
    assert ctrl.stats["workspace_limited"] - before == 100


def test_guide_workspace_faces(ctrl: TorsoSpeedController) -> None:
    lo, hi = np.array([-0.1, 0.1]), np.array([0.2, 0.7])
    for speed, face in [((0.2, 0.0), (0, 0.2)), ((-0.2, 0.0), (0, -0.1))]:
        run = Run(ctrl, BENT, SLOW)
        run.ticks(2.0, speed)
        state = run.arrays()[3]
        assert np.all(state[:, :2] >= lo - 1e-4) and np.all(state[:, :2] <= hi + 1e-4)
        assert state[-1, face[0]] == pytest.approx(face[1], abs=1e-3)
    # the top face z = 0.7 is reached only straight up (x = 0): from x ≈ 0 upward, it stops there
    run = Run(ctrl, [-0.2, 0.468, 0.268, 0.0], SLOW)  # x 0.0001, z 0.637
    run.ticks(2.0, (0.0, 0.2))
    state = run.arrays()[3]
    assert np.max(state[:, 1]) <= 0.7 + 1e-4 and state[-1, 1] > 0.69


def test_outside_the_box_is_pulled_back_while_commanded(r1: RobotModel) -> None:
    ctrl = TorsoSpeedController(r1, box_config())
    q0 = [0.5, -1.0, -0.5, 0.0]                     # x 0.048, z 0.614: above the 0.6 face
    run = Run(ctrl, q0, SLOW)
    run.ticks(0.5, None)                             # no command: held where it is
    assert run.arrays()[3][-1, 1] == pytest.approx(ctrl.task_state(q0)[1], abs=1e-9)
    run.ticks(2.0, (0.0, 0.0))                       # commanded (zero): pulled back in
    state = run.arrays()[3]
    assert state[-1, 1] == pytest.approx(0.6, abs=2e-3)
    assert np.all(np.diff(state[:, 1]) <= 1e-9), "pulled straight back, no overshoot upward"


def test_joint_limits_and_speed_cap_hold(ctrl: TorsoSpeedController) -> None:
    rng = np.random.default_rng(3)
    lim_hit = 0
    for q0 in (BENT, [1.6, -2.6, -1.0, 0.3]):
        run = Run(ctrl, q0, SLOW)
        for _ in range(4):
            run.ticks(0.5, rng.uniform(-0.2, 0.2, 2))
        for speed in [(0.2, -0.2), (0.0, -0.2), (-0.2, -0.2)]:   # into the joint limits
            run.ticks(2.0, speed)
        q, qd, _, state = run.arrays()
        assert np.all(q >= ctrl.lower - SLACK) and np.all(q <= ctrl.upper + SLACK)
        assert np.max(np.abs(qd)) <= 1.5 + 1e-9
        assert np.max(np.abs(state[:, 2] - state[0, 2])) < 1e-3
        lim_hit = max(lim_hit, int(np.sum(np.isclose(q, ctrl.lower + 0.005, atol=1e-3)
                                          | np.isclose(q, ctrl.upper - 0.005, atol=1e-3))))
    assert lim_hit > 0 and ctrl.stats["joint_limited"] > 0, "some joint was driven to its limit"


def test_speed_cap_scales_the_whole_joint_velocity(r1: RobotModel) -> None:
    ctrl = TorsoSpeedController(r1, TorsoSpeedConfig(joint_speed_cap=0.2))
    run = Run(ctrl, BENT)
    run.ticks(1.0, (0.2, 0.2))
    _, qd, v, state = run.arrays()
    assert np.max(np.abs(qd)) == pytest.approx(0.2)
    assert ctrl.stats["speed_capped"] > 0
    # the direction is kept: the torso still moves along (1, 1), slower
    step = state[-1, :2] - state[-2, :2]
    assert step[0] == pytest.approx(step[1], rel=1e-2) and np.linalg.norm(step) / DT < 0.2 * math.sqrt(2)
    assert np.max(np.abs(state[:, 2])) < 1e-3


@pytest.mark.parametrize("q0", [[0.0, 0.0, 0.0, 0.0], [0.1, -1e-3, 0.1, 0.0], [0.1, 0.02, 0.12, 0.0]])
def test_near_the_straight_posture_speeds_stay_bounded(ctrl: TorsoSpeedController, q0) -> None:
    for speed in [(0.0, -0.2), (0.2, 0.0), (-0.2, 0.0), (0.0, 0.2), (0.2, -0.2)]:
        run = Run(ctrl, q0, SLOW)
        run.ticks(1.5, speed)
        run.ticks(0.5, (0.0, 0.0))
        q, qd, _, state = run.arrays()
        assert np.max(np.abs(qd)) <= 1.5 + 1e-9
        assert np.max(np.abs(np.diff(qd, axis=0))) / SLOW < 12.0      # no jumps either
        assert np.max(np.abs(state[:, 2] - state[0, 2])) < 2e-3
        assert np.all(state[:, 1] <= 0.7 + 1e-4)
    assert ctrl.stats["damped"] > 0


def test_straight_torso_goes_down(ctrl: TorsoSpeedController) -> None:
    # exactly straight the radial direction is singular: the escape bend gets it moving
    run = Run(ctrl, [0.0, 0.0, 0.0, 0.0], SLOW)
    run.ticks(2.0, (0.0, -0.1))
    q, _, _, state = run.arrays()
    assert state[-1, 1] < 0.7 - 0.1
    assert abs(state[-1, 0]) < 2e-3 and abs(state[-1, 2]) < 1e-3
    assert q[-1, 1] < -0.3, "bent the vendor's way (q2 < 0)"


def test_stream_timeout_decelerates_within_the_acceleration_limit(ctrl: TorsoSpeedController) -> None:
    run = Run(ctrl, BENT)
    run.ticks(1.0, (0.0, 0.15))
    n = len(run.v)
    run.ticks(1.0, None)                 # the stream stops
    q, qd, v, state = run.arrays()
    after = v[n - 1:, 1]
    coast = int(round(0.2 / DT))         # command_timeout: the last command goes on for 0.2 s
    assert np.all(after[:coast - 1] == pytest.approx(0.15))
    assert np.all(np.diff(after) <= 1e-12) and np.all(np.diff(after) >= -0.5 * DT * (1 + SLACK))
    stop = coast + int(round(0.15 / 0.5 / DT)) + 2
    assert np.all(after[stop:] == 0.0)
    np.testing.assert_allclose(qd[n - 1 + stop:], 0.0, atol=1e-12)     # (pitch correction: rounding only)
    np.testing.assert_allclose(q[-1], q[n - 1 + stop], atol=1e-12)
    # and then it stands exactly still: no round-off creep of the pitch correction (PITCH_DEADBAND)
    settled = n - 1 + stop + 10
    assert np.all(qd[settled:] == 0.0) and np.all(q[settled:] == q[settled])
    assert ctrl.stats["timeouts"] == 1


def test_sag_does_not_accumulate_and_large_errors_resync(ctrl: TorsoSpeedController) -> None:
    run = Run(ctrl, BENT)
    run.ticks(1.0, (0.0, 0.1), measured_offset=np.array([-0.01, 0.01, 0.0, 0.0]))    # gravity sag
    run.until_still()
    state = run.arrays()[3]
    assert state[-1, 1] - state[0, 1] == pytest.approx(0.1, abs=1e-3)
    assert ctrl.stats["resyncs"] == 0
    held = ctrl.position
    for k in range(20):                                       # pushed 0.15 rad: the command stays, it pulls back
        cmd = ctrl.step(run.t + (k + 1) * DT, held + [0.15, 0, 0, 0])
    np.testing.assert_allclose(cmd.position, held, atol=1e-12)
    assert ctrl.stats["resyncs"] == 0
    ctrl.guard.motors([False, True, True, True])             # motors off: the command follows where it is
    cmd = ctrl.step(run.t + 21 * DT, held + [0.15, 0, 0, 0])
    np.testing.assert_allclose(cmd.position, held + [0.15, 0, 0, 0])
    assert ctrl.stats["resyncs"] == 1 and "re-seeded" in ctrl.events[-1] and "motors off" in ctrl.events[-1]


def test_joint_target_then_speed_takeover_is_continuous(ctrl: TorsoSpeedController) -> None:
    run = Run(ctrl, [0.0, 0.0, 0.0, 0.0])
    ctrl.set_target(BENT, [0.6] * 4)
    run.ticks(2.0, None)
    assert ctrl.mode == "joint target" and np.max(np.abs(run.qd[-1])) > 0.3     # mid-move, going down
    n = len(run.qd)
    run.ticks(1.5, (-0.05, -0.1))                                                # takes over
    assert ctrl.mode == "speed"
    q, qd, v, state = run.arrays()
    jumps = np.max(np.abs(np.diff(qd[n - 5:], axis=0)), axis=1) / DT
    assert np.max(jumps) < 10.0, f"joint acceleration at the takeover up to {np.max(jumps):.1f} rad/s²"
    # the Cartesian velocity (FK) goes on from the move's: no jump either
    fk_v = np.diff(state[n - 5:, :2], axis=0) / DT
    assert np.max(np.abs(np.diff(fk_v, axis=0))) / DT < 1.0
    assert np.max(np.abs(np.diff(v[n:], axis=0))) <= 0.5 * DT * (1 + SLACK)
    # the move's own pitch rate and yaw decay; then speed control holds the pitch it ends with
    np.testing.assert_allclose(v[-1], [-0.05, -0.1], atol=1e-9)
    np.testing.assert_allclose(fk_v[-1], [-0.05, -0.1], atol=1e-3)
    assert np.all(qd[-50:, 3] == 0.0)
    assert abs(state[-1, 2] - state[-200, 2]) < 1e-3


def test_joint_target_reached_then_speed_holds_its_pitch(ctrl: TorsoSpeedController) -> None:
    run = Run(ctrl, [0.0, 0.0, 0.0, 0.0])
    target = [1.0, -2.0, -0.8, 0.3]                          # pitch 1 - 2 + 0.8 = -0.2
    notes = ctrl.set_target(target)
    assert notes == []
    for _ in range(100):
        run.ticks(0.1, None)
        if ctrl.mode == "speed":
            break
    np.testing.assert_array_equal(ctrl.position, target)
    assert ctrl.pitch_reference == pytest.approx(-0.2)
    run.ticks(1.0, (-0.1, 0.0))
    run.until_still()
    state = run.arrays()[3]
    assert state[-1, 2] == pytest.approx(-0.2, abs=1e-3) and ctrl.position[3] == 0.3
    assert state[-1, 0] - ctrl.task_state(target)[0] == pytest.approx(-0.1, abs=1e-3)


def test_joint_target_during_speed_motion_brakes_first(ctrl: TorsoSpeedController) -> None:
    run = Run(ctrl, BENT)
    run.ticks(1.0, (0.1, 0.0))
    n = len(run.qd)
    ctrl.set_target([0.5, -1.0, -0.5, 0.0])
    run.ticks(0.1, None)
    assert ctrl.mode == "braking for target"
    for _ in range(100):
        run.ticks(0.1, None)
        if ctrl.mode == "speed":
            break
    q, qd, v, _ = run.arrays()
    np.testing.assert_array_equal(q[-1], [0.5, -1.0, -0.5, 0.0])
    assert np.max(np.abs(np.diff(qd[n - 1:], axis=0))) / DT < 10.0
    assert np.max(np.abs(np.diff(v[n - 1:], axis=0))) <= 0.5 * DT * (1 + SLACK)


def test_zero_speed_commands_do_not_cancel_a_joint_target(ctrl: TorsoSpeedController) -> None:
    run = Run(ctrl, [0.0, 0.0, 0.0, 0.0])
    ctrl.set_target([0.3, -0.6, -0.3, 0.0])
    for _ in range(100):
        run.ticks(0.1, (0.0, 0.0))
        if ctrl.mode == "speed":
            break
    np.testing.assert_array_equal(ctrl.position, [0.3, -0.6, -0.3, 0.0])


def test_bad_input_is_rejected(ctrl: TorsoSpeedController) -> None:
    run = Run(ctrl, BENT)
    run.ticks(0.5, (0.0, 0.1))
    for bad in [(float("nan"), 0.0), (0.0, float("inf"))]:
        with pytest.raises(CommandError):
            ctrl.set_speed(*bad, run.t)
    run.ticks(0.1, None)
    assert run.v[-1][1] == pytest.approx(0.1), "the last good command goes on"
    held = ctrl.position
    for position, velocity in [([float("nan")] * 4, []), ([0.1] * 3, []), ([0.1] * 5, []),
                               ([0.1] * 4, [1.0] * 3), ([0.1] * 4, [float("nan")] * 4)]:
        with pytest.raises(TargetError):
            ctrl.set_target(position, velocity)
    assert ctrl.mode == "speed" and ctrl.stats["dropped"] == 7
    with pytest.raises(ValueError):
        ctrl.step(run.t + DT, [0.0] * 3)
    run.ticks(0.002, None)
    assert np.all(np.isfinite(ctrl.position)) and ctrl.position[1] != held[1]
    # beyond the joint limits: clamped, with notes
    notes = ctrl.set_target([3.0, -2.0, -1.0, 0.0], [2.0, 1.0, 1.0, 1.0])
    assert notes == ["torso_joint1 target 3 clamped to 1.833", "torso_joint1 speed 2 capped to 1.5"]
    for _ in range(200):
        run.ticks(0.1, None)
        if ctrl.mode == "speed":
            break
    assert ctrl.position[0] == pytest.approx(1.8326)


def test_a_target_with_huge_speeds_never_freezes_the_controller(ctrl: TorsoSpeedController) -> None:
    """Regression (issue 19): a joint target with finite but huge velocities (1e308) during a joint
    move was accepted, then refused by the trajectory on every tick (its check summed the vector into
    inf), and torso control stopped until the next target. Now it is taken, the speeds capped."""
    run = Run(ctrl, [0.0, 0.0, 0.0, 0.0])
    ctrl.set_target([0.3, -0.6, 0.3, 0.0])
    run.ticks(0.2, None)
    assert ctrl.mode == "joint target"
    notes = ctrl.set_target([0.0, 0.0, 0.0, 0.0], [1e308] * 4)
    assert len(notes) == 4 and all("capped to 1.5" in n for n in notes)
    for _ in range(100):
        run.ticks(0.1, None)
        if ctrl.mode == "speed":
            break
    np.testing.assert_array_equal(ctrl.position, [0.0, 0.0, 0.0, 0.0])
    assert not any("trajectory" in e for e in ctrl.events)


def test_config_from_params_and_validation() -> None:
    cfg = TorsoSpeedConfig.from_params({"max_speed": 0.1, "workspace": {"x": [-0.2, 0.1]}, "bend_sign": 1,
                                        "kp": [1, 2, 3, 4]})
    assert cfg.max_speed == 0.1 and cfg.workspace_x == (-0.2, 0.1) and cfg.workspace_z == (0.1, 0.7)
    assert cfg.bend_sign == 1.0
    for bad in [{"max_speed": 0}, {"workspace": {"z": [0.7, 0.1]}}, {"bend_sign": 0}, {"pitch_gain": -1},
                {"command_timeout": float("nan")}]:
        with pytest.raises(ValueError):
            TorsoSpeedConfig.from_params(bad)


def test_targets_before_feedback_are_dropped_and_repeated_stamps_repeat_the_command(r1: RobotModel) -> None:
    ctrl = TorsoSpeedController(r1)
    with pytest.raises(TargetError, match="no torso feedback"):
        ctrl.set_target(BENT)
    run = Run(ctrl, BENT)
    assert ctrl.mode == "speed"
    run.ticks(0.5, (0.0, 0.1))
    before = ctrl.velocity
    cmd = ctrl.step(run.t, ctrl.position)            # the same stamp again (simulated clock): same command
    np.testing.assert_array_equal(cmd.velocity, before)
    assert np.max(np.abs(cmd.velocity)) > 0.1


def test_a_torso_lagging_behind_a_moving_command_keeps_its_motion(ctrl: TorsoSpeedController) -> None:
    """The measured torso stops 0.15 rad behind a rising command (a stalled driver): the command waits
    where it is, ahead of it (never re-seeded from it), and the motion goes on once it catches up."""
    run = Run(ctrl, BENT)
    run.ticks(0.5, (0.0, 0.1))                         # rising, perfect tracking
    moving = ctrl.velocity.copy()
    assert np.max(np.abs(moving)) > 0.05
    pitch0 = ctrl.task_state(ctrl.position)[2]
    behind = ctrl.position - 0.15 * np.sign(moving) * (np.abs(moving) > 1e-9)
    held = ctrl.position.copy()
    for _ in range(5):                                 # the torso stays put, not keeping pace: the command waits
        ctrl.set_speed(0.0, 0.1, run.t)
        run.t += DT
        cmd = ctrl.step(run.t, behind, v_measured=np.zeros(4))
    np.testing.assert_allclose(cmd.position, held, atol=1e-12)
    assert ctrl.stats["resyncs"] == 0 and ctrl.stats["paused"] == 5
    z0 = ctrl.task_state(ctrl.position)[1]
    run.ticks(0.5, (0.0, 0.1))                         # caught up: the rise goes on
    assert ctrl.task_state(ctrl.position)[1] - z0 > 0.04
    run.ticks(3.0, (0.0, 0.0))
    assert abs(ctrl.task_state(ctrl.position)[2] - pitch0) < 1e-3     # the pitch latched before is held
    assert ctrl.stats["resyncs"] == 0


def test_a_torso_pushed_against_a_moving_command_is_pulled_back_not_re_seeded(ctrl: TorsoSpeedController) -> None:
    run = Run(ctrl, BENT)
    run.ticks(0.5, (0.0, 0.1))
    moving = ctrl.velocity.copy()
    before = ctrl.position.copy()
    ahead = ctrl.position + 0.15 * np.sign(moving) * (np.abs(moving) > 1e-9)   # pushed ahead of the command
    ctrl.set_speed(0.0, 0.1, run.t)
    cmd = ctrl.step(run.t + DT, ahead)
    assert np.max(np.abs(cmd.position - before)) < 0.01               # the command goes on from its own
    assert ctrl.stats["resyncs"] == 0 and ctrl.stats["paused"] == 0
