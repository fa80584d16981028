"""What the controls give for free: HeadOnBot and constant actions of our tank's form against each opponent.

    .venv/bin/python tests/bench/bench_tank_baselines.py --rounds 40
    .venv/bin/python tests/bench/bench_tank_baselines.py --opponents Dodger,Orbiter --action 8,-5,0,2 --action 0,0,0,2
    .venv/bin/python tests/bench/bench_tank_baselines.py --env aim=gf --grid   # the constant-action grid of a form

In process, on the rules engine (TankRoyale-v0's), the same fixed-seed rounds for every side: HeadOnBot in
our tank's place (a scripted policy against the opponent), and our tank's own form (TankBrain: the
observation, the radar lock, the aim and movement forms) playing one constant action with no network at
all. Reports per opponent the share of rounds won by destroying the opponent and the hit rate. With
`--grid`, every action of a small grid is played against the training opponents and the best one (mean
destroyed over them) is named: that is the constant-action baseline tank-eval plays for the form.
Last line: one JSON object: destroyed_<side>_<opponent> for each side and opponent, and the grid's best.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actor.bots.tankroyale.engine import Engine, Participant, Setup  # noqa: E402
from actor.bots.tankroyale.env import TankRoyaleEnv  # noqa: E402
from actor.bots.tankroyale.opponents import act_on_turn, make, pool  # noqa: E402

SEED = 10_000  # the evaluation seeds of the ladder (tests/bench/inprocess.py play())


def round_seed(k: int) -> int:
    """The engine's seed for round `k`: every side of every benchmark here plays the same rounds."""
    return int(np.random.default_rng([SEED, k]).integers(2**31 - 1))


def scripted(name: str, opponent: str, rounds: int, max_turns: int = 1500) -> dict[str, float]:
    """A scripted policy in our tank's place: won = it outlived the opponent, destroyed = the opponent died of
    its bullets or rams (the round's death followed a hit or collision by it that turn)."""
    won = destroyed = shots = hits = 0
    for k in range(rounds):
        rng = np.random.default_rng([SEED, k])
        engine = Engine(Setup(number_of_rounds=1), [Participant(1, name), Participant(2, opponent)],
                        seed=int(rng.integers(2**31 - 1)))
        policies = {1: make(name), 2: make(opponent)}
        for i, p in policies.items():
            p.reset(np.random.default_rng([SEED, k, i]))
        turn, killed = engine.new_round(), False
        while not turn.round_ended and turn.turn_number < max_turns:
            turn = engine.step({i: act_on_turn(p, i, turn, (800, 600)) for i, p in policies.items()
                                if i in turn.bot_states})
            ours = turn.events.get(1, [])
            shots += sum(e.get("type") == "BulletFiredEvent" for e in ours)
            hit = [e for e in ours if e.get("type") == "BulletHitBotEvent" and (e.get("bullet") or {}).get("ownerId") == 1]
            hits += len(hit)
            rammed = any(e.get("type") == "BotHitBotEvent" for e in ours)
            if any(e.get("type") == "BotDeathEvent" and e.get("victimId") == 2 for e in ours):
                killed = bool(hit) or rammed
        alive = {i: s["energy"] > 0 for i, s in turn.bot_states.items()}
        if alive.get(1, False) and not alive.get(2, True) or (1 in turn.bot_states and 2 not in turn.bot_states):
            won += 1
            destroyed += killed
    return {"won": won / rounds, "destroyed": destroyed / rounds, "hit_rate": hits / shots if shots else 0.0}


def constant(action: tuple[float, ...], opponent: str, rounds: int, env: dict[str, Any]) -> dict[str, float]:
    """Our tank's form playing one action every decision (TankRoyale-v0), the same seeds as `scripted`."""
    e = TankRoyaleEnv(opponent=opponent, max_turns=1500, **env)
    a = np.array(action, np.float32)
    won = destroyed = shots = hits = 0
    for k in range(rounds):
        e.reset(seed=round_seed(k))
        while True:
            _, _, terminated, truncated, info = e.step(a)
            if terminated or truncated:
                break
        won += info["won"]
        destroyed += info["won"] and info["tally"]["destroyed"] > 0
        shots += info["tally"]["shots"]
        hits += info["tally"]["hits"]
    return {"won": won / rounds, "destroyed": destroyed / rounds, "hit_rate": hits / shots if shots else 0.0}


