"""One run's lifecycle, whatever it trains: the part every launcher shares.

    start    the learner, on the run's endpoints and checkpoint (it resumes from that checkpoint when
             there is one); wait until it answers on its metrics socket
    play     the kind's own children, then watch: the learner's health, the live view, a problem that
             ends the run (the learner died, or whatever the kind says), until the kind is done
    stop     on Ctrl-C or SIGTERM, or when done: the kind's children first (actors flush and say bye),
             the learner last (SIGTERM: its final save). If the launcher itself dies, however, every
             child gets SIGTERM from the kernel (deploy/children.py)
    summary  the kind's curves and lines, and summary.json, in the run's directory: always, however the run
             ended (a learner that never came up, Ctrl-C during start-up included)

The metrics endpoint (the learner's, where `saclstm monitor` watches) is printed at start and kept in
summary.json (`metrics_endpoint`). Exit status, one rule for every kind (and tank-eval): 0 the run got to its
end, 1 it failed, 130 it was interrupted (SIGINT or SIGTERM before its end; summary.json says
`"interrupted": true`). A signal after the outcome is decided (while stopping) changes nothing.

A kind of run is a config and a front end: a subclass that starts its children (`play`), says what is
wrong (`problem`), what to do between looks (`tick`), when it is done (`done`), how to stop its children
(`stop_children`) and what to summarise (`_summary`), and a command line built by `front_end` and read by
`settings`. `saclstm run` is deploy/launcher.py, `tank-train` deploy/tank/train.py.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from deploy.children import Children
from deploy.progress import LiveView
from deploy.watch import HealthWatch
from protocol.config import ConfigError, add_flags, build, given_flags, read_toml
from protocol.health import Health, HealthReader

T = TypeVar("T")


def front_end(prog: str, description: str, config_help: str, children: str, table: type,
              default_config: Path | None = None, table_name: str = "") -> argparse.ArgumentParser:
    """The command line every kind of run takes: --config, extra arguments for the learner and for each of its
    `children` (repeatable), and a flag per key of its own TOML table (`table`, a config class). A kind that
    reads `default_config` when no --config is given shows, in each flag's help, the value that file's
    `table_name` table sets: the default that applies."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--config", help=config_help)
    p.add_argument("--learner-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for the learner, e.g. --learner-arg=--hidden=128 (repeatable)")
    p.add_argument(f"--{children}-arg", action="append", default=[], metavar="ARG",
                   help=f"extra argument for every {children} (repeatable)")
    add_flags(p, table, *file_defaults(table, default_config, table_name))
    return p


def file_defaults(table: type, path: Path | None, table_name: str) -> tuple[dict[str, Any], str]:
    """The values `path`'s `table_name` table sets (as the command resolves them, `settings` with no flags), and
    the file's name for the help; nothing when there is no file or it cannot be read (the command itself then
    says why, at start)."""
    if path is None:
        return {}, ""
    try:
        raw = read_toml(path, table_name)
        cfg: Any = build(table, raw)
    except (ConfigError, OSError):
        return {}, ""
    return {key.replace("-", "_"): getattr(cfg, key.replace("-", "_")) for key in raw}, f"{path.parent.name}/{path.name}"


def settings(cls: type[T], args: argparse.Namespace, config: str | None, table: str, prog: str) -> T | None:
    """The kind's own table: the TOML file's `table`, then the flags. None, with the key and the reason printed
    (the front end exits 2), when a value cannot work."""
    try:
        return build(cls, read_toml(config, table), given_flags(args, cls))
    except ConfigError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return None


