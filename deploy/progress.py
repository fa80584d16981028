"""A run's live view: one for every kind of run, each kind saying what it shows.

On a terminal, a rich Live display of the run's `render()`, redrawn as the run calls `refresh()`; with
enabled=False (CI, pipes, `--progress false`) the run's `line()` once every `period_s` seconds instead,
so a log stays readable. `log()` prints above the display either way. `saclstm run` shows a progress bar
over env steps (`ProgressView`); `tank-train` a table per opponent (deploy/tank/progress.py).
"""

from __future__ import annotations

import time

from rich.console import Console, RenderableType
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from protocol.health import Health


class LiveView:
    """The display and its fallback; a kind of run overrides `render` and `line`."""

    def __init__(self, enabled: bool = True, period_s: float = 10.0, refresh_per_second: float = 4) -> None:
        self.enabled, self.period_s = enabled, period_s
        self.console = Console(stderr=True)
        self.live = Live(console=self.console, refresh_per_second=refresh_per_second, transient=False)
        self._last_line = 0.0

    def render(self) -> RenderableType:
        raise NotImplementedError

    def line(self) -> str:
        raise NotImplementedError

    def __enter__(self) -> LiveView:
        if self.enabled:
            self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.enabled:
            self.live.stop()
            self.enabled = False

    def refresh(self) -> None:
        if self.enabled:
            self.live.update(self.render())
        elif time.monotonic() - self._last_line >= self.period_s:
            self._last_line = time.monotonic()
            self.console.print(self.line(), highlight=False)

    def log(self, text: str) -> None:
        (self.live.console if self.enabled else self.console).print(text, highlight=False)


def run_stats(h: Health) -> str:
    """The figures that matter beside a run's env steps: training, UTD, return, weights version, drops."""
    ret = h.recent_return
    drops = sum(a.dropped for a in h.actors)
    stats = f"grad {h.grad_steps:,}  UTD {h.utd_achieved:.2f}/{h.utd_target:g}  "
    if ret is not None:
        stats += f"return {ret:.0f}  "
    return stats + f"v{h.version}  drops {drops}"


class ProgressView(LiveView):
    """`saclstm run`: a progress bar over the run's env steps, the figures that matter beside it."""

    def __init__(self, total: int, enabled: bool = True) -> None:
        super().__init__(enabled)
        self.total, self.health = total, Health()
        self.progress = Progress(TextColumn("[bold]env steps"), BarColumn(), TextColumn("{task.completed:,}/{task.total:,}"),
                                 TimeElapsedColumn(), TimeRemainingColumn(), TextColumn("{task.fields[stats]}"),
                                 console=self.console)
        self.task = self.progress.add_task("run", total=total, stats="waiting for the learner")

    def update(self, h: Health) -> None:
        self.health = h
        self.progress.update(self.task, completed=min(h.env_steps, self.total), stats=run_stats(h))
        self.refresh()

    def render(self) -> RenderableType:
        return self.progress.get_renderable()

    def line(self) -> str:
        return f"env steps {self.health.env_steps:,}/{self.total:,}  {run_stats(self.health)}"
