"""`saclstm run`: one learner and N actors as real child processes, from one TOML file.

    start the learner, wait until it answers on its metrics socket
    start N actors, each with its share of the env-step budget
    watch: live progress; restart an actor that crashes; stop on Ctrl-C
    when the budget is spent: a deterministic eval actor plays N episodes
    stop the learner (SIGTERM: its final save), plot, print the summary

The lifecycle (start, watch, stop, and the lifeline that stops every child if this process dies) is
deploy/run.py's, shared with every kind of run; this file is the kind: its config and what it starts.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deploy.children import loopback
from deploy.progress import LiveView, ProgressView
from deploy.run import Run, front_end, settings
from protocol.config import check, read_toml

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


class Launcher(Run):
    """`saclstm run`: N actor daemons, each with its share of the env-step budget, then the eval actor."""

    stopping_line = "stopping: actors first (final flush), then the learner (final save)..."

    def __init__(self, cfg: RunConfig, config_path: str | None, learner_args: list[str], actor_args: list[str]) -> None:
        learner_toml = read_toml(config_path, "learner")
        directory = Path(cfg.run_dir or f"runs/{time.strftime('%Y%m%d-%H%M%S')}")
        picked = loopback("ingest", "weights", "metrics")  # distinct ports, for the ones the config leaves open
        eps = {k: learner_toml.get(k) or picked[k] for k in ("ingest", "weights", "metrics")}
        super().__init__(directory, config_path, learner_args, eps,
                         Path(learner_toml.get("weights_path") or directory / "checkpoints" / "live.sacl"),
                         cfg.start_timeout_s, cfg.stop_timeout_s)
        self.cfg, self.actor_args = cfg, actor_args
        self.share = [cfg.env_steps // cfg.actors + (1 if i < cfg.env_steps % cfg.actors else 0)
                      for i in range(cfg.actors)]
        self.actors = [f"actor{i}" for i in range(cfg.actors)]
        self.restarts = dict.fromkeys(self.actors, 0)
        self.finished: set[str] = set()  # ended well, or given up on
        self.eval_report: dict[str, Any] | None = None

    def _actor(self, i: int, steps: int, extra: tuple[str, ...] = ()) -> None:
        name = f"actor{i}" if not extra else "eval"
        self.children.start(name, "actor", *self.config_args, "--ingest", self.eps["ingest"], "--weights",
                            self.eps["weights"], "--actor-id", name, "--seed", str(1000 * (i + 1)), "--report",
                            str(self.dir / f"{name}.json"), *self.actor_args,
                            *(["--max-steps", str(steps)] if steps else []), *extra)

    def play(self) -> bool:
        for i in range(self.cfg.actors):
            self._actor(i, self.share[i])
        with ProgressView(self.cfg.env_steps, enabled=self.cfg.progress) as view:
            ok = self.watch_until_done(view)
        if ok and not self.stopping and self.cfg.eval_episodes:
            self.eval_report = self._evaluate()
        return ok

    def show(self, view: LiveView) -> None:
        assert isinstance(view, ProgressView)
        view.update(self.health)

    def tick(self, view: LiveView) -> None:
        for i, name in enumerate(self.actors):
            self._check_actor(i, name, view)

    def done(self) -> bool:
        return all(name in self.finished for name in self.actors)

    def _check_actor(self, i: int, name: str, view: LiveView) -> None:
        code = self.children.exited(name)
        if name in self.finished or code is None:
            return
        if code == 0:
            self.finished.add(name)
            return
        if self.restarts[name] >= self.cfg.max_restarts:
            view.log(f"{name} crashed {self.restarts[name] + 1} times; giving up on it:\n{self.children.tail(name)}")
            self.finished.add(name)
            return
        books = self.health.actor(name)
        left = max(1, self.share[i] - (books.received if books is not None else 0))
        self.restarts[name] += 1
        view.log(f"{name} exited with {code}; restarting it ({self.restarts[name]}/{self.cfg.max_restarts}) "
                 f"for its last {left} steps")
        self._actor(i, left)

    def stop_children(self) -> None:
        self.children.stop(self.actors + ["eval"], 30)

    def _evaluate(self) -> dict[str, Any] | None:
        print(f"evaluating: {self.cfg.eval_episodes} deterministic episodes...", file=sys.stderr)
        self._actor(0, 0, ("--eval", "--max-episodes", str(self.cfg.eval_episodes), "--bots", "1", "--max-steps", "0"))
        while self.children.exited("eval") is None and not self.stopping:
            self.look(500)
        self.children.stop(["eval"], 30)
        path = self.dir / "eval.json"
        return json.loads(path.read_text()) if path.exists() else None

    def _summary(self, ok: bool) -> int:
        from deploy.plot import plot_curves

        returns: list[float] = self.eval_report["returns"] if self.eval_report else []
        eval_return = sum(returns) / len(returns) if returns else None
        png = None
        if self.metrics_path.exists() and self.metrics_path.stat().st_size:
            png = plot_curves(self.metrics_path, self.dir / "curves.png", eval_return, title=str(self.dir))
        h = self.health
        drops = sum(a.dropped for a in h.actors)
        self.write_summary([
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
        ], {"eval_return": eval_return, "eval_returns": returns, "health": h.to_wire(), "learner_exit": self.learner_exit,
            "completed": ok and not self.stopping, "curves": str(png) if png else None})
        return 0 if ok and self.learner_exit == 0 else 1


def parser() -> argparse.ArgumentParser:
    return front_end("saclstm run", "Start a learner and N actors from one TOML file ([run], [learner], [actor] "
                     "tables), show progress, evaluate, summarise.", "TOML file with [run], [learner] and [actor] "
                     "tables", "actor", RunConfig)


def main(argv: list[str] | None = None) -> int:
    return launch(parser().parse_args(argv))


def launch(args: argparse.Namespace, default_config: str | None = None) -> int:
    """A run from parsed `saclstm run` flags (`saclstm demo` parses the same flags under its own name)."""
    config = args.config or default_config
    cfg = settings(RunConfig, args, config, "run", "saclstm run")
    if cfg is None:
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
