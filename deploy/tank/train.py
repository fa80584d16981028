"""`saclstm tank-train`: a learner, N of our tanks and scripted opponents, rounds back to back, in one command.

    start the learner (resumes from the run's checkpoint when there is one)
    per tank, an arena: a game server (ours, on a thread here) that plays the scripted opponents itself
        (or one bot process per opponent), the tank on the official bot API, and a controller that plays
        games of `rounds_per_game` rounds against each opponent in turn
    watch: rounds, win rate per opponent, mean score, skipped turns, achieved UTD; pace the game
    when `rounds` are played (or on Ctrl-C): stop the games, the tanks (final flush), the learner (final save)
    plot win rate and mean round score against rounds, per opponent; print and write the summary

UTD is held by the game's pace, never by stalling a turn: our tanks run realtime (a turn never waits
on the learner; a full send queue drops and counts), and with `tps = 0` (auto) the controller sets
the servers' turns per second from the learner's measured pace, so that the achieved UTD stays near
its target. A fixed `tps` plays at that pace whatever the learner does.

The lifecycle (the learner, start, watch, stop, the children's lifelines) is deploy/run.py's, shared
with `saclstm run`; this file is the kind: its config, its arenas, its pace and its summary.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actor.bots.tankroyale.engine import Setup
from deploy.children import loopback
from deploy.progress import LiveView
from deploy.run import Run, front_end, settings
from deploy.tank.battle import OURS, Arena, RoundLog, game_seed, next_games, rotation_start
from protocol.config import check

TANK_TOML = Path(__file__).resolve().parents[1] / "tank.toml"


def _f(default: Any, help: str) -> Any:  # noqa: A002
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class BattleConfig:
    """The [battle] table: who plays, how many rounds, at what pace."""

    tanks: int = _f(2, "our tanks, each in an arena of its own (a server and its opponents)")
    opponents: tuple[str, ...] = _f(("SittingDuck", "SpinBot", "Walls", "RamFire", "Tracker", "TrackFire", "Oscillator",
                                     "Dodger", "Orbiter", "StopAndGo"), "opponents, played in turn, one game each (the opponents' "
                                    "training pool by default)")
    rounds: int = _f(200, "rounds to play in all, across arenas (0: no round limit); a resumed run counts on")
    minutes: float = _f(0.0, "stop after this many minutes of training, counted across resumes of the run "
                             "(0: no time limit); whichever of rounds and minutes comes first ends the run")
    rounds_per_game: int = _f(10, "rounds in one game")
    tps: int = _f(0, "turns per second: 0 = auto (the learner's pace), -1 = as fast as the bots answer, N = fixed")
    max_tps: int = _f(30, "the ceiling of auto pace (the game's real pace is 30)")
    arena_width: int = _f(800, "arena width")
    arena_height: int = _f(600, "arena height")
    turn_timeout_ms: float = _f(30.0, "how long the server waits for a bot's intent before it skips the bot's turn")
    opponent_processes: bool = _f(False, "each opponent a bot process on the official bot API, as an outside bot "
                                         "is (the default plays them in our server's process: the same rounds, "
                                         "less CPU); always so on an external server")
    server: str = _f("", "an official server's URL to play on instead of our own (then tanks = 1)")
    server_secret: str = _f("", "that server's bot secret")
    controller_secret: str = _f("", "that server's controller secret")
    run_dir: str = _f("", "logs, rounds, checkpoints, curves; empty = runs/tank-<date-time>; an old one resumes")
    seed: int = _f(0, "seed of the games (arena i's game k, counted across resumes of the run, plays seed "
                      "seed + 1000 i + k)")
    progress: bool = _f(True, "show a live progress table")

    def __post_init__(self) -> None:
        check(self.tanks >= 1, "tanks", self.tanks, "must be at least 1")
        check(self.rounds >= 0, "rounds", self.rounds, "must be 0 (no round limit) or more")
        check(self.minutes >= 0, "minutes", self.minutes, "must be 0 (no time limit) or more")
        check(self.rounds_per_game >= 1, "rounds_per_game", self.rounds_per_game, "must be at least 1")
        check(len(self.opponents) >= 1, "opponents", self.opponents, "name at least one opponent")
        check(self.tps >= -1, "tps", self.tps, "must be -1 (as fast as the bots answer), 0 (auto) or a rate")
        check(self.max_tps >= 1, "max_tps", self.max_tps, "must be at least 1")
        check(self.turn_timeout_ms > 0, "turn_timeout_ms", self.turn_timeout_ms, "must be positive")
        check(not self.server or self.tanks == 1, "tanks", self.tanks, "an external server runs one game: tanks = 1")
        from actor.bots.tankroyale.opponents import OPPONENTS

        unknown = [o for o in self.opponents if o not in OPPONENTS]
        check(not unknown, "opponents", self.opponents, f"unknown {unknown}; known: {', '.join(OPPONENTS)}")


class Pace:
    """Auto TPS: faster while the learner keeps up with its UTD target, slower (to its pace) when it falls behind.

    Measured over windows of the learner's own counters: achieved UTD = new gradient steps / new env steps.
    """

    def __init__(self, utd: float, tanks: int, max_tps: int, min_tps: int = 2) -> None:
        self.utd, self.tanks, self.max_tps, self.min_tps = utd, tanks, max_tps, min_tps
        self.tps = max_tps
        self.achieved: float | None = None

    def update(self, d_env: int, d_grad: int, learning: bool) -> int:
        if not learning or d_env <= 0:
            return self.tps  # filling the replay: play at the ceiling
        self.achieved = d_grad / d_env
        if self.achieved >= 0.9 * self.utd:
            self.tps = min(self.max_tps, math.ceil(self.tps * 1.25))
        else:
            self.tps = max(self.min_tps, int(self.tps * self.achieved / self.utd))
        return self.tps


CLOCK_FILE = "training-time.json"  # in the run dir


class TrainingClock:
    """Training time across the sessions of one run: what `minutes` counts. Saved every few seconds, so a
    run killed outright loses at most that much of its count."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.before = float(json.loads(path.read_text())["seconds"])
        except (OSError, ValueError, KeyError, TypeError):
            self.before = 0.0
        self._since: float | None = None
        self._saved = 0.0

    def start(self) -> None:
        self._since = time.monotonic()

    def seconds(self) -> float:
        now = time.monotonic()
        total = self.before + (now - self._since if self._since is not None else 0.0)
        if now - self._saved >= 5.0:
            self._saved = now
            self._save(total)
        return total

    def stop(self) -> None:
        if self._since is not None:
            self.before += time.monotonic() - self._since
            self._since = None
        self._save(self.before)

    def _save(self, total: float) -> None:
        from protocol.checkpoint import write_atomic

        write_atomic(self.path, json.dumps({"seconds": round(total, 1)}).encode())


