"""Does a resume from an empty replay undo what the tank learned? TankRoyale-v0's `mixed` rung, in process.

A tank trained for `--first` decisions (the learner's own parts, as bench_tank_ladder.py) is copied twice and
each copy trains `--then` decisions more, as a learner resumed from its checkpoint (weights and optimiser):
one with the replay it had (a replay saved at the stop, `save_replay`), one from an empty replay (the default
before: its first gradient steps sample the few thousand decisions since learning_starts). The deterministic
policy plays `--episodes` fixed-seed rounds against each of the six before the resume and after each.

    python tests/bench/bench_tank_resume.py --seed 0 --first 20000 --then 10000

Last line: one JSON object (destroyed rate per opponent and the mean for each of: before, kept, empty).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.bench_tank_ladder import ENV, SIX, assess, line  # noqa: E402
from tests.bench.inprocess import make_sac, new_replay, run_settings, train  # noqa: E402


def summary(got: dict[str, dict]) -> dict[str, Any]:
    out = {o.lower(): round(f["destroyed"], 3) for o, f in got.items()}
    out["mean"] = round(float(np.mean([f["destroyed"] for f in got.values()])), 3)
    out["taken"] = round(float(np.mean([f["taken"] for f in got.values()])), 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--first", type=int, default=20_000, help="decisions before the resume")
    ap.add_argument("--then", type=int, default=10_000, help="decisions after it")
    ap.add_argument("--episodes", type=int, default=20, help="evaluation rounds per opponent")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    kwargs: dict[str, Any] = {"max_turns": 1500, "still": False}
    train_kwargs = kwargs | {"opponent": "+".join(SIX)}
    run = run_settings(["learning_starts=2000"], hidden=128)
    start = time.time()
    torch.manual_seed(args.seed)
    sac = make_sac(ENV, train_kwargs, run)
    replay = new_replay(run, sac, args.seed)
    train(ENV, train_kwargs, args.first, run, args.seed, sac=sac, replay=replay)
    results = {"before": assess(sac, SIX, kwargs, args.episodes)}
    print(f"trained {args.first} decisions in {time.time() - start:.0f} s", flush=True)
    kept, empty = copy.deepcopy(sac), copy.deepcopy(sac)
    train(ENV, train_kwargs, args.then, run, args.seed + 1, sac=kept, replay=replay)
    results["kept"] = assess(kept, SIX, kwargs, args.episodes)
    train(ENV, train_kwargs, args.then, run, args.seed + 1, sac=empty)
    results["empty"] = assess(empty, SIX, kwargs, args.episodes)
    for name, got in results.items():
        for o, f in got.items():
            print(line(f"{name} {o}"[:12], f), flush=True)
    out = {"seed": args.seed, "first": args.first, "then": args.then, "seconds": round(time.time() - start)}
    out |= {name: summary(got) for name, got in results.items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
