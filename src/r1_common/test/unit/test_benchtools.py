"""r1_common.benchtools.stop_session: a launched session ends, by SIGINT or else by SIGKILL."""
import subprocess
import sys

from r1_common.benchtools import stop_session

IGNORES_SIGINT = ("import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                  "print('ready', flush=True); time.sleep(60)")


def test_stop_session_kills_a_session_that_ignores_sigint():
    quiet = subprocess.Popen([sys.executable, "-c", IGNORES_SIGINT], stdout=subprocess.PIPE, start_new_session=True)
    assert quiet.stdout.readline().strip() == b"ready"
    stop_session(quiet, timeout=0.5)
    assert quiet.returncode == -9


LISTENS = ("import signal, time; signal.signal(signal.SIGINT, signal.default_int_handler); "
           "print('ready', flush=True); time.sleep(60)")


def test_stop_session_interrupts_a_session_that_listens():
    # its own SIGINT handler: a test run started in the background of a shell inherits SIGINT ignored, and Python
    # then keeps ignoring it (a CI run started with `... &` failed here on that alone)
    polite = subprocess.Popen([sys.executable, "-c", LISTENS], stdout=subprocess.PIPE, start_new_session=True)
    assert polite.stdout.readline().strip() == b"ready"
    stop_session(polite, timeout=10.0)
    assert polite.returncode not in (None, -9)
