"""A trained tank in process: a checkpoint played on the rules engine beside the constant action of its form.

    .venv/bin/python tests/bench/bench_tank_checkpoint.py --checkpoint runs/.../live.sacl --config deploy/tank.toml \\
        --opponents Walls,Surfer --rounds 80
    ... --env kill_shot=1        # the same checkpoint with one control changed (both sides get it)

Why: `saclstm tank-eval` plays real battles on our server, about 100 rounds a minute and a core's worth of CPU;
TankRoyale-v0 plays the same rules in process, many times faster, so a change to the controls (a knob of
`[controls]`) can be tried on a trained checkpoint, with the constant action of the same form beside it in the
same seeds, before anything is trained with it. The checkpoint plays as the bot does (policy mean, the previous
action and reward fed back, the state reset each round); the rounds are `bench_tank_baselines.py`'s seeds, so
the constant action's figures match that benchmark's. Figures differ from real battles by the engine's turn
timing (none here) and the seeds; compare sides of one run, not runs of the two tools.
Last line: one JSON object, destroyed_<side>_<opponent> and hit_<side>_<opponent> for each opponent.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import tomllib

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench_tank_baselines import round_seed  # noqa: E402  (its rounds: its constant-action figures are this one's)

from actor.bots.tankroyale.env import TankRoyaleEnv  # noqa: E402
from actor.policy import LocalPolicy  # noqa: E402
from actor.store import policy_from_checkpoint  # noqa: E402
from protocol.checkpoint import decode_checkpoint  # noqa: E402
from protocol.scaling import to_policy  # noqa: E402

MAX_TURNS = 3000  # a real round has no turn limit; the inactivity rule ends the slow ones well before this


def play(env: TankRoyaleEnv, act: Any, rounds: int) -> dict[str, float]:
    """`act(obs, reward, first)` -> action in the tank's units, each decision of `rounds` rounds. Won, won by
    destroying, hit rate, damage taken a round, the mean action (what the policy chose, before `fixed`)."""
    won = destroyed = shots = hits = 0
    taken = 0.0
    actions: list[np.ndarray] = []
    for k in range(rounds):
        obs, _ = env.reset(seed=round_seed(k))
        reward, first = 0.0, True
        while True:
            actions.append(np.asarray(act(obs, reward, first), np.float64))
            obs, reward, terminated, truncated, info = env.step(actions[-1])
            first = False
            if terminated or truncated:
                break
        won += info["won"]
        destroyed += info["won"] and info["tally"]["destroyed"] > 0
        shots, hits = shots + info["tally"]["shots"], hits + info["tally"]["hits"]
        taken += info["tally"]["taken"]
    return {"won": won / rounds, "destroyed": destroyed / rounds, "hit_rate": hits / shots if shots else 0.0,
            "taken": taken / rounds, "mean_action": np.round(np.mean(actions, axis=0), 2).tolist()}


def learned(policy: LocalPolicy) -> Any:
    """The bot's loop (actor/client.py): deterministic, the previous action in [-1, 1] and reward fed back."""
    low, high = policy.low, policy.high
    mem: dict[str, Any] = {}

    def act(obs: np.ndarray, reward: float, first: bool) -> np.ndarray:
        if first:
            mem.update(state=policy.initial_state(), prev=np.zeros(len(low), np.float32))
        action, mem["state"] = policy.act(np.asarray(obs, np.float32), mem["prev"], float(reward), mem["state"],
                                          deterministic=True)
        mem["prev"] = to_policy(action, low, high)
        return action

    return act


def form(config: str, pairs: list[str]) -> dict[str, Any]:
    """TankRoyale-v0's form kwargs: the config's [controls], then --env pairs over them."""
    out: dict[str, Any] = {}
    if config:
        out.update({k: str(v) for k, v in tomllib.loads(Path(config).read_text()).get("controls", {}).items()})
    for pair in pairs:
        key, _, raw = pair.partition("=")
        out[key] = raw
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--config", default="", help="the run's TOML: its [controls] are the form played")
    ap.add_argument("--opponents", default="Walls,Surfer,Profiler,Pulse,Reverser,Wanderer,Matcher")
    ap.add_argument("--rounds", type=int, default=80)
    ap.add_argument("--action", default="-4,0,0,2", help="the constant action played beside it (empty: none)")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="a form kwarg over the config's")
    args = ap.parse_args()
    meta, tensors = decode_checkpoint(Path(args.checkpoint).read_bytes())
    policy = policy_from_checkpoint(meta, tensors)
    kwargs = form(args.config, args.env)
    print(f"checkpoint {args.checkpoint} ({meta.get('grad_steps', 0)} gradient steps), form {kwargs}, "
          f"{args.rounds} rounds each", flush=True)
    const = np.array([float(v) for v in args.action.split(",")], np.float32) if args.action else None
    out: dict[str, Any] = {"rounds": args.rounds, "env": kwargs}
    for name in args.opponents.split(","):
        # each side its own opponent: a guess-factor gun's counts outlive a round
        sides = {"learned": play(TankRoyaleEnv(opponent=name, max_turns=MAX_TURNS, **kwargs), learned(policy),
                                 args.rounds)}
        if const is not None:
            sides["constant"] = play(TankRoyaleEnv(opponent=name, max_turns=MAX_TURNS, **kwargs),
                                     lambda obs, reward, first: const, args.rounds)
        print(f"{name:12s} " + "  ".join(f"{s} {f['destroyed']:.2f} (won {f['won']:.2f}, hit {f['hit_rate']:.2f}, "
                                         f"taken {f['taken']:.1f}, mean action {f['mean_action']})" for s, f in sides.items()),
              flush=True)
        for s, f in sides.items():
            out[f"destroyed_{s}_{name.lower()}"] = round(f["destroyed"], 4)
            out[f"hit_{s}_{name.lower()}"] = round(f["hit_rate"], 4)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
