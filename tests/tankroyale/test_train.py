"""`saclstm tank-train` and `saclstm tank-eval` as a user runs them: real learner, tanks, opponents, our server."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from tests.procs import ROOT

pytest.importorskip("robocode_tank_royale")
pytestmark = pytest.mark.slow
REPEAT = tomllib.loads((ROOT / "deploy" / "tank.toml").read_text())["controls"]["repeat"]  # the shipped form's


def config(tmp: Path) -> Path:
    """deploy/tank.toml with `react` off: every decision spans REPEAT turns, so the books' step count is known
    from the rounds' turns (a shot seen would end a decision early)."""
    text = (ROOT / "deploy" / "tank.toml").read_text()
    assert "react = true" in text
    path = tmp / "tank.toml"
    path.write_text(text.replace("react = true", "react = false"))
    return path

# learning_starts 8: two short rounds are 15-30 decisions (the tank plays at random until it has weights), and
# the learner must have trained to write the checkpoint the rest reads.
SMALL = ["--tanks", "1", "--opponents", "SittingDuck,SpinBot", "--rounds-per-game", "1", "--arena-width", "400",
         "--arena-height", "400", "--tps", "-1", "--turn-timeout-ms", "300", "--progress", "false",
         "--learner-arg=--hidden=16", "--learner-arg=--fc=16", "--learner-arg=--learning-starts=8",
         "--learner-arg=--batch-size=4", "--learner-arg=--save-interval=5", "--learner-arg=--capacity=20000"]


def train(run_dir: Path, rounds: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "deploy", "tank-train", "--run-dir", str(run_dir), "--rounds",
                           str(rounds), "--config", str(config(run_dir.parent)), *SMALL], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_train_plays_its_rounds_checkpoints_resumes_and_evaluates(tmp_path: Path) -> None:
    run = tmp_path / "run"
    out = train(run, 2)
    assert out.returncode == 0, out.stdout + out.stderr
    rounds = [json.loads(line) for line in (run / "rounds.jsonl").read_text().splitlines()]
    assert [r["opponent"] for r in rounds] == ["SittingDuck", "SpinBot"]  # a game each, in turn
    summary = json.loads((run / "summary.json").read_text())
    assert summary["completed"] and summary["rounds"] == 2 and summary["skipped_turns"] == 0
    assert set(summary["by_opponent"]) == {"SittingDuck", "SpinBot"}
    assert (run / "tank-curves.png").stat().st_size > 0 and (run / "checkpoints" / "live.sacl").exists()
    assert "rounds           2" in out.stdout
    # The books, read after the tank's bye: one episode per round, one step per decision (every `repeat` turns
    # after the first, and the round's last turn closes the one in progress).
    tank = next(a for a in summary["health"]["actors"] if a["sender"] == "tank0")
    assert tank["bye"] and tank["sent"] == tank["received"] + tank["rejected"], tank
    assert summary["health"]["episodes"] == 2
    decisions = sum(math.ceil((r["turns"] - 1) / REPEAT) for r in rounds)
    assert tank["received"] + tank["rejected"] + tank["dropped"] == decisions, (tank, rounds)

    again = train(run, 3)  # the same run dir: the learner resumes, the round count goes on
    assert again.returncode == 0, again.stdout + again.stderr
    assert len((run / "rounds.jsonl").read_text().splitlines()) == 3
    log = (run / "learner.log").read_text()
    assert "resuming from" in log
    assert re.search(r"replay: [1-9]\d* transitions restored", log), "a run in pieces trains from the replay it had"

    report = tmp_path / "eval.json"
    ev = subprocess.run([sys.executable, "-m", "deploy", "tank-eval", "--checkpoint",
                         str(run / "checkpoints" / "live.sacl"), "--opponent", "SittingDuck", "--rounds", "1",
                         "--out", str(report), "--config", str(config(tmp_path))], cwd=ROOT, capture_output=True,
                        text=True, timeout=300)
    assert ev.returncode == 0, ev.stdout + ev.stderr
    results = json.loads(report.read_text())["results"]
    assert set(results) == {"saclstm-tank", "constant-action", "RandomBot", "HeadOnBot"}
    for side in results.values():
        assert side["rounds"] == 1 and 0 <= side["ci95"][0] <= side["win_rate"] <= side["ci95"][1] <= 1


def test_bad_battle_config_fails_at_start_with_the_key() -> None:
    out = subprocess.run([sys.executable, "-m", "deploy", "tank-train", "--opponents", "Nobody"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "opponents" in out.stderr and "Nobody" in out.stderr, out.stderr


@pytest.mark.parametrize(("table", "line", "key"), [("controls", 'fixed = "speed=-9"', "fixed"),
                                                    ("controls", 'speed = "sideways"', "speed"),
                                                    ("tank", "kill = \"lots\"", "kill")])
def test_a_bad_tank_table_fails_at_start_before_anything_runs(tmp_path: Path, table: str, line: str, key: str) -> None:
    """A [controls] or [tank] value each tank would refuse stops tank-train at once (exit 2, key and reason),
    before a learner, server or tank has started or a run directory been made."""
    config = tmp_path / "bad.toml"
    config.write_text(f"[{table}]\n{line}\n")
    run_dir = tmp_path / "run"
    out = subprocess.run([sys.executable, "-m", "deploy", "tank-train", "--config", str(config), "--minutes", "1",
                          "--run-dir", str(run_dir)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and f"{key} =" in out.stderr, out.stderr
    assert not run_dir.exists()
