"""Lockstep: the physics waits for a bus's driver frames, and lets a silent bus go."""
import pytest

from r1_sim.lockstep import Lockstep


def make() -> Lockstep:
    return Lockstep({"arm": 100.0, "chassis": 50.0}, periods=2.5, timeout=0.5)


def test_free_running_until_the_driver_speaks():
    ls = make()
    assert ls.waiting_for(sim_time=10.0, wall_time=0.0) == []


def test_waits_for_a_bus_late_by_its_own_window():
    ls = make()
    ls.heard("arm", 1.0)
    ls.heard("chassis", 1.0)
    assert ls.waiting_for(1.024, 0.0) == []                  # arm window 25 ms
    assert ls.waiting_for(1.026, 0.0) == ["arm"]
    ls.heard("arm", 1.026)
    assert ls.waiting_for(1.049, 0.1) == []                  # chassis window 50 ms
    assert ls.waiting_for(1.052, 0.1) == ["arm", "chassis"]
    assert ls.waits == 2


def test_a_silent_bus_is_let_go_after_the_wall_timeout_and_rejoins_when_it_speaks():
    ls = make()
    ls.heard("arm", 0.0)
    assert ls.waiting_for(0.03, wall_time=5.0) == ["arm"]
    assert ls.waiting_for(0.03, wall_time=5.4) == ["arm"]
    assert ls.waiting_for(0.03, wall_time=5.6) == []
    assert ls.let_go == ["arm"] and ls.silent == {"arm"}
    assert ls.waiting_for(3.0, wall_time=6.0) == []          # runs on without it
    ls.heard("arm", 3.0)
    assert ls.silent == set()
    assert ls.waiting_for(3.03, wall_time=7.0) == ["arm"]


def test_frames_on_unknown_buses_are_ignored():
    ls = make()
    ls.heard("can9", 0.0)
    assert ls.waiting_for(5.0, 0.0) == []


@pytest.mark.parametrize("kwargs", [dict(periods=0, timeout=1), dict(periods=1, timeout=0)])
def test_bad_parameters_rejected(kwargs):
    with pytest.raises(ValueError):
        Lockstep({"arm": 100.0}, **kwargs)
    with pytest.raises(ValueError):
        Lockstep({"arm": 0.0}, periods=1, timeout=1)