class Run:
    """Owns the learner and the kind's children; every path out of `run` stops them all."""

    stopping_line: ClassVar[str] = "stopping: the others first, then the learner (final save)..."

    def __init__(self, directory: Path, config_path: str | None, learner_args: list[str], eps: dict[str, str],
                 checkpoint: Path, start_timeout_s: float = 120.0, stop_timeout_s: float = 120.0) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config_path = config_path
        self.config_args = ["--config", str(config_path)] if config_path else []
        self.learner_args, self.eps, self.checkpoint = learner_args, eps, checkpoint
        self.metrics_path = self.dir / "metrics.jsonl"
        self.start_timeout_s, self.stop_timeout_s = start_timeout_s, stop_timeout_s
        self.children = Children(self.dir)
        self._health = HealthReader(lambda text: print(text, file=sys.stderr))
        self.watch: HealthWatch | None = None
        self.stopping = False  # the run is stopping: asked to (Ctrl-C, SIGTERM), or at its end
        self.interrupted = False  # a signal stopped the run before its end: exit 130
        self.ended = False  # the outcome is decided (done, failed or interrupted): a signal now changes nothing
        self.learner_exit: int | None = None

    @property
    def health(self) -> Health:
        """The learner's newest health record (all zeros before its first)."""
        return self._health.latest

    # -- the kind's part -----------------------------------------------------------------------

    def play(self) -> bool:
        """Start the kind's children and watch them (`watch_until_done`); True when the run got to its end."""
        raise NotImplementedError

    def problem(self) -> str | None:
        """Why the run cannot go on, or None. The learner's death always is one."""
        code = self.children.exited("learner")
        return None if code is None else f"the learner exited with {code}:\n{self.children.tail('learner')}"

    def tick(self, view: LiveView) -> None:
        """Between looks at the health feed: restarts, pacing, whatever the kind keeps up."""

    def done(self) -> bool:
        raise NotImplementedError

    def show(self, view: LiveView) -> None:
        view.refresh()

    def stop_children(self) -> None:
        """Stop everything but the learner, in the kind's order."""
        self.children.stop([n for n in self.children.procs if n != "learner"], 30)

    def _summary(self, ok: bool) -> int:
        raise NotImplementedError

    # -- the lifecycle -------------------------------------------------------------------------

    def run(self) -> int:
        signal.signal(signal.SIGINT, lambda *_: self._interrupt())
        signal.signal(signal.SIGTERM, lambda *_: self._interrupt())
        self.watch = HealthWatch(self.eps["metrics"], self._health)
        print(f"metrics endpoint {self.eps['metrics']} (watch it: saclstm monitor {self.eps['metrics']})",
              file=sys.stderr)
        ok = False
        try:
            self.children.start("learner", "learner", *self.config_args, "--ingest", self.eps["ingest"],
                                "--weights", self.eps["weights"], "--metrics", self.eps["metrics"],
                                "--metrics-path", str(self.metrics_path), "--weights-path", str(self.checkpoint),
                                *self.learner_args)
            if self._await_learner():
                ok = self.play()
        finally:
            self.ended = True
            self.shutdown()
            self.watch.close()
        code = self._summary(ok)  # always written: a failed or interrupted run says so
        return 130 if self.interrupted else code

    def _interrupt(self) -> None:
        if not self.stopping and not self.ended:
            self.stopping = self.interrupted = True
            print(f"\n{self.stopping_line}", file=sys.stderr)

    def look(self, timeout_ms: int = 250) -> bool:
        """Take what the health feed brought within `timeout_ms`; True when a record came."""
        assert self.watch is not None
        return any(topic == "health" for topic, _ in self.watch.poll(timeout_ms))

    def _await_learner(self) -> bool:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline and not self.stopping:
            code = self.children.exited("learner")
            if code is not None:
                print(f"the learner exited with {code} at start:\n{self.children.tail('learner')}", file=sys.stderr)
                return False
            if self.look(200):
                return True
        if not self.stopping:
            print(f"the learner did not come up within {self.start_timeout_s:.0f} s:\n{self.children.tail('learner')}",
                  file=sys.stderr)
        return False

    def watch_until_done(self, view: LiveView) -> bool:
        """Look, show, stop on a problem, keep up, until done (True) or stopped (False)."""
        while not self.stopping:
            self.look()
            self.show(view)
            if (problem := self.problem()) is not None:
                view.stop()
                print(problem, file=sys.stderr)
                return False
            self.tick(view)
            if self.done():
                return True
        return False

    def shutdown(self) -> None:
        self.stop_children()
        self.learner_exit = self.children.stop(["learner"], self.stop_timeout_s).get("learner")

    def write_summary(self, lines: list[str], data: dict[str, Any]) -> None:
        """Print the summary's lines and write summary.json beside the logs, with what every kind's has: whether a
        signal stopped the run before its end (then it is not completed, whatever the kind says), and the metrics
        endpoint it had."""
        if self.interrupted:
            lines = [*lines, "interrupted      stopped by Ctrl-C or SIGTERM before its end"]
        print("\n".join(lines))
        data = {**data, "completed": bool(data.get("completed")) and not self.interrupted,
                "interrupted": self.interrupted, "metrics_endpoint": self.eps["metrics"]}
        (self.dir / "summary.json").write_text(json.dumps(data, indent=1, default=str))
