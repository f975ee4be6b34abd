"""Remote-control manager core: stick mapping, dead band, modes, failsafe, gestures."""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from mobiman.remote.rc_manager import ZERO, RcConfig, RcManager, Sticks, Twist, dead_band

CONFIG = Path(__file__).resolve().parents[2] / "config" / "r1_control_manager.yaml"
DT = 0.02          # /controller at 50 Hz


@pytest.fixture()
def params() -> dict:
    return yaml.safe_load(CONFIG.read_text())


def core(params: dict) -> dict:
    """The core's part of the node's parameters (not its topics and rate)."""
    return {k: v for k, v in params.items() if k in {f.name for f in dataclasses.fields(RcConfig)}}


@pytest.fixture()
def rc(params) -> RcManager:
    cfg, notes = RcConfig.from_params(core(params)).clamped()
    assert notes == []
    return RcManager(cfg)


class Clock:
    def __init__(self) -> None:
        self.t = 100.0


def feed(rc: RcManager, clock: Clock, sticks: tuple[float, float, float, float], mode: int = 2,
         seconds: float = DT) -> list:
    """Samples every DT for `seconds`, a tick after each; the outputs of the ticks."""
    out = []
    n = max(1, int(round(seconds / DT)))
    for _ in range(n):
        clock.t += DT
        rc.on_signal(Sticks(*sticks, mode), clock.t)
        out.append(rc.step(clock.t, 0.0))
    return out


def engaged(rc: RcManager) -> Clock:
    clock = Clock()
    feed(rc, clock, (0.0, 0.0, 0.0, 0.0))
    return clock


def twist(rc: RcManager, clock: Clock, lx=0.0, ly=0.0, rx=0.0, ry=0.0) -> Twist:
    return feed(rc, clock, (lx, ly, rx, ry))[-1].twist


# -- mapping -------------------------------------------------------------------------------------
def test_forward_left_and_turn_left_signs_and_full_scale(rc) -> None:
    clock = engaged(rc)
    assert twist(rc, clock, ly=1.0) == Twist(1.0, 0.0, 0.0)            # stick up: forward at max
    assert twist(rc, clock, ly=-1.0) == Twist(-1.0, 0.0, 0.0)
    assert twist(rc, clock, lx=-1.0) == Twist(0.0, 0.5, 0.0)           # stick left: +y (left)
    assert twist(rc, clock, lx=1.0) == Twist(0.0, -0.5, 0.0)
    assert twist(rc, clock, rx=-1.0) == Twist(0.0, 0.0, 1.0)           # right stick left: CCW
    assert twist(rc, clock, rx=1.0) == Twist(0.0, 0.0, -1.0)
    assert twist(rc, clock, ry=1.0) == ZERO                            # right y drives nothing
    t = twist(rc, clock, lx=0.5, ly=0.5, rx=0.5)
    s = (0.5 - 0.05) / 0.95
    assert (t.linear_x, t.linear_y, t.angular_z) == pytest.approx((s * 1.0, -s * 0.5, -s * 1.0))


