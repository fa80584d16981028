"""`saclstm tank-eval`: how good is a checkpoint? Deterministic battles that send nothing, beside two baselines.

    saclstm tank-eval --checkpoint runs/tank-.../checkpoints/live.sacl --opponent SpinBot --rounds 100

Three matchups play the same battles (one game of `rounds` rounds each, the same server seed, so the
same start positions): our tank (deterministic policy from the checkpoint, eval mode: no experience
leaves it, no learner needed) against the opponent, then RandomBot and HeadOnBot in our tank's place.
Each gets its win rate with a 95% Wilson interval and its mean round score, and how it fought (from the
server's observer ticks, actor/bots/tankroyale/fight.py): its hit rate, the damage it dealt and took per
round, and of the rounds it won, the share it won by destroying the opponent and by outlasting it (the
opponent died otherwise, of inactivity or a wall, or the round ended). `--out` writes them as JSON.
`--replay DIR` writes a page per round our tank played (DIR/round-001.html, ...;
actor/bots/tankroyale/replay.py) to watch in a browser. The matchups run side by side, each in an arena
of its own (our server on a thread, two bot processes). A checkpoint that does not load, or whose actor
does not fit the tank, stops the command before any battle (actor/bots/tankroyale/fits.py).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from actor.bots.tankroyale.engine import Setup
from actor.bots.tankroyale.fits import checkpoint_problem
from deploy.children import Children, free_port
from deploy.tank.battle import OURS, Arena, RoundRecord, fight_stats, wilson

BASELINES = ("RandomBot", "HeadOnBot")


def summarise(records: list[RoundRecord]) -> dict[str, Any]:
    """Win rate (with its interval), mean scores and turns, and how the rounds were fought (fight_stats)."""
    n, wins = len(records), sum(r.won for r in records)
    low, high = wilson(wins, n)
    return {"rounds": n, "wins": wins, "win_rate": wins / n if n else 0.0, "ci95": [round(low, 3), round(high, 3)],
            "mean_score": sum(r.score for r in records) / n if n else 0.0,
            "mean_opponent_score": sum(r.opponent_score for r in records) / n if n else 0.0,
            "mean_turns": sum(r.turns for r in records) / n if n else 0.0,
            **fight_stats([r.__dict__ for r in records])}


def report(side: str, r: dict[str, Any]) -> str:
    """One side's lines: its win rate, then how it fought (a win rate alone hides how the rounds were won)."""
    return (f"  {side:<13} win rate {r['win_rate']:.2f} (95% CI {r['ci95'][0]:.2f}-{r['ci95'][1]:.2f})   "
            f"mean score {r['mean_score']:.1f} vs {r['mean_opponent_score']:.1f}   mean turns {r['mean_turns']:.0f}\n"
            f"  {'':<13} hit rate {r['hit_rate']:.2f} ({r['hits']} of {r['shots']} shots)   damage per round "
            f"dealt {r['mean_dealt']:.1f}, taken {r['mean_taken']:.1f}   " + (
                f"of the wins: destroyed {r['destroyed_rate']:.2f}, outlasted {r['outlasted_rate']:.2f} "
                f"(won by destroying: {r['win_rate_destroyed']:.2f} of rounds)" if r["wins"] else "no wins"))