def dodging(opponent: str, rounds: int, env: dict[str, Any], odds: float = 1.0,
            rest: tuple[float, ...] = (0.0, 0.0, 2.0)) -> dict[str, float]:
    """A hand-written policy in our tank's own form, for reference: full speed, turning back on every shot the
    enemy is seen to fire (the duel numbers' shot age), head-on aim, power 2. What a form that lets a reversal
    be timed makes possible; not a baseline tank-eval plays (it reads the state, as a learned policy does).
    With `odds` below 1 it turns back on a shot only at those odds (a mixed strategy: what a gun that learns
    where we go, the Surfer's, cannot learn); `rest` is the turn, aim and power actions it keeps."""
    e = TankRoyaleEnv(opponent=opponent, max_turns=1500, **(env | {"observe": "duel", "react": "true"}))
    won = destroyed = shots = hits = 0
    taken = 0.0
    coin = np.random.default_rng(SEED)
    for k in range(rounds):
        e.reset(seed=round_seed(k))
        turn_back = False
        while True:
            _, _, terminated, truncated, info = e.step(np.array([-8.0 if turn_back else 8.0, *rest], np.float32))
            if terminated or truncated:
                break
            shot = e.brain.shot_turn == info["turn"]  # the decision was cut short by its shot
            turn_back = shot and (odds >= 1.0 or coin.random() < odds)
        won += info["won"]
        destroyed += info["won"] and info["tally"]["destroyed"] > 0
        shots += info["tally"]["shots"]
        hits += info["tally"]["hits"]
        taken += info["tally"]["taken"]
    return {"won": won / rounds, "destroyed": destroyed / rounds, "hit_rate": hits / shots if shots else 0.0,
            "taken": taken / rounds}


def grid_actions() -> list[tuple[float, ...]]:
    """Speeds (full ahead, half, stop, full reverse), body turns (broadside, 45 toward, 45 away), aims
    (the ends and the middle of the range) at power 2: 36 actions."""
    return [(s, t, a, 2.0) for s, t, a in itertools.product((8.0, -2.0, -4.0, -8.0), (0.0, -5.0, 5.0),
                                                             (-30.0, 0.0, 30.0))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--opponents", default="", help="comma-separated (default: every training and held-out one)")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--action", action="append", default=[], help="a constant action A,B,C,D; repeatable")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="a TankRoyale-v0 form kwarg")
    ap.add_argument("--grid", action="store_true", help="play the grid on the training opponents; name the best")
    ap.add_argument("--dodging", action="store_true", help="also the hand-written dodging policy (speed = keep or "
                    "flip: turns back on every shot it sees)")
    ap.add_argument("--dodging-odds", action="append", type=float, default=[], metavar="P",
                    help="the dodging policy turns back on a shot at these odds (repeatable; default 1: every shot)")
    ap.add_argument("--dodging-rest", default="0,0,2", metavar="TURN,AIM,POWER",
                    help="the dodging policy's other three actions (default 0,0,2: broadside, head-on, power 2)")
    args = ap.parse_args()
    rest = tuple(float(v) for v in args.dodging_rest.split(","))
    if len(rest) != 3:
        ap.error(f"--dodging-rest: give TURN,AIM,POWER, three numbers, not {args.dodging_rest!r}")
    env = {k: v for k, _, v in (p.partition("=") for p in args.env)}
    opponents = args.opponents.split(",") if args.opponents else list(pool("training") + pool("held_out"))
    out: dict[str, Any] = {"rounds": args.rounds, "env": env}
    if args.grid:
        train = [o for o in opponents if o in pool("training")] or list(pool("training"))
        scores = []
        for action in grid_actions():
            got = {o: constant(action, o, args.rounds, env)["destroyed"] for o in train}
            scores.append((float(np.mean(list(got.values()))), action))
            print(f"{action}: mean {scores[-1][0]:.2f}  " + " ".join(f"{o} {v:.2f}" for o, v in got.items()), flush=True)
        best = max(scores)
        print(f"best: {best[1]} (mean destroyed {best[0]:.2f} over {', '.join(train)})")
        out |= {"grid_best": list(best[1]), "grid_best_mean": round(best[0], 3)}
        args.action = args.action or [",".join(str(v) for v in best[1])]
    actions = [tuple(float(v) for v in a.split(",")) for a in args.action] or [(8.0, -5.0, 0.0, 2.0)]
    for o in opponents:
        head = scripted("HeadOnBot", o, args.rounds)
        row = [f"{o:12s} HeadOnBot {head['destroyed']:.2f} (hit {head['hit_rate']:.2f})"]
        out[f"destroyed_headon_{o.lower()}"] = head["destroyed"]
        for action in actions:
            got = constant(action, o, args.rounds, env)
            row.append(f"{action} {got['destroyed']:.2f} (hit {got['hit_rate']:.2f})")
            out[f"destroyed_{'_'.join(f'{v:g}' for v in action)}_{o.lower()}"] = got["destroyed"]
        if args.dodging:
            for odds in args.dodging_odds or [1.0]:
                got = dodging(o, args.rounds, env, odds, rest)
                tag = "dodging" if odds >= 1.0 else f"dodging at odds {odds:g}"
                row.append(f"{tag} {got['destroyed']:.2f} (hit {got['hit_rate']:.2f}, taken {got['taken']:.0f})")
                out[f"destroyed_{tag.replace(' ', '_')}_{o.lower()}"] = got["destroyed"]
        print("  ".join(row), flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
