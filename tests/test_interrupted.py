"""Ctrl-C on `saclstm run`, as a user does it: exit 130, and summary.json says `"interrupted": true` (and names the
metrics endpoint it printed at start), whether the signal comes mid-run or while the learner is still starting.
Failed is 1, done is 0 (deploy/run.py; docs/running.md)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.procs import Procs, Watch

pytestmark = pytest.mark.slow

RUN_TOML = """
[run]
actors = 1
env_steps = 1000000
eval_episodes = 0
progress = false

[learner]
hidden = 16
fc = 16
seq_len = 8
overlap = 4
batch_size = 8
learning_starts = 200
threads = 1

[actor]
env = "Pendulum-v1"
obs_mask = [2]
flush_steps = 16
"""


def endpoint_of(procs: Procs, name: str, timeout: float = 60.0) -> str:
    """The metrics endpoint the launcher prints at start."""
    deadline = time.monotonic() + timeout
    while (m := re.search(r"metrics endpoint (tcp://\S+)", procs.log(name))) is None:
        assert time.monotonic() < deadline, f"no metrics endpoint printed within {timeout:.0f} s:\n{procs.log(name)}"
        time.sleep(0.05)  # polling a log another process writes: nothing to wait on but time
    return m.group(1)


def start_run(procs: Procs, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    config, run_dir = tmp_path / "run.toml", tmp_path / "run"
    config.write_text(RUN_TOML)
    return procs.start("run", "deploy", "run", "--config", str(config), "--run-dir", str(run_dir)), run_dir


def test_ctrl_c_mid_run_exits_130_and_the_summary_says_interrupted(procs: Procs, tmp_path: Path) -> None:
    run, run_dir = start_run(procs, tmp_path)
    endpoint = endpoint_of(procs, "run")
    watch = Watch(endpoint)  # what `saclstm monitor <endpoint>` reads: the printed endpoint is the learner's
    try:
        watch.wait(lambda h: h["env_steps"] > 0, 120, "the actor's steps at the learner")
    finally:
        watch.close()
    run.send_signal(signal.SIGINT)
    assert run.wait(180) == 130, procs.log("run")[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["completed"] is False
    assert summary["metrics_endpoint"] == endpoint and summary["health"]["env_steps"] > 0
    assert "interrupted      stopped by Ctrl-C or SIGTERM" in procs.log("run")


def test_ctrl_c_during_start_up_still_writes_the_summary(procs: Procs, tmp_path: Path) -> None:
    run, run_dir = start_run(procs, tmp_path)
    endpoint = endpoint_of(procs, "run")  # printed before the learner is started: it cannot be up yet
    run.send_signal(signal.SIGINT)
    assert run.wait(180) == 130, procs.log("run")[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["completed"] is False
    assert summary["metrics_endpoint"] == endpoint and summary["health"]["env_steps"] == 0
