"""Ctrl-C on `tank-train` and `tank-eval`, as a user does it: exit 130, and the summary (tank-train's
summary.json, tank-eval's --out) is written and says `"interrupted": true`. Failed is 1, done is 0."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.procs import Procs, Watch
from tests.tankroyale.test_train import SMALL, config
from tests.test_interrupted import endpoint_of

pytest.importorskip("robocode_tank_royale")
pytestmark = pytest.mark.slow


def test_ctrl_c_on_tank_train_exits_130_and_the_summary_says_interrupted(procs: Procs, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    train: subprocess.Popen = procs.start("train", "deploy", "tank-train", "--run-dir", str(run_dir), "--rounds", "1000",
                                          "--config", str(config(tmp_path)), *SMALL)
    endpoint = endpoint_of(procs, "train")
    watch = Watch(endpoint)
    try:
        watch.wait(lambda h: h["env_steps"] > 0, 180, "the tank's steps at the learner")
    finally:
        watch.close()
    train.send_signal(signal.SIGINT)
    assert train.wait(240) == 130, procs.log("train")[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["completed"] is False
    assert summary["metrics_endpoint"] == endpoint
