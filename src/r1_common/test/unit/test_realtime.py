"""r1_common.realtime: SCHED_FIFO for every thread of the process, or a reason why not."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from r1_common.realtime import policy_name, request_fifo

CHILD = textwrap.dedent("""
    import json, os, threading, time
    from r1_common.realtime import normal_priority, policy_name, request_fifo
    tids = {}
    def idle(key):
        tids[key] = threading.get_native_id()
        time.sleep(1.0)
    before = threading.Thread(target=idle, args=("before",)); before.start()
    while "before" not in tids: time.sleep(0.01)
    err = request_fifo(10)
    after = threading.Thread(target=idle, args=("after",)); after.start()
    while "after" not in tids: time.sleep(0.01)
    moved = {"main": policy_name(0), "before": policy_name(tids["before"]), "after": policy_name(tids["after"])}
    normal_priority()
    back = {k: policy_name(tids[k]) for k in ("before", "after")}
    back["main"] = policy_name(0)
    print(json.dumps({"error": err, **moved, "back": back}))
""")


def test_every_thread_is_moved_or_the_reason_is_given():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[2] / "src"),
                                                       os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=30, check=True)
    got = json.loads(out.stdout)
    if got["error"] is None:
        assert got["main"] == got["before"] == got["after"] == "SCHED_FIFO 10"
        assert set(got["back"].values()) == {"SCHED_OTHER"}     # and normal_priority() undoes it
    else:                       # not permitted here: said so, and nothing half-done
        assert "not permitted" in got["error"] and "normal priority" in got["error"]
        assert got["main"] == got["before"] == got["after"] == "SCHED_OTHER"


def test_zero_asks_for_nothing_and_out_of_range_is_refused():
    before = policy_name()
    assert request_fifo(0) is None
    assert policy_name() == before
    msg = request_fifo(150)
    assert msg is not None and "1..99" in msg
    assert policy_name() == before