def test_out_of_range_sticks_are_clamped_nan_dropped(rc) -> None:
    clock = engaged(rc)
    assert twist(rc, clock, ly=3.0) == Twist(1.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        rc.on_signal(Sticks(0.0, float("nan"), 0.0, 0.0, 2), clock.t)
    assert rc.signal.left_y == 3.0          # the bad sample changed nothing
    assert rc.step(clock.t, 0.0).twist == Twist(1.0, 0.0, 0.0)


def test_dead_band_is_continuous_and_keeps_full_range() -> None:
    band = 0.05
    assert dead_band(0.05, band) == 0.0 and dead_band(-0.049, band) == 0.0
    assert dead_band(1.0, band) == 1.0 and dead_band(-1.0, band) == -1.0
    xs = np.linspace(-1.0, 1.0, 40001)
    ys = np.array([dead_band(x, band) for x in xs])
    assert np.max(np.abs(np.diff(ys))) <= (xs[1] - xs[0]) / (1 - band) + 1e-12   # Lipschitz 1/(1-band): no step
    assert np.all(np.diff(ys) >= 0.0)                                            # monotonic
    assert dead_band(0.05 + 1e-9, band) == pytest.approx(0.0, abs=1e-8)


def test_max_speeds_clamped_to_chassis_limits_and_bad_config_refused(params) -> None:
    params["mapping"] = {"linear_x": {"max_speed": 2.0}}          # the rest of linear_x: its defaults
    cfg, notes = RcConfig.from_params(core(params)).clamped()
    assert cfg.mapping["linear_x"].max_speed == 1.5 and "clamped" in notes[0]
    for key, value in (("dead_band", 0.7), ("corner_threshold", 0.01), ("stale_timeout", 0.0)):
        with pytest.raises(ValueError):
            RcConfig.from_params(core({**params, key: value}))
    with pytest.raises(ValueError):
        RcConfig.from_params(core({**params, "mapping": {"linear_x": {"axis": "left_z"}}}))
    with pytest.raises(ValueError):
        RcConfig.from_params(core({**params, "mapping": {"linear_x": {"sign": 2}}}))
    bad = dict(params["gestures"]["fold"], hold_s=0.1)
    with pytest.raises(ValueError):
        RcConfig.from_params(core({**params, "gestures": {"fold": bad}}))
    bad = dict(params["gestures"]["fold"], torso={"positions": [1.0, 2.0], "velocities": [0.1]})
    with pytest.raises(ValueError):
        RcConfig.from_params(core({**params, "gestures": {"fold": bad}}))


# -- modes and failsafe --------------------------------------------------------------------------
def test_host_mode_publishes_nothing_at_all(rc) -> None:
    clock = Clock()
    outs = feed(rc, clock, (0.0, 1.0, 0.5, 0.0), mode=5, seconds=2.0)
    assert all(o.twist is None and o.targets == () for o in outs)
    # gesture poses in mode 5 do nothing either
    outs = feed(rc, clock, (-1.0, -1.0, 1.0, -1.0), mode=5, seconds=3.0)
    assert all(o.twist is None and o.targets == () for o in outs)


def test_handover_to_host_sends_one_zero_then_silence(rc) -> None:
    clock = engaged(rc)
    assert twist(rc, clock, ly=1.0).linear_x == 1.0
    outs = feed(rc, clock, (0.0, 1.0, 0.0, 0.0), mode=5, seconds=1.0)
    assert outs[0].twist == ZERO
    assert all(o.twist is None for o in outs[1:])


def test_other_modes_and_stale_or_missing_signal_park(rc) -> None:
    clock = Clock()
    assert rc.step(clock.t, None).twist == ZERO                         # nothing received yet
    for mode in (0, 1, 3, 4, 6, 255):
        assert all(o.twist == ZERO for o in feed(rc, clock, (0.0, 1.0, 1.0, 0.0), mode=mode))
    clock = engaged(rc)
    assert twist(rc, clock, ly=1.0).linear_x == 1.0
    assert rc.step(clock.t, 0.49).twist.linear_x == 1.0                 # within stale_timeout
    assert rc.step(clock.t, 0.51).twist == ZERO                         # stale: park
    assert "stale" in rc.state
    # stale from mode 5 parks too (the host's commands are overridden by zeros: the brief's failsafe)
    feed(rc, clock, (0.0, 0.0, 0.0, 0.0), mode=5)
    assert rc.step(clock.t, 0.6).twist == ZERO


def test_sticks_must_rest_before_driving_after_mode_switch_and_after_stale(rc) -> None:
    clock = Clock()
    feed(rc, clock, (0.0, 0.0, 0.0, 0.0), mode=5)
    outs = feed(rc, clock, (0.0, 1.0, 0.0, 0.0), mode=2, seconds=1.0)   # switched with the stick pushed
    assert all(o.twist == ZERO for o in outs) and "rest" in rc.state
    feed(rc, clock, (0.0, 0.03, 0.0, 0.0))                              # within the dead band: at rest
    assert twist(rc, clock, ly=1.0).linear_x == 1.0
    rc.step(clock.t, 5.0)                                               # stale
    assert twist(rc, clock, ly=1.0) == ZERO
    feed(rc, clock, (0.0, 0.0, 0.0, 0.0))
    assert twist(rc, clock, ly=1.0).linear_x == 1.0


# -- gestures ------------------------------------------------------------------------------------
FOLD = (-1.0, -1.0, 1.0, -1.0)        # left stick down-left, right stick down-right
STAND = (-1.0, 1.0, 1.0, 1.0)


def fired(outs) -> list:
    return [t for o in outs for t in o.targets]


def test_gesture_fires_once_after_the_hold_with_the_yaml_targets(rc, params) -> None:
    clock = engaged(rc)
    outs = feed(rc, clock, FOLD, seconds=1.4)
    assert fired(outs) == [] and all(o.twist == ZERO for o in outs)     # corners: chassis parked
    outs = feed(rc, clock, FOLD, seconds=3.0)                           # held on: exactly once
    targets = fired(outs)
    assert sorted(t.group for t in targets) == ["left_arm", "right_arm", "torso"]
    torso = next(t for t in targets if t.group == "torso")
    assert torso.positions == (1.74, -2.7, -0.96, 0.0)
    assert torso.velocities == tuple(params["gestures"]["fold"]["torso"]["velocities"])
    assert all(o.twist == ZERO for o in outs)
    assert rc.fired_count == 1


def test_round_gate_diagonal_counts_as_a_corner(rc) -> None:
    clock = engaged(rc)
    d = math.sqrt(0.5)
    assert fired(feed(rc, clock, (-d, d, d, d), seconds=1.6))[0].positions == (0.0, 0.0, 0.0, 0.0)   # stand


def test_passing_through_the_corners_does_not_fire(rc) -> None:
    clock = engaged(rc)
    outs = []
    for _ in range(5):         # 1 s in the corners, one sample out, again: never 1.5 s in a row
        outs += feed(rc, clock, FOLD, seconds=1.0)
        outs += feed(rc, clock, (-1.0, -0.3, 1.0, -1.0))                # left stick leaves its corner
    assert fired(outs) == []
    # one stick alone in its corner drives as usual (backward and left)
    t = feed(rc, clock, (-1.0, -1.0, 0.0, 0.0), seconds=2.0)[-1].twist
    assert t == Twist(-1.0, 0.5, 0.0)


def test_after_a_gesture_no_driving_until_sticks_rest_and_refire_needs_release(rc) -> None:
    clock = engaged(rc)
    assert len(fired(feed(rc, clock, STAND, seconds=1.6))) == 1
    # sticks leave the corners but are still deflected: still parked
    assert all(o.twist == ZERO for o in feed(rc, clock, (0.0, 1.0, 0.0, 0.0), seconds=0.5))
    feed(rc, clock, (0.0, 0.0, 0.0, 0.0))
    assert twist(rc, clock, ly=1.0).linear_x == 1.0
    # a second hold fires again
    assert len(fired(feed(rc, clock, STAND, seconds=1.6))) == 1


def test_no_gesture_before_the_sticks_rested_in_mode_2(rc) -> None:
    clock = Clock()
    feed(rc, clock, FOLD, mode=5, seconds=0.5)
    outs = feed(rc, clock, FOLD, mode=2, seconds=3.0)      # switch flipped with the gesture held
    assert fired(outs) == [] and all(o.twist == ZERO for o in outs)


def test_gesture_aborted_by_mode_change_or_stale(rc) -> None:
    clock = engaged(rc)
    feed(rc, clock, FOLD, seconds=1.0)
    assert rc.step(clock.t, 2.0).twist == ZERO                # stale in the middle of the hold
    feed(rc, clock, (0.0, 0.0, 0.0, 0.0))
    outs = feed(rc, clock, FOLD, seconds=1.0)
    outs += feed(rc, clock, FOLD, mode=3)
    outs += feed(rc, clock, (0.0, 0.0, 0.0, 0.0))
    outs += feed(rc, clock, FOLD, seconds=1.0)
    assert fired(outs) == []
