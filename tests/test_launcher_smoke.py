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
        [sys.executable, "-m", "deploy.cli", "run", "--config", str(DEMO_TOML), "--env-steps", "2000",
         "--eval-episodes", "2", "--progress", "false", "--run-dir", str(run_dir),
         "--learner-arg=--learning-starts=500"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["completed"] and summary["learner_exit"] == 0
    assert len(summary["eval_returns"]) == 2
    health = summary["health"]
    assert health["env_steps"] >= 1500 and health["grad_steps"] > 500
    png = run_dir / "curves.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    for name in ("actor0", "actor1"):
        report = json.loads((run_dir / f"{name}.json").read_text())
        assert report["steps"] == 1000 and report["dropped"] == 0
        assert len(report["versions_seen"]) > 3, "weights did not update on the actor"
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert lines and {"critic_loss", "actor_loss", "alpha", "utd_achieved", "policy_lag"} <= set(lines[-1])
    for log in run_dir.glob("*.log"):
        text = log.read_text()
        assert " ERROR " not in text and "Traceback" not in text, f"{log.name}:\n{text[-2000:]}"
    assert "eval return" in out.stdout and "curves.png" in out.stdout
