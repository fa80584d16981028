"""Which parts of a learned tank win and which lose, against its form's constant action.

    .venv/bin/python tests/bench/bench_tank_parts.py --checkpoint runs/<run>/checkpoints/live.sacl \
        --config deploy/tank.toml --opponents Dodger,Surfer,StopAndGo --rounds 40
    .venv/bin/python tests/bench/bench_tank_parts.py   # the newest bench_tank_learning.py run's checkpoint

A checkpoint's actor plays its form (the config's [controls]) in process, on the rules engine
(TankRoyale-v0's), deterministic, the same fixed-seed rounds for every side: as it learned; with one part of
its action (speed, turn, aim, power) replaced by the constant action's, the others its own; with one part its
own and the others the constant action's; and the constant action alone (tank-eval's baseline). A win rate
learned below the constant action says that learning lost something; this says where: a part whose own
value loses ("only <part> learned" below "constant") is where training went wrong, whatever the rest does.

The numpy actor plays it (actor/policy.py, what a bot runs), with the previous action and reward fed back as
on an actor. Reports per side and opponent the share of rounds destroyed and the damage taken a round.
Last line: one JSON object: destroyed_<side>_<opponent> and taken_<side>_<opponent>, sides named
learned, constant, no_<part> and only_<part>.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actor.bots.tankroyale.baseline import fixed_action, parse_action  # noqa: E402
from actor.bots.tankroyale.brain import ACTION, TankControls  # noqa: E402
from actor.bots.tankroyale.env import TankRoyaleEnv  # noqa: E402
from actor.policy import LocalPolicy  # noqa: E402
from actor.store import policy_from_checkpoint  # noqa: E402
from protocol.checkpoint import CheckpointError, decode_checkpoint  # noqa: E402
from protocol.config import build, read_toml  # noqa: E402
from protocol.scaling import to_policy  # noqa: E402

SEED = 10_000  # the ladder's evaluation seeds (tests/bench/inprocess.py), as bench_tank_baselines plays them


def sides() -> dict[str, np.ndarray]:
    """Each side as a mask of the parts the constant action overrides."""
    out = {"learned": np.zeros(len(ACTION), bool)}
    for i, part in enumerate(ACTION):
        out[f"no_{part}"] = np.arange(len(ACTION)) == i
        out[f"only_{part}"] = np.arange(len(ACTION)) != i
    out["constant"] = np.ones(len(ACTION), bool)
    return out


def play(policy: LocalPolicy, env: TankRoyaleEnv, fixed: np.ndarray, rounds: int) -> dict[str, float]:
    """`rounds` fixed-seed rounds, the constant action's parts where `fixed` is set (NaN: the policy's own)."""
    destroyed = taken = 0.0
    own = np.isnan(fixed)
    for k in range(rounds):
        obs, _ = env.reset(seed=int(np.random.default_rng([SEED, k]).integers(2**31 - 1)))
        state, prev_a, prev_r = policy.initial_state(), np.zeros(policy.arch.act_dim, np.float32), 0.0
        while True:
            action, state = policy.act(obs, prev_a, prev_r, state, deterministic=True)
            action = np.where(own, action, fixed).astype(np.float32)
            obs, reward, terminated, truncated, info = env.step(action)
            prev_a = to_policy(action, policy.low, policy.high)  # fed back as an actor feeds the action it played
            prev_r = float(reward)
            if terminated or truncated:
                break
        destroyed += bool(info["won"] and info["tally"]["destroyed"] > 0)
        taken += info["tally"]["taken"]
    return {"destroyed": destroyed / rounds, "taken": taken / rounds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default="", help="a learner checkpoint (default: the newest bench_tank_learning.py "
                    "run's, runs/bench-tank-*/checkpoints/live.sacl, as `make bench` leaves one before this)")
    ap.add_argument("--config", default="deploy/tank.toml", help="the tank-train TOML whose [controls] it learned in")
    ap.add_argument("--opponents", default="Dodger,Orbiter,Oscillator,StopAndGo,Reverser,Surfer,Profiler")
    ap.add_argument("--rounds", type=int, default=40, help="rounds per side and opponent")
    ap.add_argument("--action", default="", help="the constant action (A,B,C,D; default: the form's, as tank-eval)")
    args = ap.parse_args()
    if not args.checkpoint:
        found = sorted(Path("runs").glob("bench-tank-*/checkpoints/live.sacl"), key=lambda p: p.stat().st_mtime)
        if not found:
            sys.exit("no --checkpoint, and no runs/bench-tank-*/checkpoints/live.sacl: run "
                     "tests/bench/bench_tank_learning.py first, or name a checkpoint")
        args.checkpoint = str(found[-1])
    controls = build(TankControls, read_toml(args.config, "controls"), {})
    constant = parse_action(args.action) if args.action else fixed_action(controls)
    try:
        meta, tensors = decode_checkpoint(Path(args.checkpoint).read_bytes())
        policy = policy_from_checkpoint(meta, tensors)
    except (OSError, CheckpointError) as exc:
        sys.exit(f"{args.checkpoint}: {exc}")
    kwargs: dict[str, Any] = dataclasses.asdict(controls)
    print(f"{args.checkpoint}: {meta.get('grad_steps', '?')} gradient steps; the constant action {constant.tolist()}; "
          f"{args.rounds} rounds each, destroyed (damage taken a round)")
    figures: dict[str, float] = {}
    names = list(sides())
    print(f"{'opponent':12s}" + "".join(f"{n:>16s}" for n in names))
    for opponent in args.opponents.split(","):
        row = []
        for name, mask in sides().items():
            # A fresh env for each side: an opponent's gun that counts where we go (the Surfer's) and the surf
            # form's own counts carry over from round to round, so a side played after others would meet an
            # opponent that had learned from them.
            env = TankRoyaleEnv(opponent=opponent, max_turns=1500, **kwargs)
            if env.observation_space.shape[0] != policy.arch.obs_dim:
                sys.exit(f"the checkpoint reads {policy.arch.obs_dim} numbers, the config's form gives "
                         f"{env.observation_space.shape[0]}: not the form it learned in")
            f = play(policy, env, np.where(mask, constant, np.nan), args.rounds)
            figures[f"destroyed_{name}_{opponent.lower()}"] = round(f["destroyed"], 3)
            figures[f"taken_{name}_{opponent.lower()}"] = round(f["taken"], 1)
            row.append(f"{f['destroyed']:.2f} ({f['taken']:4.1f})")
        print(f"{opponent:12s}" + "".join(f"{c:>16s}" for c in row), flush=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