class TankTrainer(Run):
    """`tank-train`: arenas of our tanks against scripted opponents, sharing one round budget."""

    stopping_line = "stopping: games, then tanks (final flush), then the learner (final save)..."

    def __init__(self, cfg: BattleConfig, config_path: str | None, learner_args: list[str],
                 tank_args: list[str]) -> None:
        directory = Path(cfg.run_dir or f"runs/tank-{time.strftime('%Y%m%d-%H%M%S')}")
        super().__init__(directory, config_path, learner_args, loopback("ingest", "weights", "metrics"),
                         directory / "checkpoints" / "live.sacl", start_timeout_s=180.0, stop_timeout_s=180.0)
        self.cfg, self.tank_args = cfg, tank_args
        self.log = RoundLog(self.dir / "rounds.jsonl")
        self.first_games = next_games(self.log.rounds, cfg.tanks)  # a resumed run goes on from its log
        self.servers: list[Any] = []
        self.arenas: list[Arena] = []
        self._lock = threading.Lock()
        self._games_claimed = 0
        self.clock = TrainingClock(self.dir / CLOCK_FILE)
        self.pace = Pace(1.0, cfg.tanks, cfg.max_tps) if cfg.tps == 0 else None
        self._paced = (0.0, 0, 0)  # (when, env steps, gradient steps) at the last pace update

    # -- processes -------------------------------------------------------------------------

    def _start_arena(self, i: int) -> Arena:
        c, first = self.cfg, self.first_games[i]
        setup = Setup(arena_width=c.arena_width, arena_height=c.arena_height, number_of_rounds=c.rounds_per_game,
                      turn_timeout_us=int(c.turn_timeout_ms * 1000))
        if c.server:
            url, secret, ctl_secret = c.server, c.server_secret or None, c.controller_secret or None
        else:
            from actor.bots.tankroyale.server import run_server

            house = () if c.opponent_processes else c.opponents  # scripted opponents played by the server
            server = run_server(tps=self._first_tps(), seed=game_seed(c.seed, i, first), setup=setup, house=house,
                                house_seed=c.seed + i)
            self.servers.append(server)
            url, secret, ctl_secret = server.url, None, None
        secret_args = ["--server-secret", secret] if secret else []
        self.children.start(f"tank{i}", "deploy", "tank", *self.config_args, "--server", url, *secret_args,
                            "--name", OURS, "--actor-id", f"tank{i}", "--ingest", self.eps["ingest"],
                            "--weights", self.eps["weights"], "--seed", str(1000 * (i + 1) + first),
                            "--retry-s", "60",
                            *self.tank_args)
        for name in c.opponents if c.server or c.opponent_processes else ():
            self.children.start(f"arena{i}-{name}", "actor.bots.tankroyale.opponents", name, "--server", url,
                                "--seed", str(c.seed + i), *(["--secret", secret] if secret else []))
        return Arena(i, url, ctl_secret, OURS, list(c.opponents), setup, self._claim_game, self.log.add,
                     first_game=first, start=rotation_start(i, c.tanks, len(c.opponents))).start()

    def _first_tps(self) -> int:
        return self.cfg.tps if self.cfg.tps != 0 else self.cfg.max_tps

    def _claim_game(self) -> bool:
        """Arenas share the round budget: each claims its next game here."""
        with self._lock:
            if self.stopping:
                return False
            if self.cfg.rounds and (self.log.resumed + self._games_claimed * self.cfg.rounds_per_game
                                    >= self.cfg.rounds):
                return False
            self._games_claimed += 1
            return True

    # -- the run ---------------------------------------------------------------------------

    def play(self) -> bool:
        from deploy.tank.progress import BattleView

        self.arenas = [self._start_arena(i) for i in range(self.cfg.tanks)]
        self.clock.start()
        if self.pace is not None:
            self.pace.utd = float(self.health.utd_target or 1.0)
        self._paced = (time.monotonic(), self.health.env_steps, self.health.grad_steps)
        with BattleView(self, enabled=self.cfg.progress) as view:
            return self.watch_until_done(view)

    def problem(self) -> str | None:
        if (learner := super().problem()) is not None:
            return learner
        for name in self.children.procs:
            code = self.children.exited(name)
            if name != "learner" and code is not None and not self.stopping:
                return f"{name} exited with {code}:\n{self.children.tail(name)}"
        errors = [a.error for a in self.arenas if a.error]
        return errors[0] if errors else None

    def done(self) -> bool:
        if all(not a.alive for a in self.arenas):
            return True
        if self.cfg.minutes and self.clock.seconds() >= 60 * self.cfg.minutes:
            print(f"\n{self.cfg.minutes:g} minutes of training: stopping", file=sys.stderr)
            return True
        return False

    def tick(self, view: LiveView) -> None:
        """Auto pace: every 5 s, the servers' turns per second from the learner's achieved UTD."""
        now, (then, env0, grad0) = time.monotonic(), self._paced
        if self.pace is None or now - then < 5.0:
            return
        env, grad = self.health.env_steps, self.health.grad_steps
        tps = self.pace.update(env - env0, grad - grad0, grad > 0)
        for arena in self.arenas:
            arena.tps_wanted = tps
        self._paced = (now, env, grad)

    def skipped_turns(self) -> int:
        return sum(s.stats.get("skipped_turns", 0) for s in self.servers)

    def turns(self) -> int:
        return sum(s.stats.get("turns", 0) for s in self.servers)

    def stop_children(self) -> None:
        """The games, then the tanks (their final flush, then the learner's books on them), the opponents and
        the servers; the learner is stopped after this."""
        self.clock.stop()
        self.stopping = True
        for arena in self.arenas:
            arena.stop()
        for arena in self.arenas:
            arena.join(10)
        tanks = [n for n in self.children.procs if n.startswith("tank")]
        self.children.stop(tanks, 30)
        self._await_books(tanks)
        self.children.stop([n for n in self.children.procs if n.startswith("arena")], 10)
        for server in self.servers:
            server.close()

    def _await_books(self, tanks: list[str], timeout: float = 15.0) -> None:
        """After the tanks' bye: the learner's health once every step they sent is received or rejected."""
        deadline = time.monotonic() + timeout
        while self.children.exited("learner") is None and time.monotonic() < deadline:
            books = {a.sender: a for a in self.health.actors}
            if all(t in books and books[t].bye and books[t].received + books[t].rejected >= books[t].sent
                   for t in tanks):
                return
            self.look(250)

    def _summary(self, ok: bool) -> int:
        """Curves, the summary lines and summary.json: win rates, how the rounds were fought, the learner."""
        from deploy.plot import read_metrics
        from deploy.tank.curves import plot_rounds
        from deploy.tank.progress import alpha_entropy, opponent_lines

        png = plot_rounds(self.log.rounds, self.dir / "tank-curves.png", title=str(self.dir),
                          metrics=read_metrics(self.metrics_path))
        h = self.health
        per = self.log.by_opponent()
        recent = self.log.by_opponent(last=50)
        turns, skipped = self.turns(), self.skipped_turns()
        lines = ["", "── saclstm tank-train summary " + "─" * 36,
                 f"rounds           {len(self.log.rounds)} ({self.log.resumed} before this session)",
                 f"training time    {self.clock.before / 60:.1f} min (all sessions of this run)",
                 *opponent_lines(per, recent),
                 f"turns            {turns:,}, each played by 2 bots; bot-turns skipped {skipped:,}"
                 + (f" ({100 * skipped / (2 * turns):.2f}%)" if turns else ""),
                 *(f"  {a.sender:<13} sent {a.sent:,} = received {a.received:,} + rejected "
                   f"{a.rejected:,}; dropped at the tank {a.dropped:,}" for a in h.actors),
                 f"learner          env steps {h.env_steps:,}   gradient steps {h.grad_steps:,}"
                 f"   achieved UTD {h.utd_achieved:.2f} (target {h.utd_target})   {alpha_entropy(h)}",
                 f"rounds log       {self.log.path}",
                 f"curves           {png}" if png else "curves           none (no round ended)",
                 f"checkpoint       {self.checkpoint}" if self.checkpoint.exists() else "checkpoint       none",
                 f"logs             {self.dir}/*.log"]
        self.write_summary(lines, {
            "completed": ok, "rounds": len(self.log.rounds), "by_opponent": per, "last50": recent,
            "training_s": round(self.clock.before, 1),
            "turns": turns, "skipped_turns": skipped, "health": h.to_wire(), "curves": str(png) if png else None,
            "alpha": h.losses.get("alpha"), "entropy": h.losses.get("entropy")})
        return 0 if ok else 1


