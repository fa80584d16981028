"""`saclstm tank-eval`: how good is a checkpoint? Deterministic battles that send nothing, beside three baselines.

    saclstm tank-eval --checkpoint runs/tank-.../checkpoints/live.sacl --opponent SpinBot --rounds 100

Four matchups play the same battles (one game of `rounds` rounds each, the same server seed, so the
same start positions): our tank (deterministic policy from the checkpoint, eval mode: no experience
leaves it, no learner needed; `--sample`: actions sampled from the policy, seeded) against the opponent,
then in our tank's place the constant action of its form ("constant-action": `saclstm tank --fixed-action`, one action every decision through the same
[controls], no network; actor/bots/tankroyale/baseline.py), HeadOnBot and RandomBot. Much of a tank's win
rate comes from its controls, not from learning: the constant action is what the controls alone win, so
what the checkpoint learned is its margin over that side, not its win rate.
Each gets its win rate with a 95% Wilson interval and its mean round score, and how it fought (from the
server's observer ticks, actor/bots/tankroyale/fight.py): its hit rate, the damage it dealt and took per
round, and of the rounds it won, the share it won by destroying the opponent and by outlasting it (the
opponent died otherwise, of inactivity or a wall, or the round ended). `--out` writes them as JSON.
`--replay DIR` writes a page per round our tank played (DIR/round-001.html, ...;
actor/bots/tankroyale/replay.py) to watch in a browser. The matchups run side by side, each in an arena
of its own (our server on a thread, two bot processes). A checkpoint that does not load, or whose actor
does not fit the tank, stops the command before any battle (actor/bots/tankroyale/fits.py).

The battles' processes log to `--logs DIR`, or to a temp directory that a good evaluation removes. Exit
status, the rule `saclstm run` and `tank-train` follow: 0 done; 1 failed (an arena that failed: one line with
the reason and the logs' directory, which is kept); 130 interrupted (SIGINT or SIGTERM: everything it started
stops, the logs are kept and named; a later signal changes nothing). `--out` is written in every case, with
`"completed"` and `"interrupted"`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from actor.bots.tankroyale.brain import TankControls
from actor.bots.tankroyale.engine import Setup
from actor.bots.tankroyale.fits import checkpoint_problem
from deploy.children import Children, free_port
from deploy.tank.battle import OURS, Arena, RoundRecord, fight_stats, wilson

FIXED = "constant-action"  # the constant action of our tank's form, in our tank's place (its name in the game)
BASELINES = ("HeadOnBot", "RandomBot")  # scripted, in our tank's place


class EvalFailed(RuntimeError):
    """An arena that failed (or did not finish in time): the reason, in one line, and the log to read."""

    def __init__(self, reason: str, log: Path) -> None:
        super().__init__(reason)
        self.log = log


def summarise(records: list[RoundRecord]) -> dict[str, Any]:
    """Win rate (with its interval), mean scores and turns, and how the rounds were fought (fight_stats)."""
    n, wins = len(records), sum(r.won for r in records)
    low, high = wilson(wins, n)
    return {"rounds": n, "wins": wins, "win_rate": wins / n if n else 0.0, "ci95": [round(low, 3), round(high, 3)],
            "mean_score": sum(r.score for r in records) / n if n else 0.0,
            "mean_opponent_score": sum(r.opponent_score for r in records) / n if n else 0.0,
            "mean_turns": sum(r.turns for r in records) / n if n else 0.0,
            **fight_stats([r.__dict__ for r in records])}


def controls_of(config: str | None) -> TankControls:
    """The action's form our tank plays: the run's [controls] (TankControls' defaults without a config)."""
    from protocol.config import build, read_toml

    return build(TankControls, read_toml(config, "controls"), {})


def constant_action(config: str | None, given: str | None = None) -> np.ndarray:
    """The constant-action side's action: `given` ('A,B,C,D'), or the FIXED_ACTIONS entry of the config's aim
    form. ValueError with the reason (a bad value, or a form with none), so that the command stops at start."""
    from actor.bots.tankroyale.baseline import fixed_action, parse_action

    if given is not None:
        try:
            return parse_action(given)
        except ValueError as exc:
            raise ValueError(f"--fixed-action {given}: {exc}") from None
    try:
        return fixed_action(controls_of(config))
    except ValueError as exc:
        raise ValueError(f"{exc} (--fixed-action A,B,C,D; or --no-baselines)") from None


def report(side: str, r: dict[str, Any]) -> str:
    """One side's lines: its win rate, then how it fought (a win rate alone hides how the rounds were won)."""
    return (f"  {side:<15} win rate {r['win_rate']:.2f} (95% CI {r['ci95'][0]:.2f}-{r['ci95'][1]:.2f})   "
            f"mean score {r['mean_score']:.1f} vs {r['mean_opponent_score']:.1f}   mean turns {r['mean_turns']:.0f}\n"
            f"  {'':<15} hit rate {r['hit_rate']:.2f} ({r['hits']} of {r['shots']} shots)   damage per round "
            f"dealt {r['mean_dealt']:.1f}, taken {r['mean_taken']:.1f}   " + (
                f"of the wins: destroyed {r['destroyed_rate']:.2f}, outlasted {r['outlasted_rate']:.2f} "
                f"(won by destroying: {r['win_rate_destroyed']:.2f} of rounds)" if r["wins"] else "no wins"))


def comparison(results: dict[str, dict[str, Any]]) -> str | None:
    """The line that says what learning added: our tank's rates minus the constant action's, in the same battles."""
    ours, fixed = results.get(OURS), results.get(FIXED)
    if ours is None or fixed is None:
        return None
    parts = [f"{what} {ours[key]:.2f} vs {fixed[key]:.2f} ({ours[key] - fixed[key]:+.2f})"
             for what, key in (("destroyed", "win_rate_destroyed"), ("won", "win_rate"))]
    return "learned minus the constant action of its form (what the checkpoint adds to its controls): " + ", ".join(parts)


def evaluate(checkpoint: str | None, opponent: str, rounds: int, seed: int = 0, baselines: bool = True,
             tps: int = -1, log_dir: Path | None = None, timeout_s: float = 3600.0,
             replay: Path | None = None, config: str | None = None,
             fixed_action: Sequence[float] | None = None,
             opponent_processes: bool = False, turn_timeout_ms: float = 30.0,
             sample: bool = False) -> dict[str, dict[str, Any]]:
    """Win rates of our tank (and the baselines) against `opponent`; {side: summary}. Stops everything it starts.
    `replay`: a folder for a page per round our tank played; `config`: the TOML the tanks read [controls] from;
    `fixed_action`: the constant-action side's action (default: its form's, constant_action; ValueError when
    the form has none). `opponent_processes`: the scripted bots (the opponent, HeadOnBot and RandomBot) as bot
    processes on the official bot API rather than played by the server (house.py: the same rounds, less CPU).
    `sample`: our tank samples each action from its policy (seeded with `seed`) instead of playing the mean.
    `turn_timeout_ms`: how long a turn waits for a late bot (a test's games are exact only when none is late).
    `log_dir`: where the bot processes log; without one, a temp directory removed when the
    evaluation ends well. EvalFailed (the reason in one line, and the log to read) when an arena fails."""
    from actor.bots.tankroyale.server import run_server

    action = None
    if baselines:  # resolved before anything starts: a form with no constant action stops here
        action = np.asarray(fixed_action, np.float32) if fixed_action is not None else constant_action(config)
    temporary = log_dir is None
    log_dir = log_dir or Path(tempfile.mkdtemp(prefix="tank-eval-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    children = Children(log_dir)
    sides = ([OURS] if checkpoint else []) + ([FIXED, *BASELINES] if baselines else [])
    setup = Setup(number_of_rounds=rounds, turn_timeout_us=int(turn_timeout_ms * 1000))  # 30 ms: the game's own
    servers: list[Any] = []
    arenas: list[Any] = []
    records: dict[str, list[Any]] = {side: [] for side in sides}
    try:
        for i, side in enumerate(sides):
            # The scripted bots, in the bot ids' order: (log name as a process, opponent name, seed).
            scripted = ([(side, side, seed)] if side in BASELINES else []) + [(f"{side}-vs-{opponent}", opponent,
                                                                                seed + 1)]
            house = [] if opponent_processes else [(name, s) for _, name, s in scripted]  # seeded as their processes
            server = run_server(tps=tps, seed=seed, setup=setup, house=house)  # one seed: the same battles each side
            servers.append(server)
            if side == OURS:
                children.start(side, "deploy", "tank", "--eval", "--checkpoint", str(checkpoint), "--server", server.url,
                               "--name", OURS, "--actor-id", "tank-eval", "--ingest", f"tcp://127.0.0.1:{free_port()}",
                               "--weights", f"tcp://127.0.0.1:{free_port()}", "--retry-s", "30",
                               *(["--eval-sample", "true", "--seed", str(seed)] if sample else []),
                               *(["--config", config] if config else []))
            elif side == FIXED and action is not None:  # the same form: the same --config's [controls]
                children.start(side, "deploy", "tank", f"--fixed-action={','.join(repr(float(v)) for v in action)}",
                               "--server", server.url, "--name", FIXED, "--retry-s", "30",
                               *(["--config", config] if config else []))
            for log_name, name, bot_seed in scripted if opponent_processes else ():
                children.start(log_name, "actor.bots.tankroyale.opponents", name, "--server", server.url,
                               "--seed", str(bot_seed))
            played = [False]

            def once(played: list[bool] = played) -> bool:
                first, played[0] = not played[0], True
                return first
            arenas.append(Arena(i, server.url, None, side, [opponent], setup, once, records[side].append,
                                replay=replay if side == OURS else None).start())
        deadline = time.monotonic() + timeout_s
        for arena in arenas:
            arena.join(max(0.0, deadline - time.monotonic()))
            side = sides[arena.index]
            if arena.error:
                reason = (arena.error.strip().splitlines() or ["failed"])[0]
                raise EvalFailed(f"{side}'s {reason}", log_dir / f"{side}.log")
            if arena.alive:
                raise EvalFailed(f"{side}'s arena {arena.index}: not done within {timeout_s:.0f} s",
                                 log_dir / f"{side}.log")
    finally:
        for arena in arenas:
            arena.stop()
        children.stop(timeout=20)
        for server in servers:
            server.close()
    if temporary:
        shutil.rmtree(log_dir, ignore_errors=True)  # ended well: nothing to read there
    return {side: summarise(records[side]) for side in sides}


def parser() -> argparse.ArgumentParser:
    from actor.bots.tankroyale.opponents import OPPONENTS

    p = argparse.ArgumentParser(prog="saclstm tank-eval", description="Play a checkpoint deterministically against an "
                                "opponent, beside three baselines in the same battles (the constant action of its "
                                "form, HeadOnBot, RandomBot); nothing is sent to a learner.")
    p.add_argument("--checkpoint", required=True, help="the checkpoint file to play (e.g. runs/.../live.sacl)")
    p.add_argument("--opponent", default="SpinBot", choices=sorted(OPPONENTS), help="who to play against")
    p.add_argument("--rounds", type=int, default=100, help="rounds per matchup")
    p.add_argument("--seed", type=int, default=0, help="the battles' seed (start positions)")
    p.add_argument("--tps", type=int, default=-1, help="turns per second; -1: as fast as the bots answer")
    p.add_argument("--no-baselines", action="store_true", help="play only our tank")
    p.add_argument("--fixed-action", metavar="A,B,C,D", help="the constant-action side plays this action (speed, "
                   "body turn, aim, fire power) every decision instead of its form's own (FIXED_ACTIONS in "
                   "actor/bots/tankroyale/baseline.py); a value that starts with '-' takes '=': "
                   "--fixed-action=-4,0,0,2")
    p.add_argument("--sample", action="store_true", help="our tank samples each action from its policy, as in "
                   "training, instead of playing the policy's mean (seeded with --seed): a mixed strategy, against "
                   "opponents whose guns learn where a tank goes")
    p.add_argument("--opponent-processes", action="store_true", help="run the scripted bots (the opponent, "
                   "HeadOnBot, RandomBot) as bot processes on the official bot API, as outside bots are; by default "
                   "our server plays them itself (the same rounds, less CPU)")
    p.add_argument("--out", help="write the results here as JSON")
    p.add_argument("--config", help="the run's TOML: our tank and the constant action play with its [controls] (the "
                   "action's form it was trained with; default: TankControls' defaults, which tank-train's "
                   "deploy/tank.toml uses)")
    p.add_argument("--replay", metavar="DIR", help="write each round our tank played as a page to watch in a "
                   "browser: DIR/round-001.html, ...")
    p.add_argument("--logs", metavar="DIR", help="keep the battles' logs (each bot process's) here; default: a temp "
                   "directory, removed when the evaluation ends well, named when it fails or is stopped")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if (problem := start_problem(args)) is not None:
        print(f"saclstm tank-eval: {problem}", file=sys.stderr)
        return 2
    action = None if args.no_baselines else constant_action(args.config, args.fixed_action)
    logs = Path(args.logs) if args.logs else Path(tempfile.mkdtemp(prefix="tank-eval-"))
    for sig in (signal.SIGINT, signal.SIGTERM):  # stopped as Ctrl-C stops it: everything it started ends
        signal.signal(sig, _interrupt)
    try:
        results = evaluate(args.checkpoint, args.opponent, args.rounds, args.seed, not args.no_baselines, args.tps,
                           log_dir=logs, replay=Path(args.replay) if args.replay else None, config=args.config,
                           fixed_action=None if action is None else action.tolist(),
                           opponent_processes=args.opponent_processes, sample=args.sample)
    except KeyboardInterrupt:
        write_out(args, action, {}, logs, interrupted=True)
        print(f"saclstm tank-eval: stopped; the battles' logs are in {logs}", file=sys.stderr)
        return 130
    except EvalFailed as exc:
        write_out(args, action, {}, logs, error=str(exc))
        print(f"saclstm tank-eval: {exc} (see {exc.log}; the battles' logs are in {logs})", file=sys.stderr)
        return 1
    if not args.logs:
        shutil.rmtree(logs, ignore_errors=True)  # a good evaluation leaves nothing behind
    print(headline(args, action))
    for side, r in results.items():
        print(report(side, r))
    if (line := comparison(results)) is not None:
        print(line)
    if args.replay:
        pages = sorted(Path(args.replay).glob("round-*.html"))
        print(f"replays: {len(pages)} pages in {args.replay}" + (f" ({pages[0].name} ...)" if pages else ""))
    write_out(args, action, results, Path(args.logs) if args.logs else None)
    return 0


def _interrupt(signum: int, frame: object) -> None:
    """The first SIGINT or SIGTERM stops the evaluation (KeyboardInterrupt); later ones are ignored, so that the
    stop (everything it started, then --out) runs to its end."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    raise KeyboardInterrupt


def write_out(args: argparse.Namespace, action: np.ndarray | None, results: dict[str, dict[str, Any]],
              logs: Path | None, interrupted: bool = False, error: str | None = None) -> None:
    """--out, however the evaluation ended: the results (none unless it completed), and how it ended."""
    if not args.out:
        return
    played = {} if action is None else {"fixed_action": [round(float(v), 6) for v in action],
                                        "controls": dataclasses.asdict(controls_of(args.config))}
    done = not interrupted and error is None
    Path(args.out).write_text(json.dumps({"opponent": args.opponent, "rounds": args.rounds, "seed": args.seed,
                                          "sampled": args.sample,
                                          "checkpoint": args.checkpoint, **played, "results": results,
                                          "completed": done, "interrupted": interrupted, "error": error,
                                          "logs": str(logs) if logs is not None else None}, indent=1))


def start_problem(args: argparse.Namespace) -> str | None:
    """Why the command cannot start (a bad checkpoint, round count, --config or --fixed-action), or None: each is
    found before any battle, not after an evaluation played without it."""
    if args.rounds < 1:
        return f"--rounds {args.rounds}: play at least one round"
    if args.no_baselines and args.fixed_action is not None:
        return "--fixed-action is the constant-action side's, which --no-baselines leaves out: drop one of them"
    try:
        if (problem := checkpoint_problem(args.checkpoint, controls_of(args.config))) is not None:
            return problem
        if not args.no_baselines:
            constant_action(args.config, args.fixed_action)
    except ValueError as exc:  # a ConfigError too: the file, or a key of its [controls]
        return str(exc)
    return None


def headline(args: argparse.Namespace, action: np.ndarray | None) -> str:
    """What was played: the rounds, and who took our tank's place (the constant action with its form)."""
    from actor.bots.tankroyale.baseline import describe

    how = "sampled from the policy" if args.sample else "deterministic"
    line = f"{args.rounds} rounds against {args.opponent} (seed {args.seed}), {how}, nothing sent"
    if action is None:
        return line + ":"
    c = controls_of(args.config)
    return (f"{line}; in our tank's place in the same battles, the baselines {FIXED}, {', '.join(BASELINES)}:\n"
            f"  {FIXED} = {describe(action)} (speed, body turn, aim, power) every decision, no network, in the "
            f"checkpoint's form (aim {c.aim}, radar {c.radar}, move {c.move}, speed {c.speed}, repeat {c.repeat}, observe {c.observe}"
            f"{', react' if c.react else ''}): "
            "what the controls alone win")
