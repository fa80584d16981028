"""`saclstm run`: one learner and N actors as real child processes, from one TOML file.

    start the learner, wait until it answers on its metrics socket
    start N actors, each with its share of the env-step budget
    watch: live progress; restart an actor that crashes; stop on Ctrl-C
    (and if this process dies, however: every child gets SIGTERM from the kernel, see protocol/lifeline.py)
    when the budget is spent: a deterministic eval actor plays N episodes
    stop the learner (SIGTERM: its final save), plot, print the summary
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protocol.config import ConfigError, add_flags, build, check, given_flags, read_toml
from protocol.health import Health, HealthReader
from protocol.lifeline import child_env
from protocol.sockets import HealthFeed

DEMO_TOML = Path(__file__).with_name("demo.toml")


def _f(default, help: str):  # noqa: A002
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class RunConfig:
    """The [run] table: how many actors, how long, where results go."""

    actors: int = _f(2, "actor daemons to start")
    env_steps: int = _f(30000, "environment steps in total, across actors")
    eval_episodes: int = _f(10, "deterministic episodes played at the end (0 = none)")
    run_dir: str = _f("", "where logs, metrics, plots go; empty = runs/<date-time>")
    max_restarts: int = _f(5, "restarts allowed per actor before the run gives up on it")
    progress: bool = _f(True, "show a live progress bar")
    start_timeout_s: float = _f(120.0, "how long the learner may take to come up")
    stop_timeout_s: float = _f(120.0, "how long the learner may take to stop (its final save)")

    def __post_init__(self) -> None:
        check(self.actors >= 1, "actors", self.actors, "must be at least 1")
        check(self.env_steps >= self.actors, "env_steps", self.env_steps, "must give every actor at least one step")
        check(self.eval_episodes >= 0, "eval_episodes", self.eval_episodes, "must be 0 or more")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Child:
    name: str
    args: list[str]
    proc: subprocess.Popen | None = None
    restarts: int = 0
    done: bool = False


class Launcher:
    """Owns the children; every path out of `run` stops them all."""

    def __init__(self, cfg: RunConfig, config_path: str | None, learner_args: list[str], actor_args: list[str]) -> None:
        self.cfg = cfg
        self.dir = Path(cfg.run_dir or f"runs/{time.strftime('%Y%m%d-%H%M%S')}")
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config_args = ["--config", str(config_path)] if config_path else []
        learner_toml = read_toml(config_path, "learner")
        self.eps = {k: learner_toml.get(k) or f"tcp://127.0.0.1:{_port()}" for k in ("ingest", "weights", "metrics")}
        self.learner_args, self.actor_args = learner_args, actor_args
        self.metrics_path = self.dir / "metrics.jsonl"
        self.checkpoint = Path(learner_toml.get("weights_path") or self.dir / "checkpoints" / "live.sacl")
        self.stopping = False
        self.children: list[Child] = []
        self._health = HealthReader(lambda text: print(text, file=sys.stderr))

    @property
    def health(self) -> Health:
        """The learner's newest health record (all zeros before its first)."""
        return self._health.latest

    # -- children --------------------------------------------------------------------------

    def _spawn(self, child: Child) -> None:
        log = open(self.dir / f"{child.name}.log", "ab")  # noqa: SIM115 - the child owns it
        # Own session (a terminal's Ctrl-C reaches only us; we stop them in order), and a lifeline: if we die,
        # even by SIGKILL, each child gets SIGTERM and stops as it would on Ctrl-C (protocol/lifeline.py).
        child.proc = subprocess.Popen([sys.executable, "-m", *child.args], stdout=log, stderr=subprocess.STDOUT,
                                      env=child_env({**os.environ, "PYTHONUNBUFFERED": "1"}), start_new_session=True)
        log.close()

    def _learner(self) -> Child:
        child = Child("learner", ["learner", *self.config_args, "--ingest", self.eps["ingest"], "--weights",
                                  self.eps["weights"], "--metrics", self.eps["metrics"],
                                  "--metrics-path", str(self.metrics_path), "--weights-path", str(self.checkpoint),
                                  *self.learner_args])
        self._spawn(child)
        return child

    def _actor(self, i: int, steps: int, extra: tuple[str, ...] = ()) -> Child:
        name = f"actor{i}" if not extra else "eval"
        child = Child(name, ["actor", *self.config_args, "--ingest", self.eps["ingest"], "--weights", self.eps["weights"],
                             "--actor-id", name, "--seed", str(1000 * (i + 1)), "--report", str(self.dir / f"{name}.json"),
                             *self.actor_args, *(["--max-steps", str(steps)] if steps else []), *extra])
        self._spawn(child)
        return child

    def _stop(self, child: Child, timeout: float) -> int | None:
        if child.proc is None:
            return None
        if child.proc.poll() is None:
            child.proc.send_signal(signal.SIGTERM)
            try:
                child.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                print(f"{child.name} did not stop within {timeout:.0f} s; killing it", file=sys.stderr)
                child.proc.kill()
                child.proc.wait()
        return child.proc.returncode

    def tail(self, name: str, lines: int = 15) -> str:
        path = self.dir / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    # -- the run -----------------------------------------------------------------------------

    def run(self) -> int:
        signal.signal(signal.SIGINT, lambda *_: self._interrupt())
        signal.signal(signal.SIGTERM, lambda *_: self._interrupt())
        feed = HealthFeed(self.eps["metrics"])
        learner = self._learner()
        self.children.append(learner)
        actors: list[Child] = []
        try:
            if not self._await_learner(feed, learner):
                return 1
            share = [self.cfg.env_steps // self.cfg.actors + (1 if i < self.cfg.env_steps % self.cfg.actors else 0)
                     for i in range(self.cfg.actors)]
            actors = [self._actor(i, share[i]) for i in range(self.cfg.actors)]
            self.children += actors
            ok = self._watch(feed, learner, actors, share)
            eval_report = self._evaluate(feed) if ok and not self.stopping and self.cfg.eval_episodes else None
        finally:
            for child in actors:
                self._stop(child, 30)
            code = self._stop(learner, self.cfg.stop_timeout_s)
            feed.close()
        return self._summary(eval_report, code, ok)

    def _interrupt(self) -> None:
        if self.stopping:
            return
        self.stopping = True
        print("\nstopping: actors first (final flush), then the learner (final save)...", file=sys.stderr)

    def _await_learner(self, feed: HealthFeed, learner: Child) -> bool:
        deadline = time.monotonic() + self.cfg.start_timeout_s
        while time.monotonic() < deadline and not self.stopping:
            if learner.proc is not None and learner.proc.poll() is not None:
                print(f"the learner exited with {learner.proc.returncode} at start:\n{self.tail('learner')}", file=sys.stderr)
                return False
            if feed.poll(200) and self._health.take(feed.latest):
                return True
        if not self.stopping:
            print(f"the learner did not come up within {self.cfg.start_timeout_s:.0f} s:\n{self.tail('learner')}",
                  file=sys.stderr)
        return False

    def _watch(self, feed: HealthFeed, learner: Child, actors: list[Child], share: list[int]) -> bool:
        from deploy.progress import ProgressView

        with ProgressView(self.cfg.env_steps, enabled=self.cfg.progress) as view:
            fresh = False
            while not self.stopping:
                if feed.poll(0) or fresh:
                    self._health.take(feed.latest)
                view.update(self.health)
                if learner.proc is not None and learner.proc.poll() is not None:
                    view.stop()
                    print(f"the learner exited with {learner.proc.returncode}:\n{self.tail('learner')}", file=sys.stderr)
                    return False
                for i, child in enumerate(actors):
                    self._check_actor(i, child, share[i], view)
                if all(c.done for c in actors):
                    return True
                fresh = feed.poll(250)
        return False

    def _check_actor(self, i: int, child: Child, steps: int, view: Any) -> None:
        if child.done or child.proc is None or child.proc.poll() is None:
            return
        if child.proc.returncode == 0:
            child.done = True
            return
        if child.restarts >= self.cfg.max_restarts:
            view.log(f"{child.name} crashed {child.restarts + 1} times; giving up on it:\n{self.tail(child.name)}")
            child.done = True
            return
        books = self.health.actor(child.name)
        left = max(1, steps - (books.received if books is not None else 0))
        child.restarts += 1
        view.log(f"{child.name} exited with {child.proc.returncode}; restarting it ({child.restarts}/{self.cfg.max_restarts}) "
                 f"for its last {left} steps")
        restarted = self._actor(i, left)
        child.proc, child.args = restarted.proc, restarted.args

    def _evaluate(self, feed: HealthFeed) -> dict[str, Any] | None:
        print(f"evaluating: {self.cfg.eval_episodes} deterministic episodes...", file=sys.stderr)
        child = self._actor(0, 0, ("--eval", "--max-episodes", str(self.cfg.eval_episodes), "--bots", "1", "--max-steps", "0"))
        self.children.append(child)
        assert child.proc is not None
        while child.proc.poll() is None and not self.stopping:
            if feed.poll(500):
                self._health.take(feed.latest)
        self._stop(child, 30)
        path = self.dir / "eval.json"
        return json.loads(path.read_text()) if path.exists() else None

    def _summary(self, eval_report: dict[str, Any] | None, learner_code: int | None, ok: bool) -> int:
        from deploy.plot import plot_curves

        returns: list[float] = eval_report["returns"] if eval_report else []
        eval_return = sum(returns) / len(returns) if returns else None
        png = None
        if self.metrics_path.exists() and self.metrics_path.stat().st_size:
            png = plot_curves(self.metrics_path, self.dir / "curves.png", eval_return, title=str(self.dir))
        h = self.health
        drops = sum(a.dropped for a in h.actors)
        lines = [
            "", "── saclstm run summary " + "─" * 40,
            f"env steps        {h.env_steps:,}   gradient steps {h.grad_steps:,}   "
            f"achieved UTD {h.utd_achieved:.2f} (target {h.utd_target})",
            f"weights version  {h.version}   dropped steps {drops}   rejects {h.rejects or 'none'}",
            f"eval return      {eval_return:.1f} (mean of {len(returns)} deterministic episodes)"
            if eval_return is not None else "eval return      not measured",
            f"metrics          {self.metrics_path}",
            f"learning curves  {png}" if png else "learning curves  none (no training pass)",
            f"checkpoint       {self.checkpoint}" if self.checkpoint.exists() else "checkpoint       none written",
            f"logs             {self.dir}/*.log",
        ]
        print("\n".join(lines))
        (self.dir / "summary.json").write_text(json.dumps({
            "eval_return": eval_return, "eval_returns": returns,
            "health": h.to_wire(), "learner_exit": learner_code, "completed": ok and not self.stopping,
            "curves": str(png) if png else None}, indent=1, default=str))
        return 0 if ok and learner_code == 0 else 1


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="saclstm run", description="Start a learner and N actors from one TOML file "
                                "([run], [learner], [actor] tables), show progress, evaluate, summarise.")
    p.add_argument("--config", help="TOML file with [run], [learner] and [actor] tables")
    p.add_argument("--learner-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for the learner, e.g. --learner-arg=--hidden=128 (repeatable)")
    p.add_argument("--actor-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for every actor (repeatable)")
    add_flags(p, RunConfig)
    return p


