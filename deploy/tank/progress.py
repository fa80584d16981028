"""tank-train's live view: rounds, win rate per opponent, mean score, how the rounds were fought (hit rate,
damage dealt and taken per round), skipped turns, pace and UTD, and the learner's alpha and entropy.

A win rate alone does not say whether the tank learned to shoot or waits for its opponent to die of
inactivity; hit rate and damage do, and alpha and entropy say whether the policy is still exploring."""

from __future__ import annotations

import time
from typing import Any

from rich.console import RenderableType
from rich.table import Table

from deploy.progress import LiveView
from protocol.health import Health


def alpha_entropy(h: Health) -> str:
    """The SAC temperature and the policy's entropy of the learner's last training pass ("-" before one)."""
    alpha, entropy = h.losses.get("alpha"), h.losses.get("entropy")
    return (f"alpha {alpha:.3g}" if alpha is not None else "alpha -") + "  " + (
        f"entropy {entropy:.2f}" if entropy is not None else "entropy -")


class BattleView(LiveView):
    """tank-train's view of the run (deploy/progress.py): the table per opponent, or its status line every 10 s."""

    def __init__(self, trainer: Any, enabled: bool = True) -> None:
        super().__init__(enabled, refresh_per_second=2)
        self.trainer = trainer
        self._started = time.monotonic()

    def status(self) -> str:
        t = self.trainer
        h: Health = t.health
        turns, skipped = t.turns(), t.skipped_turns()
        budget = f"/{t.cfg.rounds}" if t.cfg.rounds else ""
        pct = f" ({100 * skipped / (2 * turns):.2f}% of bot-turns)" if turns else ""
        return (f"rounds {len(t.log.rounds)}{budget}  turns {turns:,}  skipped {skipped}{pct}  "
                f"env steps {h.env_steps:,}  grad {h.grad_steps:,}  "
                f"UTD {h.utd_achieved:.2f}/{h.utd_target:g}  "
                f"{h.updates_per_s:.0f} upd/s  v{h.version}  {alpha_entropy(h)}  "
                f"{time.monotonic() - self._started:.0f} s")

    def table(self) -> Table:
        table = Table(title=self.status(), title_justify="left", caption="hit rate, damage dealt and taken per "
                      "round, and destroyed (the share of wins won by destroying the opponent): last 50 rounds",
                      caption_justify="left")
        for col in ("opponent", "rounds", "win rate", "last 50", "mean score", "mean turns", "hit rate", "dealt",
                    "taken", "destroyed"):
            table.add_column(col, justify="right" if col != "opponent" else "left")
        recent = self.trainer.log.by_opponent(last=50)
        for name, v in self.trainer.log.by_opponent().items():
            r = recent[name]
            table.add_row(name, f"{v['rounds']:.0f}", f"{v['win_rate']:.2f}", f"{r['win_rate']:.2f}",
                          f"{v['mean_score']:.1f}", f"{v['mean_turns']:.0f}", *fought(r))
        return table

    def render(self) -> RenderableType:
        return self.table()

    def line(self) -> str:
        per = "  ".join(f"{n} {v['win_rate']:.2f} of {v['rounds']:.0f} (hit rate {fought(v)[0]}, "
                        f"dealt {fought(v)[1]}, taken {fought(v)[2]})"
                        for n, v in self.trainer.log.by_opponent(last=50).items())
        return f"{self.status()}  win rate (last 50): {per or '-'}"

    def update(self) -> None:
        self.refresh()


def fought(v: dict[str, float]) -> tuple[str, str, str, str]:
    """Hit rate, damage dealt and taken per round, share of wins destroyed; "-" where no round was counted."""
    if not v.get("fought"):
        return "-", "-", "-", "-"
    hit = f"{v['hit_rate']:.2f}" if v["shots"] else "-"
    won = v["destroyed_rate"] + v["outlasted_rate"] > 0
    return hit, f"{v['mean_dealt']:.1f}", f"{v['mean_taken']:.1f}", f"{v['destroyed_rate']:.2f}" if won else "-"


def opponent_lines(per: dict[str, dict[str, float]], recent: dict[str, dict[str, float]]) -> list[str]:
    """The summary's lines per opponent: the win rate overall and lately, then how the last rounds were fought."""
    lines = []
    for name, v in per.items():
        last = min(50, int(v["rounds"]))
        hit, dealt, taken, destroyed = fought(recent[name])
        lines += [f"  {name:<13} {v['rounds']:>5.0f} rounds   win rate {v['win_rate']:.2f} overall, "
                  f"{recent[name]['win_rate']:.2f} over the last {last}   mean score {v['mean_score']:.1f}",
                  f"  {'':<13} over the last {last}: hit rate {hit}   damage per round dealt {dealt}, taken "
                  f"{taken}   wins by destroying {destroyed}"]
    return lines