def evaluate(checkpoint: str | None, opponent: str, rounds: int, seed: int = 0, baselines: bool = True,
             tps: int = -1, log_dir: Path | None = None, timeout_s: float = 3600.0,
             replay: Path | None = None, config: str | None = None) -> dict[str, dict[str, Any]]:
    """Win rates of our tank (and the baselines) against `opponent`; {side: summary}. Stops everything it starts.
    `replay`: a folder for a page per round our tank played; `config`: the TOML the tank reads [controls] from."""
    from actor.bots.tankroyale.server import run_server

    log_dir = log_dir or Path(tempfile.mkdtemp(prefix="tank-eval-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    children = Children(log_dir)
    sides = ([OURS] if checkpoint else []) + (list(BASELINES) if baselines else [])
    setup = Setup(number_of_rounds=rounds)
    servers: list[Any] = []
    arenas: list[Any] = []
    records: dict[str, list[Any]] = {side: [] for side in sides}
    try:
        for i, side in enumerate(sides):
            server = run_server(tps=tps, seed=seed, setup=setup)  # the same seed: the same battles for each side
            servers.append(server)
            if side == OURS:
                children.start(side, "deploy", "tank", "--eval", "--checkpoint", str(checkpoint), "--server", server.url,
                               "--name", OURS, "--actor-id", "tank-eval", "--ingest", f"tcp://127.0.0.1:{free_port()}",
                               "--weights", f"tcp://127.0.0.1:{free_port()}", "--retry-s", "30",
                               *(["--config", config] if config else []))
            else:
                children.start(side, "actor.bots.tankroyale.opponents", side, "--server", server.url, "--seed", str(seed))
            children.start(f"{side}-vs-{opponent}", "actor.bots.tankroyale.opponents", opponent, "--server", server.url,
                           "--seed", str(seed + 1))
            played = [False]

            def once(played: list[bool] = played) -> bool:
                first, played[0] = not played[0], True
                return first
            arenas.append(Arena(i, server.url, None, side, [opponent], setup, once, records[side].append,
                                replay=replay if side == OURS else None).start())
        deadline = time.monotonic() + timeout_s
        for arena in arenas:
            arena.join(max(0.0, deadline - time.monotonic()))
            if arena.error:
                raise RuntimeError(f"{arena.error}\n{children.tail(sides[arena.index])}")
    finally:
        for arena in arenas:
            arena.stop()
        children.stop(timeout=20)
        for server in servers:
            server.close()
    return {side: summarise(records[side]) for side in sides}


def parser() -> argparse.ArgumentParser:
    from actor.bots.tankroyale.opponents import OPPONENTS

    p = argparse.ArgumentParser(prog="saclstm tank-eval", description="Play a checkpoint deterministically against an "
                                "opponent, beside two baselines; nothing is sent to a learner.")
    p.add_argument("--checkpoint", required=True, help="the checkpoint file to play (e.g. runs/.../live.sacl)")
    p.add_argument("--opponent", default="SpinBot", choices=sorted(OPPONENTS), help="who to play against")
    p.add_argument("--rounds", type=int, default=100, help="rounds per matchup")
    p.add_argument("--seed", type=int, default=0, help="the battles' seed (start positions)")
    p.add_argument("--tps", type=int, default=-1, help="turns per second; -1: as fast as the bots answer")
    p.add_argument("--no-baselines", action="store_true", help="play only our tank")
    p.add_argument("--out", help="write the results here as JSON")
    p.add_argument("--config", help="the run's TOML: our tank plays with its [controls] (the action's form it was "
                   "trained with; default: TankControls' defaults, which tank-train's deploy/tank.toml uses)")
    p.add_argument("--replay", metavar="DIR", help="write each round our tank played as a page to watch in a "
                   "browser: DIR/round-001.html, ...")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if (problem := checkpoint_problem(args.checkpoint)) is not None:
        print(f"saclstm tank-eval: {problem}", file=sys.stderr)
        return 2
    if args.rounds < 1:
        print(f"saclstm tank-eval: --rounds {args.rounds}: play at least one round", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stopped as Ctrl-C stops it: everything it started ends
    try:
        results = evaluate(args.checkpoint, args.opponent, args.rounds, args.seed, not args.no_baselines, args.tps,
                           replay=Path(args.replay) if args.replay else None, config=args.config)
    except KeyboardInterrupt:
        print("saclstm tank-eval: stopped", file=sys.stderr)
        return 130
    print(f"{args.rounds} rounds against {args.opponent} (seed {args.seed}), deterministic, nothing sent:")
    for side, r in results.items():
        print(report(side, r))
    if args.replay:
        pages = sorted(Path(args.replay).glob("round-*.html"))
        print(f"replays: {len(pages)} pages in {args.replay}" + (f" ({pages[0].name} ...)" if pages else ""))
    if args.out:
        Path(args.out).write_text(json.dumps({"opponent": args.opponent, "rounds": args.rounds, "seed": args.seed,
                                              "checkpoint": args.checkpoint, "results": results}, indent=1))
    return 0