def main(argv: list[str] | None = None) -> int:
    return launch(parser().parse_args(argv))


def launch(args: argparse.Namespace, default_config: str | None = None) -> int:
    """A run from parsed `saclstm run` flags (`saclstm demo` parses the same flags under its own name)."""
    config = args.config or default_config
    try:
        cfg = build(RunConfig, read_toml(config, "run"), given_flags(args, RunConfig))
    except ConfigError as exc:
        print(f"saclstm run: {exc}", file=sys.stderr)
        return 2
    return Launcher(cfg, config, args.learner_arg, args.actor_arg).run()


def demo_parser() -> argparse.ArgumentParser:
    p = parser()
    p.prog = "saclstm demo"
    p.description = (f"The built-in default run: Pendulum-V (Pendulum-v1, angular velocity only), one learner and two "
                     f"actors, from {DEMO_TOML.name}; the flags are `saclstm run`'s and override the file.")
    return p


def demo(argv: list[str] | None = None) -> int:
    """The built-in default: Pendulum-V, one learner, two actors (deploy/demo.toml)."""
    args = demo_parser().parse_args(argv)  # its own usage in errors and --help
    print(f"saclstm demo: Pendulum-V (Pendulum-v1, angular velocity only), 1 learner + 2 actors, config {DEMO_TOML}",
          file=sys.stderr)
    return launch(args, default_config=str(DEMO_TOML))
