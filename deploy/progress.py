"""The launcher's live view: a progress bar over env steps with the figures that matter beside it."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


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

    def update(self, h: dict[str, Any]) -> None:
        if not h:
            return
        ret = h.get("recent_return")
        drops = sum(a.get("dropped", 0) for a in h.get("actors", []))
        stats = (f"grad {h.get('grad_steps', 0):,}  UTD {h.get('utd_achieved', 0):.2f}/{h.get('utd_target', 0):g}  "
                 f"return {ret:.0f}  " if ret is not None else
                 f"grad {h.get('grad_steps', 0):,}  UTD {h.get('utd_achieved', 0):.2f}/{h.get('utd_target', 0):g}  ")
        stats += f"v{h.get('version', 0)}  drops {drops}"
        if self.enabled:
            self.progress.update(self.task, completed=min(h.get("env_steps", 0), self.total), stats=stats)
            return
        import time

        if time.monotonic() - self._last_line >= 10:
            self._last_line = time.monotonic()
            self.console.print(f"env steps {h.get('env_steps', 0):,}/{self.total:,}  {stats}", highlight=False)

    def log(self, text: str) -> None:
        (self.progress.console if self.enabled else self.console).print(text, highlight=False)
