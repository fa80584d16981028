"""The launcher's live view: a progress bar over env steps with the figures that matter beside it."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from protocol.health import Health


class ProgressView:
    """A rich progress bar; with enabled=False (CI, pipes) it prints one status line every 10 s instead."""

    def __init__(self, total: int, enabled: bool = True) -> None:
        self.total, self.enabled = total, enabled
        self.console = Console(stderr=True)
        self.progress = Progress(TextColumn("[bold]env steps"), BarColumn(), TextColumn("{task.completed:,}/{task.total:,}"),
                                 TimeElapsedColumn(), TimeRemainingColumn(), TextColumn("{task.fields[stats]}"),
                                 console=self.console, transient=False)
        self.task = self.progress.add_task("run", total=total, stats="waiting for the learner")
        self._last_line = 0.0

    def __enter__(self) -> ProgressView:
        if self.enabled:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.enabled:
            self.progress.stop()
            self.enabled = False

    def update(self, h: Health) -> None:
        ret = h.recent_return
        drops = sum(a.dropped for a in h.actors)
        stats = f"grad {h.grad_steps:,}  UTD {h.utd_achieved:.2f}/{h.utd_target:g}  "
        if ret is not None:
            stats += f"return {ret:.0f}  "
        stats += f"v{h.version}  drops {drops}"
        if self.enabled:
            self.progress.update(self.task, completed=min(h.env_steps, self.total), stats=stats)
            return
        import time

        if time.monotonic() - self._last_line >= 10:
            self._last_line = time.monotonic()
            self.console.print(f"env steps {h.env_steps:,}/{self.total:,}  {stats}", highlight=False)

    def log(self, text: str) -> None:
        (self.progress.console if self.enabled else self.console).print(text, highlight=False)
