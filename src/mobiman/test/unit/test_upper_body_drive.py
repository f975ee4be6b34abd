"""mobiman.chassis.upper_body_drive: which upper-body groups a controller drives, is late for, or leaves to
the driver, from when each command stream last arrived."""
from __future__ import annotations

import pytest

from mobiman.chassis.upper_body_drive import DRIVEN, HELD, LATE, DriveWatch


def states(watch: DriveWatch, now: float) -> dict:
    return {c.group: (c.before, c.state, c.fed_changed) for c in watch.update(now)}


def test_a_stream_goes_late_then_held_and_a_command_drives_it_again() -> None:
    w = DriveWatch(["torso", "left_arm"], lapse=0.05, timeout=0.2)
    assert states(w, 0.0) == {"torso": (None, HELD, True), "left_arm": (None, HELD, True)}   # never commanded
    w.commanded("torso", 1.0)
    assert states(w, 1.01) == {"torso": (HELD, DRIVEN, True)}
    assert states(w, 1.045) == {}                                  # within 0.05 s: still driven
    assert states(w, 1.06) == {"torso": (DRIVEN, LATE, True)}      # late: fed no more
    assert w.lapses == {"torso": 1, "left_arm": 0}
    assert w.in_state(LATE) == ["torso"] and w.in_state(HELD) == ["left_arm"]
    assert states(w, 1.21) == {"torso": (LATE, HELD, False)}       # held by the driver: still not fed
    w.commanded("torso", 1.3)
    assert states(w, 1.3) == {"torso": (HELD, DRIVEN, True)}
    w.commanded("torso", 1.36)                                     # a short lapse, over before it is seen
    assert states(w, 1.37) == {}
    assert states(w, 1.42) == {"torso": (DRIVEN, LATE, True)}
    w.commanded("torso", 1.43)
    assert states(w, 1.43) == {"torso": (LATE, DRIVEN, True)}
    assert w.lapses["torso"] == 2


def test_the_settings_and_groups_are_checked() -> None:
    with pytest.raises(ValueError):
        DriveWatch(["torso"], lapse=0.3, timeout=0.2)
    with pytest.raises(ValueError):
        DriveWatch(["torso"], lapse=0.0, timeout=0.2)
    with pytest.raises(KeyError):
        DriveWatch(["torso"], lapse=0.05, timeout=0.2).commanded("head", 0.0)
