"""Steps per second of TankRoyale-v0 (in process) beside turns per second of the same kind of battle
played over the network (our server, two opponent bot processes on the official bot API).

    .venv/bin/python tests/bench/bench_tr_env.py [--seconds 3]

Per opponent: env steps/s with random actions (TankBrain observe/apply + engine + opponent policy),
best of 3 windows; the engine alone with two scripted policies; a networked game of two opponents at
TPS -1 (as fast as the bots answer), timed from its first to its last tick. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from actor.bots.tankroyale.engine import Engine, Participant, Setup  # noqa: E402
from actor.bots.tankroyale.env import TankRoyaleEnv  # noqa: E402
from actor.bots.tankroyale.opponents import OPPONENTS, act_on_turn, make  # noqa: E402


def env_rate(opponent: str, seconds: float) -> float:
    env = TankRoyaleEnv(opponent=opponent, max_turns=2000)
    rng = np.random.default_rng(0)
    actions = rng.uniform(env.action_space.low, env.action_space.high, (4096, 4)).astype(np.float32)
    env.reset(seed=0)
    best = 0.0
    for _ in range(3):
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds / 3:
            _, _, terminated, truncated, _ = env.step(actions[n % len(actions)])
            n += 1
            if terminated or truncated:
                env.reset()
        best = max(best, n / (time.perf_counter() - t0))
    return best


def engine_rate(a: str, b: str, turns: int = 3000) -> float:
    """Two scripted policies on the engine alone, round after round."""
    engine = Engine(Setup(number_of_rounds=1000), [Participant(1, a), Participant(2, b)], seed=1)
    policies = {1: make(a), 2: make(b)}
    n, t0 = 0, time.perf_counter()
    while n < turns:
        for p in policies.values():
            p.reset(np.random.default_rng(n))
        turn = engine.new_round()
        while not turn.round_ended and n < turns:
            turn = engine.step({i: act_on_turn(p, i, turn, (800, 600)) for i, p in policies.items()
                                if i in turn.bot_states})
            n += 1
    return n / (time.perf_counter() - t0)


def network_rate(a: str, b: str, rounds: int = 3) -> tuple[float, int]:
    from actor.bots.tankroyale.controller import Controller
    from actor.bots.tankroyale.server import run_server

    setup = Setup(number_of_rounds=rounds, turn_timeout_us=5_000_000, ready_timeout_us=20_000_000)
    stamps: list[float] = []
    with run_server(port=0, seed=1, setup=setup) as server:
        procs = [subprocess.Popen([sys.executable, "-m", "actor.bots.tankroyale.opponents", name, "--server",
                                   server.url], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for name in (a, b)]
        try:
            with Controller(server.url) as ctl:
                ctl.play(setup, [a, b], timeout=300, on_tick=lambda _: stamps.append(time.perf_counter()))
        finally:
            for p in procs:
                p.terminate()
                p.wait(timeout=30)
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]), len(stamps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0, help="per opponent, for the env")
    args = ap.parse_args()
    out: dict[str, object] = {"env_steps_per_s": {}}
    for name in OPPONENTS:
        rate = env_rate(name, args.seconds)
        out["env_steps_per_s"][name] = round(rate)  # type: ignore[index]
        print(f"env vs {name:12s} {rate:8.0f} steps/s", flush=True)
    out["engine_turns_per_s_spinbot_vs_walls"] = round(engine_rate("SpinBot", "Walls"))
    print(f"engine alone, SpinBot vs Walls: {out['engine_turns_per_s_spinbot_vs_walls']} turns/s", flush=True)
    rate, ticks = network_rate("SpinBot", "Walls")
    out["network_turns_per_s_spinbot_vs_walls"], out["network_ticks"] = round(rate), ticks
    print(f"network game, SpinBot vs Walls (2 bot processes, TPS -1): {rate:.0f} turns/s over {ticks} ticks",
          flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
