"""The main job, small: `saclstm run` on the demo config for about 2,000 env steps, through the real launcher."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from deploy.launcher import DEMO_TOML
from tests.procs import ROOT

pytestmark = pytest.mark.slow


def test_short_demo_run_learns_end_to_end(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    out = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "run", "--config", str(DEMO_TOML), "--env-steps", "1200",
         "--eval-episodes", "2", "--progress", "false", "--run-dir", str(run_dir),
         "--learner-arg=--learning-starts=300"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["completed"] and summary["learner_exit"] == 0
    assert len(summary["eval_returns"]) == 2
    health = summary["health"]
    assert health["env_steps"] >= 900 and health["grad_steps"] > 300
    png = run_dir / "curves.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    for name in ("actor0", "actor1"):
        report = json.loads((run_dir / f"{name}.json").read_text())
        assert report["steps"] == 600 and report["dropped"] == 0
        assert len(report["versions_seen"]) > 3, "weights did not update on the actor"
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert lines and {"critic_loss", "actor_loss", "alpha", "utd_achieved", "policy_lag"} <= set(lines[-1])
    for log in run_dir.glob("*.log"):
        text = log.read_text()
        assert " ERROR " not in text and "Traceback" not in text, f"{log.name}:\n{text[-2000:]}"
    assert "eval return" in out.stdout and "curves.png" in out.stdout


KILL_TOML = """
[run]
actors = 2
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
save_interval = 20
threads = 1

[actor]
env = "Pendulum-v1"
obs_mask = [2]
flush_steps = 16
"""


def test_sigkill_of_the_launcher_leaves_no_process_and_a_loadable_checkpoint(tmp_path: Path) -> None:
    """`kill -9` of `saclstm run` mid-training: the kernel sends each child SIGTERM (protocol/lifeline.py),
    so the learner writes its final checkpoint, the actors say bye, and nothing of the run is left."""
    import os
    import signal
    import time

    from protocol.checkpoint import decode_checkpoint
    from tests.procs import descendants, kill_all, running

    run_dir, config = tmp_path / "run", tmp_path / "run.toml"
    config.write_text(KILL_TOML)
    live = run_dir / "checkpoints" / "live.sacl"
    launcher = subprocess.Popen([sys.executable, "-m", "deploy.cli", "run", "--config", str(config),
                                 "--run-dir", str(run_dir)], cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    tree: dict[int, int] = {}
    try:
        deadline = time.monotonic() + 120
        while not (live.exists() and len(list(run_dir.glob("actor*.log"))) == 2) and time.monotonic() < deadline:
            assert launcher.poll() is None, "the launcher ended early"
            time.sleep(0.2)
        assert live.exists(), "no checkpoint within 120 s"
        tree = descendants(launcher.pid)
        assert len(tree) >= 4, f"learner, saver, two actors expected under the launcher: {tree}"
        launcher.send_signal(signal.SIGKILL)
        launcher.wait(10)
        killed_at = time.monotonic()
        while running(tree) and time.monotonic() - killed_at < 20:
            time.sleep(0.1)
        took = time.monotonic() - killed_at
        assert not running(tree), f"still running {took:.1f} s after the launcher died: {running(tree)}"
        print(f"every process of the run ended {took:.1f} s after the launcher's SIGKILL")
        meta, _ = decode_checkpoint(live.read_bytes())
        learner_log = (run_dir / "learner.log").read_text()
        assert "final checkpoint written" in learner_log, learner_log[-2000:]
        assert meta["grad_steps"] > 0
        for name in ("actor0", "actor1"):
            assert "stopped:" in (run_dir / f"{name}.log").read_text(), f"{name} did not stop the SIGTERM way"
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait(10)
        kill_all(tree)
