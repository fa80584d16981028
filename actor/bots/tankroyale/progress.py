"""tank-train's live view: rounds, win rate per opponent, mean score, skipped turns, pace and UTD."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from protocol.health import Health


class BattleView:
    """A live table on a terminal; with enabled=False (CI, pipes) one status line every 10 s instead."""

    def __init__(self, trainer: Any, enabled: bool = True) -> None:
        self.trainer, self.enabled = trainer, enabled
        self.console = Console(stderr=True)
        self.live = Live(console=self.console, refresh_per_second=2, transient=False)
        self._last = 0.0
        self._started = time.monotonic()

    def __enter__(self) -> BattleView:
        if self.enabled:
            self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.enabled:
            self.live.stop()
            self.enabled = False

    def status(self) -> str:
        t = self.trainer
        h: Health = t.health
        turns, skipped = t.turns(), t.skipped_turns()
        budget = f"/{t.cfg.rounds}" if t.cfg.rounds else ""
        pct = f" ({100 * skipped / (2 * turns):.2f}% of bot-turns)" if turns else ""
        return (f"rounds {len(t.log.rounds)}{budget}  turns {turns:,}  skipped {skipped}{pct}  "
                f"env steps {h.env_steps:,}  grad {h.grad_steps:,}  "
                f"UTD {h.utd_achieved:.2f}/{h.utd_target:g}  "
                f"{h.updates_per_s:.0f} upd/s  v{h.version}  "
                f"{time.monotonic() - self._started:.0f} s")

    def table(self) -> Table:
        table = Table(title=self.status(), title_justify="left")
        for col in ("opponent", "rounds", "win rate", "last 50", "mean score", "mean turns"):
            table.add_column(col, justify="right" if col != "opponent" else "left")
        recent = self.trainer.log.by_opponent(last=50)
        for name, v in self.trainer.log.by_opponent().items():
            table.add_row(name, f"{v['rounds']:.0f}", f"{v['win_rate']:.2f}", f"{recent[name]['win_rate']:.2f}",
                          f"{v['mean_score']:.1f}", f"{v['mean_turns']:.0f}")
        return table

    def update(self) -> None:
        if self.enabled:
            self.live.update(self.table())
        elif time.monotonic() - self._last >= 10:
            self._last = time.monotonic()
            per = "  ".join(f"{n} {v['win_rate']:.2f} of {v['rounds']:.0f}"
                            for n, v in self.trainer.log.by_opponent(last=50).items())
            self.console.print(f"{self.status()}  win rate (last 50): {per or '-'}", highlight=False)