def parser() -> argparse.ArgumentParser:
    return front_end("saclstm tank-train", "Train our Tank Royale tank in battles: a learner, N tanks and scripted "
                     "opponents on our game server (or an official one), rounds back to back, with progress, "
                     "checkpoints, resume, curves and a summary. Without --config it reads deploy/tank.toml: the "
                     "defaults below are the ones that apply then.",
                     f"TOML with [battle], [learner], [actor], [tank] and [controls] tables (default: {TANK_TOML})",
                     "tank", BattleConfig, default_config=TANK_TOML, table_name="battle")


def resolve(args: argparse.Namespace) -> tuple[BattleConfig | None, str]:
    """The [battle] settings a command line gives, and the config file read (deploy/tank.toml without --config);
    None when a value cannot work (printed)."""
    config = args.config or str(TANK_TOML)
    cfg = settings(BattleConfig, args, config, "battle", "saclstm tank-train")
    if cfg is not None and not tank_tables_work(config):
        cfg = None
    return cfg, config


def tank_tables_work(config: str) -> bool:
    """The tanks' own tables ([controls], [tank]), read as each tank reads them: a value that cannot work stops
    the run here, with its key and reason, not as a tank's exit after the learner and servers have started."""
    from actor.bots.tankroyale.brain import TankControls, TankRewards

    file_only = argparse.Namespace()  # the tanks take these tables from the file alone, no flags
    return all(settings(cls, file_only, config, table, "saclstm tank-train") is not None
               for cls, table in ((TankControls, "controls"), (TankRewards, "tank")))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    cfg, config = resolve(args)
    if cfg is None:
        return 2
    return TankTrainer(cfg, config, args.learner_arg, args.tank_arg).run()
