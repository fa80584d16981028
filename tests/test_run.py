"""A run's lifecycle (deploy/run.py, children.py, watch.py): the part every kind of run shares, and the
arrows between the packages that keep it in one place."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgpack
import pytest
import zmq

from deploy.children import Children, free_port
from deploy.progress import LiveView
from deploy.run import Run
from deploy.watch import HealthWatch
from protocol.health import HealthReader
from tests.procs import ROOT

STUBBORN = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", os.environ.get("SACLSTM_PARENT_PID"), flush=True)
while True:
    time.sleep(0.1)
"""


def wait_for(condition, timeout: float, what: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {timeout:.0f} s"
        time.sleep(0.05)  # polling a file another process writes: nothing to wait on but time


def test_children_hold_a_lifeline_and_one_that_ignores_sigterm_is_killed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "stubborn.py").write_text(STUBBORN)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    children = Children(tmp_path)
    try:
        children.start("s", "stubborn")
        wait_for(lambda: "ready" in children.tail("s"), 30, "start")
        assert children.tail("s") == f"ready {os.getpid()}"  # asked to hold a lifeline to this process
        assert children.exited("s") is None and children.exited("never started") is None
        codes = children.stop(["s"], timeout=0.5)
        assert codes == {"s": -signal.SIGKILL} and children.exited("s") == -signal.SIGKILL
        assert "s did not stop within 0 s; killing it" in capsys.readouterr().err
    finally:
        for proc in children.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_the_health_watch_keeps_the_newest_record_and_hands_back_what_came(tmp_path: Path) -> None:
    from tests.test_health import WIRE

    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    pub.bind(endpoint)
    said: list[str] = []
    watch = HealthWatch(endpoint, HealthReader(said.append), passes=True)
    try:
        got: list[tuple[str, dict]] = []
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:  # a SUB joins late: publish until one arrives
            pub.send_multipart([b"metrics", msgpack.packb({"steps": 0})])
            got = watch.poll(100)
        assert got and got[0] == ("metrics", {"steps": 0}) and watch.latest.grad_steps == 0
        pub.send_multipart([b"health", msgpack.packb({**WIRE, "grad_steps": "x"})])
        pub.send_multipart([b"health", msgpack.packb(WIRE)])
        pub.send_multipart([b"metrics", msgpack.packb({"steps": 1})])
        got = []
        while len(got) < 2 and time.monotonic() < deadline:
            got += watch.poll(100)
        assert [topic for topic, _ in got] == ["health", "metrics"] and got[0][1] == WIRE
        assert watch.latest.grad_steps == WIRE["grad_steps"] and watch.reader.skipped == 1
        assert len(said) == 1 and "grad_steps" in said[0]
    finally:
        watch.close()
        pub.close(0)
        ctx.term()


class Quiet(LiveView):
    def render(self) -> str:
        return ""

    def line(self) -> str:
        return ""


class FirstHealth(Run):
    """A third kind of run, whole: a learner and nothing else, done at its first health map. Its config and
    its front end are the few lines below; starting, watching, stopping and summarising are Run's."""

    def play(self) -> bool:
        with Quiet(enabled=False) as view:
            return self.watch_until_done(view)

    def done(self) -> bool:
        return self.health.uptime_s > 0

    def _summary(self, ok: bool) -> int:
        self.write_summary(["first health"], {"completed": ok, "learner_exit": self.learner_exit,
                                              "uptime_s": self.health.uptime_s})
        return 0 if ok and self.learner_exit == 0 else 1


@pytest.mark.slow
def test_a_third_kind_of_run_is_a_front_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    eps = {k: f"tcp://127.0.0.1:{free_port()}" for k in ("ingest", "weights", "metrics")}
    run = FirstHealth(tmp_path / "run", None, ["--threads", "1"], eps, tmp_path / "run" / "live.sacl")
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        assert run.run() == 0
    finally:
        signal.signal(signal.SIGINT, handlers[0])
        signal.signal(signal.SIGTERM, handlers[1])
        run.children.stop(timeout=10)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["completed"] and summary["learner_exit"] == 0 and summary["uptime_s"] > 0
    assert "first health" in capsys.readouterr().out
    assert "learner stopped after" in (tmp_path / "run" / "learner.log").read_text()  # SIGTERM: its own stop


def test_nothing_under_actor_reaches_up_to_deploy() -> None:
    """The game and the daemons are run by deploy/, never the other way: no import of deploy and no child
    started as `python -m deploy` from under actor/ (the tank's launchers live in deploy/tank/)."""
    up = re.compile(r"^\s*(from|import)\s+deploy\b|[\"']deploy[\"']", re.M)
    found = [str(p.relative_to(ROOT)) for p in (ROOT / "actor").rglob("*.py") if up.search(p.read_text())]
    assert not found, f"actor/ reaches up to deploy/: {found}"


def test_the_actor_daemon_runs_tankroyale_without_importing_the_game() -> None:
    """TankRoyale-v0 is registered by name (actor/envs): the daemon knows the id, gymnasium loads the game
    only when one is made."""
    code = ("import sys, gymnasium, actor.daemon; assert not [m for m in sys.modules if m.startswith('actor.bots')], "
            "'the daemon imported the game'; env = gymnasium.make('TankRoyale-v0', opponent='SpinBot'); "
            "print(type(env.unwrapped).__name__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "TankRoyaleEnv"
