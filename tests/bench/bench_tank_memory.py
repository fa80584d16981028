"""Does memory pay in the tank's game? The same ladder run with the LSTM's state and without it (memoryless).

    .venv/bin/python tests/bench/bench_tank_memory.py --rung movers --steps 30000 --seeds 0,1 \\
        --env aim=gf --env move=orbit --env observe=duel --env react=true

Each (variant, seed) is one `bench_tank_ladder.py` run in a process of its own (`--jobs` at a time, one torch
thread each): "recurrent" with the learner's defaults, "memoryless" with `--set memoryless=true`, which resets
the LSTM's state before every step of the actor and both critics (the same network, the same size), and
without the previous action and reward among its inputs: no history at all, only the observation. Both evaluate the deterministic policy on the rung's opponents, the same seeds. The runs' logs and
JSON lines go to --out (a run already there with its JSON line is read back, not run again).

Last line: one JSON object: for each opponent, recurrent_<opponent> and memoryless_<opponent> (destroyed
rate, the mean over seeds, and per seed), hit rates likewise, and recurrent_minus_memoryless_<opponent>, held-out
opponents (`--held-out`) included.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# memoryless: no LSTM state, and no previous action or reward among the inputs either (those are history too)
VARIANTS = {"recurrent": [], "memoryless": ["--set", "memoryless=true", "--set", "prev_action=false", "--set",
                                            "prev_reward=false"]}


def command(variant: str, seed: int, args: argparse.Namespace) -> list[str]:
    cmd = [sys.executable, str(ROOT / "tests/bench/bench_tank_ladder.py"), "--rung", args.rung, "--steps",
           str(args.steps), "--seed", str(seed), "--episodes", str(args.episodes), "--threads", "1", "--log-every",
           str(args.log_every)]
    if args.held_out:
        cmd += ["--held-out", args.held_out]
    for pair in args.env:
        cmd += ["--env", pair]
    for pair in args.set:
        cmd += ["--set", pair]
    return cmd + VARIANTS[variant]


def result(log: Path) -> dict[str, Any] | None:
    """The run's final JSON line, or None while it has none."""
    try:
        lines = log.read_text().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def run_all(args: argparse.Namespace, out: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """Every (variant, seed), `--jobs` at a time; runs already finished in `out` are read back."""
    todo = [(v, s) for s in args.seeds for v in VARIANTS]
    done = {k: r for k in todo if (r := result(out / f"{k[0]}-s{k[1]}.log")) is not None}
    waiting = [k for k in todo if k not in done]
    running: dict[tuple[str, int], subprocess.Popen] = {}
    try:
        while waiting or running:
            while waiting and len(running) < args.jobs:
                key = waiting.pop(0)
                log = (out / f"{key[0]}-s{key[1]}.log").open("w")
                print(f"start {key[0]} seed {key[1]}", flush=True)
                running[key] = subprocess.Popen(command(*key, args), stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
            for key, proc in list(running.items()):
                if proc.poll() is not None:
                    del running[key]
                    got = result(out / f"{key[0]}-s{key[1]}.log")
                    if proc.returncode != 0 or got is None:
                        raise SystemExit(f"{key[0]} seed {key[1]} failed ({proc.returncode}): see {out}")
                    done[key] = got
                    print(f"done {key[0]} seed {key[1]} after {got.get('seconds')} s", flush=True)
            time.sleep(2)  # children's exits: nothing to wait on but their processes
    finally:
        for proc in running.values():
            proc.kill()
    return done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rung", default="movers")
    ap.add_argument("--steps", type=int, default=30_000)
    ap.add_argument("--seeds", type=lambda v: [int(s) for s in v.split(",")], default=[0, 1])
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--held-out", default="", metavar="A,B",
                    help="opponents never trained against, evaluated beside the rung's (bench_tank_ladder.py's flag)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--jobs", type=int, default=2, help="runs at a time (one torch thread each)")
    ap.add_argument("--log-every", type=int, default=10_000)
    ap.add_argument("--out", default="", help="folder for the runs' logs (default runs/tank-memory-<rung>)")
    args = ap.parse_args()
    out = Path(args.out or f"runs/tank-memory-{args.rung}")
    out.mkdir(parents=True, exist_ok=True)
    done = run_all(args, out)
    opponents = sorted({k[len("destroyed_"):] for r in done.values() for k in r if k.startswith("destroyed_")})
    figures: dict[str, Any] = {"rung": args.rung, "steps": args.steps, "seeds": args.seeds, "env": args.env,
                               "held_out": args.held_out}
    for o in opponents:
        for v in VARIANTS:
            per_seed = [done[(v, s)][f"destroyed_{o}"] for s in args.seeds]
            hits = [done[(v, s)][f"hit_rate_{o}"] for s in args.seeds]
            figures[f"{v}_{o}"] = round(sum(per_seed) / len(per_seed), 3)
            figures[f"{v}_{o}_per_seed"] = per_seed
            figures[f"{v}_hit_rate_{o}"] = round(sum(hits) / len(hits), 3)
        figures[f"recurrent_minus_memoryless_{o}"] = round(figures[f"recurrent_{o}"] - figures[f"memoryless_{o}"], 3)
        figures[f"recurrent_minus_memoryless_hit_rate_{o}"] = round(
            figures[f"recurrent_hit_rate_{o}"] - figures[f"memoryless_hit_rate_{o}"], 3)
        print(f"{o:12s} destroyed: recurrent {figures[f'recurrent_{o}']:.2f} "
              f"{figures[f'recurrent_{o}_per_seed']}, memoryless {figures[f'memoryless_{o}']:.2f} "
              f"{figures[f'memoryless_{o}_per_seed']}; hit rate {figures[f'recurrent_hit_rate_{o}']:.2f} vs "
              f"{figures[f'memoryless_hit_rate_{o}']:.2f}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
