"""The Tank Royale ladder: what the tank learns in TankRoyale-v0, rung by rung, trained in-process.

Rungs, from easy to the real game (each an opponent set and whether our tank may drive):
    aim     SittingDuck, our body fixed: aiming and firing only
    duck    SittingDuck
    spin    SpinBot
    mixed   SittingDuck+SpinBot+Walls+RamFire+Tracker+TrackFire, one drawn per round
    movers  Oscillator+Dodger+Orbiter: opponents that beat every constant action
    nine    the six and the three movers (tank-train's pool)
    ten     the nine and Fire, which stands and sweeps its gun (no training opponent of the nine stands and fires)
    gf      the movers and the Profiler, whose guess-factor gun learns where we go (as the Surfer's does)
    habit   StopAndGo and the Oscillator: the two with a period
    habit-gf  the same and the Profiler: a guess-factor gunner to learn the gun's answer to (its power)
Training uses the learner's own parts (tests/bench/inprocess.py: SequenceReplay, SAC.update, UTD 1);
evaluation plays the deterministic policy for `--episodes` fixed-seed rounds against each opponent
of the rung (and of `--held-out`, at the end) and reports the win rate, the share of rounds in which our bullets or rams destroyed
the opponent, the hit rate (hits / shots) and damage dealt and taken per round, beside the same
figures for the untrained policy (same seeds). The env's action form is set with --env
(aim=bearing|rate, radar=lock|spin, move=bearing|rate, repeat=N, max_turns=N), learner settings with --set.

    python tests/bench/bench_tank_ladder.py --rung duck --steps 20000
    python tests/bench/bench_tank_ladder.py --rung spin --env aim=rate --env radar=spin --env move=rate  # the first form

Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import actor.bots.tankroyale.env  # noqa: E402,F401 - registers TankRoyale-v0
from learner.sac import SAC  # noqa: E402
from tests.bench.inprocess import Bots, make_sac, play, run_settings, train  # noqa: E402

ENV = "TankRoyale-v0"
SIX = ("SittingDuck", "SpinBot", "Walls", "RamFire", "Tracker", "TrackFire")
MOVERS = ("Oscillator", "Dodger", "Orbiter")  # they dodge, keep a period, reverse at random (opponents/movers.py)
RUNGS: dict[str, tuple[tuple[str, ...], bool]] = {
    "aim": (("SittingDuck",), False),
    "duck": (("SittingDuck",), True),
    "spin": (("SpinBot",), True),
    "duckspin": (("SittingDuck", "SpinBot"), True),
    "mixed": (SIX, True),
    "movers": (MOVERS, True),
    "osc": (("Oscillator",), True),
    "nine": (SIX + MOVERS, True),
    "ten": (SIX + MOVERS + ("Fire",), True),
    "gf": (MOVERS + ("Profiler",), True),
    "nine-gf": (SIX + MOVERS + ("Profiler",), True),  # the nine and a guess-factor gunner (the surf form)
    "habit": (("StopAndGo", "Oscillator"), True),  # the two with a period: what memory could predict
    "habit-gf": (("StopAndGo", "Oscillator", "Profiler"), True),  # and a guess-factor gunner: its gun's answer learned
}


def fight(bots: Bots, episodes: int) -> dict[str, float]:
    """Win rate, destroyed rate, hit rate and damage per round over the first `episodes` ended rounds."""
    infos = bots.infos[:episodes]
    tallies = [i["tally"] for i in infos]
    shots = sum(t["shots"] for t in tallies)
    return {"win": float(np.mean([i["won"] for i in infos])),
            "destroyed": float(np.mean([t["destroyed"] > 0 and i["won"] for t, i in zip(tallies, infos)])),
            "hit_rate": sum(t["hits"] for t in tallies) / shots if shots else 0.0,
            "dealt": float(np.mean([t["dealt"] for t in tallies])),
            "taken": float(np.mean([t["taken"] for t in tallies])),
            "turns": float(np.mean([i["turn"] for i in infos])),
            "mean_action": [round(float(v), 2) for v in bots.action_sum / max(bots.action_steps, 1)],
            "return": float(np.mean(bots.returns[:episodes]))}


def assess(sac: SAC, opponents: tuple[str, ...], kwargs: dict[str, Any], episodes: int) -> dict[str, dict]:
    return {o: fight(play(sac, ENV, {**kwargs, "opponent": o}, episodes), episodes) for o in opponents}


def line(name: str, f: dict[str, float]) -> str:
    return (f"{name:12s} win {f['win']:.2f} destroyed {f['destroyed']:.2f} hit {f['hit_rate']:.2f} "
            f"dealt {f['dealt']:5.1f} taken {f['taken']:5.1f} turns {f['turns']:6.0f} return {f['return']:7.2f} "
            f"mean action {f['mean_action']}")


def env_kwargs(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"max_turns": 1500}
    for pair in pairs:
        key, _, raw = pair.partition("=")
        out[key] = int(raw) if raw.lstrip("-").isdigit() else raw
    return out


def save(sac: SAC, path: str, steps: int) -> None:
    """The learner as the learner daemon saves it; its actor in the tank's own action units (the ladder trains in
    [-1, 1]: the checkpoint's arch carries TankRoyale-v0's bounds, which the actor rescales to)."""
    from dataclasses import replace

    from actor.bots.tankroyale.brain import ACT_HIGH, ACT_LOW
    from learner.state import snapshot
    from protocol.checkpoint import encode_checkpoint, write_atomic

    arch = replace(sac.arch, act_low=tuple(map(float, ACT_LOW)), act_high=tuple(map(float, ACT_HIGH)))
    meta = {"grad_steps": steps, "version": 1, "arch": arch.to_wire()}
    write_atomic(Path(path), encode_checkpoint(meta, snapshot(sac)))
    print(f"saved {path}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rung", default="duck", choices=list(RUNGS))
    ap.add_argument("--steps", type=int, default=20_000, help="env steps of training (all bots together)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--episodes", type=int, default=20, help="evaluation rounds per opponent")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a learner setting; repeatable")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="a TankRoyale-v0 kwarg")
    ap.add_argument("--held-out", default="", metavar="A,B",
                    help="opponents the rung does not train against, evaluated at the end beside the rung's")
    ap.add_argument("--log-every", type=int, default=5000, help="evaluate along the way every N steps (0: never); "
                    "the run is the same as without (play puts torch's random stream back after each evaluation)")
    ap.add_argument("--log-from", type=int, default=0, help="evaluate along the way only from this many steps on "
                    "(how far the policy swings late in a run, without paying for the early evaluations)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--save", default="", metavar="PATH", help="write the trained learner as a checkpoint (the "
                    "learner's format: `saclstm tank-eval --checkpoint PATH` plays it in real battles)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    opponents, drive = RUNGS[args.rung]
    held_out = tuple(o for o in args.held_out.split(",") if o and o not in opponents)
    evaluated = opponents + held_out
    kwargs = env_kwargs(args.env) | {"still": not drive}
    train_kwargs = kwargs | {"opponent": "+".join(opponents)}
    run = run_settings(["learning_starts=2000", *args.set], hidden=128)
    torch.manual_seed(args.seed)
    untrained = assess(make_sac(ENV, train_kwargs, run), evaluated, kwargs, args.episodes)
    for o, f in untrained.items():
        print(line(f"untrained {o}"[:12], f), flush=True)
    start = time.time()
    curve: list[dict[str, Any]] = []

    def along(sac: SAC, steps: int, bots: Bots) -> None:
        recent = bots.infos[-20:]
        won = np.mean([i["won"] for i in recent]) if recent else float("nan")
        m = bots.learner
        print(f"  {steps} steps, {time.time() - start:.0f} s, training rounds {len(bots.infos)}, recent win {won:.2f}, "
              f"alpha {m.get('alpha', float('nan')):.4f}, entropy {m.get('entropy', float('nan')):.2f}", flush=True)
        if steps >= max(run.cfg.learning_starts, args.log_from):
            got = assess(sac, opponents, kwargs, args.episodes)
            curve.append({"steps": steps, **{o: round(f["win"], 3) for o, f in got.items()},
                          "destroyed_mean": round(float(np.mean([f["destroyed"] for f in got.values()])), 3)})
            for o, f in got.items():
                print("    " + line(o, f), flush=True)

    sac = train(ENV, train_kwargs, args.steps, run, args.seed, args.log_every, on_steps=along)
    if args.save:
        save(sac, args.save, args.steps)
    final = assess(sac, evaluated, kwargs, args.episodes)
    for o, f in final.items():
        print(line(o + " (held out)" * (o in held_out), f), flush=True)
    out: dict[str, Any] = {"rung": args.rung, "steps": args.steps, "seed": args.seed, "settings": args.set,
                           "env": args.env, "held_out": list(held_out), "seconds": round(time.time() - start)}
    for o in evaluated:
        key = o.lower()
        out |= {f"win_rate_{key}": final[o]["win"], f"destroyed_{key}": final[o]["destroyed"],
                f"hit_rate_{key}": round(final[o]["hit_rate"], 3), f"untrained_win_rate_{key}": untrained[o]["win"],
                f"untrained_hit_rate_{key}": round(untrained[o]["hit_rate"], 3)}
    out["curve"] = curve
    print(json.dumps(out))


if __name__ == "__main__":
    main()
