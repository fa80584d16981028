"""protocol/lifeline.py with real processes: a parent killed by SIGKILL takes its children with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.procs import ROOT, descendants, kill_all, running

# The middle process: starts one child the way a spawner of ours does, prints its pid, then waits to be killed.
PARENT = """
import subprocess, sys, time
from protocol.lifeline import child_env, preexec
kind, out = sys.argv[1], sys.argv[2]
if kind == "python":
    child = subprocess.Popen([sys.executable, "-c", CHILD, out], env=child_env())
elif kind == "program":
    child = subprocess.Popen(["sleep", "60"], preexec_fn=preexec())
else:  # "race": the child holds its lifeline only after this process is gone
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.0)\\n" + CHILD, out], env=child_env())
    sys.exit(0)
print(child.pid, flush=True)
time.sleep(60)
"""

# The child: on SIGTERM it notes that it stopped the orderly way, then exits.
CHILD = """
import os, signal, sys, time
from protocol.lifeline import hold
out = sys.argv[1]
open(out + ".pid", "w").write(str(os.getpid()))
signal.signal(signal.SIGTERM, lambda *_: (open(out, "w").write("sigterm"), sys.exit(0)))
held = hold()
open(out + ".held", "w").write(str(held))
time.sleep(60)
"""


def start_parent(kind: str, out: Path) -> subprocess.Popen:
    code = f"CHILD = {CHILD!r}\n{PARENT}"
    return subprocess.Popen([sys.executable, "-c", code, kind, str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)


def kill_child(out: Path) -> None:
    """The test's own cleanup, pass or fail: the child may be an orphan by now, not ours to wait for; it is
    killed only if its command line still names this test's file (a reused pid is someone else's)."""
    try:
        pid = int(Path(f"{out}.pid").read_text())
        if str(out).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
            os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError):
        pass


def wait_until(condition, timeout: float, what: str) -> float:
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < timeout, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.05)
    return time.monotonic() - start


def test_a_child_gets_sigterm_when_its_parent_is_killed(tmp_path: Path) -> None:
    out = tmp_path / "child"
    parent = start_parent("python", out)
    tree: dict[int, int] = {}
    try:
        wait_until(lambda: Path(f"{out}.held").exists(), 30, "the child to hold its lifeline")
        assert Path(f"{out}.held").read_text() == "True"
        tree = descendants(parent.pid)
        parent.kill()
        parent.wait(10)
        took = wait_until(lambda: not running(tree), 10, "the child to end")
        assert out.read_text() == "sigterm", "the child did not stop through its SIGTERM handler"
        assert took < 5
    finally:
        parent.kill()
        parent.wait(10)
        kill_all(tree)
        kill_child(out)


def test_a_parent_that_died_before_the_child_held_on_still_ends_it(tmp_path: Path) -> None:
    """The race: the parent is gone before the child's prctl, so the kernel will never signal; hold() sees the
    child was reparented and raises the signal itself."""
    out = tmp_path / "child"
    parent = start_parent("race", out)
    try:
        assert parent.wait(30) == 0
        wait_until(out.exists, 30, "the orphaned child to stop")
        assert out.read_text() == "sigterm"
    finally:
        kill_child(out)


def test_a_program_that_cannot_call_hold_is_bound_by_preexec(tmp_path: Path) -> None:
    parent = start_parent("program", tmp_path / "unused")
    tree: dict[int, int] = {}
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        tree = {p: s for p, s in descendants(parent.pid).items() if p == pid}
        assert tree, "the program did not start"
        parent.kill()
        parent.wait(10)
        wait_until(lambda: not running(tree), 10, "the program to end")
    finally:
        parent.kill()
        parent.wait(10)
        kill_all(tree)


def test_without_a_spawner_asking_nothing_is_bound(tmp_path: Path) -> None:
    """A daemon started by hand (nohup, systemd) must outlive the shell that started it."""
    env = {k: v for k, v in os.environ.items() if k != "SACLSTM_PARENT_PID"}
    out = subprocess.run([sys.executable, "-c", "from protocol.lifeline import hold; print(hold())"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "False", out.stderr
    env["SACLSTM_PARENT_PID"] = str(os.getpid())
    code = ("import os; from protocol.lifeline import hold; print(hold(), os.environ.get('SACLSTM_PARENT_PID'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "True None", "the variable must not reach the child's own children"


# A stand-in for pytest: starts a learner through tests/procs.py, then waits to be killed.
HARNESS = """
import json, sys, time
from pathlib import Path
from tests.procs import Procs, endpoints
eps = endpoints()
learner = Procs(Path(sys.argv[1])).learner(eps)
print(json.dumps({"pid": learner.pid, "metrics": eps["metrics"]}), flush=True)
time.sleep(120)
"""


def test_a_learner_started_by_procs_stops_when_its_harness_is_killed(tmp_path: Path) -> None:
    """pytest killed by SIGKILL must not leave the learners of its tests training on."""
    import json

    from tests.procs import Watch

    harness = subprocess.Popen([sys.executable, "-c", HARNESS, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                               text=True, start_new_session=True)
    tree: dict[int, int] = {}
    watch = None
    try:
        assert harness.stdout is not None
        started = json.loads(harness.stdout.readline())
        watch = Watch(started["metrics"])
        watch.wait(lambda h: True, 60, "the learner's loop")  # its SIGTERM handler is in place from here
        tree = descendants(harness.pid)
        assert started["pid"] in tree
        harness.kill()
        harness.wait(10)
        took = wait_until(lambda: not running(tree), 15, "the learner to end")
        log = (tmp_path / "learner.log").read_text()
        assert "learner stopped after" in log, f"not the SIGTERM way ({took:.1f} s):\n{log[-1500:]}"
    finally:
        if watch is not None:
            watch.close()
        harness.kill()
        harness.wait(10)
        kill_all(tree)
