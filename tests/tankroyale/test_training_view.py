"""tank-train's live table, its curves and its summary show how the rounds were fought (hit rate, damage dealt
and taken per round) per opponent, and the learner's alpha and entropy; old columns and lines stay."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
from rich.console import Console

from deploy.plot import read_metrics
from deploy.tank.battle import RoundRecord
from deploy.tank.curves import figure, rolling, rolling_ratio
from deploy.tank.progress import BattleView
from deploy.tank.train import BattleConfig, TankTrainer
from protocol.health import Health

# (opponent, won, shots, hits, dealt, taken, ending)
ROUNDS = [("SittingDuck", True, 10, 8, 40.0, 0.0, "destroyed"), ("SpinBot", False, 12, 3, 12.0, 100.0, "lost"),
          ("SittingDuck", True, 6, 2, 8.0, 0.0, "outlasted"), ("SpinBot", True, 20, 10, 101.2, 48.0, "destroyed")]


def trainer(tmp_path: Path) -> TankTrainer:
    """A trainer that has played ROUNDS (and one round of an older log, without fight fields), and whose
    learner reported alpha and entropy; nothing is started."""
    t = TankTrainer(BattleConfig(run_dir=str(tmp_path / "run"), progress=False), None, [], [])
    old = RoundRecord(0, 0, 1, "SpinBot", False, 0.0, 50.0, 300, 0.0).__dict__
    old = {k: v for k, v in old.items() if k not in ("shots", "hits", "dealt", "taken", "ending")}
    t.log.path.write_text(json.dumps(old) + "\n")
    t.log = type(t.log)(t.log.path)  # resumed: the old row is read back
    for i, (name, won, shots, hits, dealt, taken, ending) in enumerate(ROUNDS):
        t.log.add(RoundRecord(0, i, 1, name, won, 10.0, 5.0, 400, 0.0, shots, hits, dealt, taken, ending))
    t._health.latest = Health(losses={"alpha": 0.25, "entropy": -3.5, "critic_loss": 1.0})
    (t.dir / "metrics.jsonl").write_text("".join(json.dumps({"steps": s, "alpha": a, "entropy": e}) + "\n"
                                                 for s, a, e in ((10, 1.0, -1.0), (20, 0.5, -2.0), (30, 0.25, -3.5))))
    return t


def render(view: BattleView) -> str:
    out = Console(file=io.StringIO(), width=250)
    out.print(view.table())
    return out.file.getvalue()  # type: ignore[attr-defined]


def test_the_live_table_shows_hit_rate_damage_alpha_and_entropy(tmp_path: Path) -> None:
    text = render(BattleView(trainer(tmp_path), enabled=False))
    for column in ("win rate", "last 50", "mean score", "mean turns", "hit rate", "dealt", "taken", "destroyed"):
        assert column in text
    assert "alpha 0.25  entropy -3.50" in text
    duck = next(line for line in text.splitlines() if "SittingDuck" in line)
    assert "0.62" in duck and "24.0" in duck and "0.0" in duck  # 10 of 16 shots hit, (40 + 8) / 2 dealt
    spin = next(line for line in text.splitlines() if "SpinBot" in line)
    assert "0.41" in spin and "56.6" in spin and "74.0" in spin  # the old row counts for no fight figure


def test_the_summary_and_summary_json_carry_the_fight_and_the_learner(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    t = trainer(tmp_path)
    assert t._summary(True) == 0
    printed = capsys.readouterr().out
    assert "win rate 1.00 overall" in printed and "hit rate 0.62" in printed and "alpha 0.25  entropy -3.50" in printed
    summary = json.loads((t.dir / "summary.json").read_text())
    assert (summary["alpha"], summary["entropy"]) == (0.25, -3.5)
    duck = summary["by_opponent"]["SittingDuck"]
    assert duck["hit_rate"] == pytest.approx(10 / 16) and duck["mean_dealt"] == 24.0 and duck["mean_taken"] == 0.0
    assert duck["destroyed_rate"] == 0.5 and duck["win_rate"] == 1.0 and summary["last50"]["SpinBot"]["fought"] == 2
    assert (t.dir / "tank-curves.png").stat().st_size > 0


def test_the_curves_plot_the_fight_per_opponent_and_alpha_and_entropy(tmp_path: Path) -> None:
    t = trainer(tmp_path)
    fig = figure(t.log.rounds, window=2, metrics=read_metrics(t.dir / "metrics.jsonl"))
    axes = fig.axes  # the six panels, then the entropy's twin axis
    ax_win, ax_hit, ax_dealt, ax_taken, ax_learner, ax_entropy = axes[0], axes[2], axes[3], axes[4], axes[5], axes[6]
    assert [line.get_label() for line in ax_hit.lines] == ["SittingDuck", "SpinBot"]
    spin_hit = list(ax_hit.lines[1].get_ydata())
    assert spin_hit == pytest.approx(rolling_ratio([3.0, 10.0], [12.0, 20.0], 2))
    assert list(ax_hit.lines[1].get_xdata()) == [2, 3]  # the SpinBot rounds with a fight: its 2nd and 3rd
    assert list(ax_dealt.lines[0].get_ydata()) == pytest.approx(rolling([40.0, 8.0], 2))
    assert list(ax_taken.lines[1].get_ydata()) == pytest.approx(rolling([100.0, 48.0], 2))
    assert len(ax_win.lines) == 2 and len(ax_win.lines[1].get_ydata()) == 3  # every round, the old one too
    assert list(ax_learner.lines[0].get_ydata()) == [1.0, 0.5, 0.25] and ax_learner.get_yscale() == "log"
    assert list(ax_entropy.lines[0].get_ydata()) == [-1.0, -2.0, -3.5]
    assert math.isnan(rolling_ratio([0.0], [0.0], 2)[0])
