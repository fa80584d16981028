"""The tank learns: a short TankRoyale-v0 run beats the untrained policy against SpinBot.

The learner's own parts (SequenceReplay, SAC.update, tests/bench/inprocess.py), a small network and the
default action form; the trained policy, the untrained one and the form's default action (all zeros:
full speed broadside, aim on the bearing, power 1.5) then play the same fixed-seed rounds
deterministically. SpinBot is the rung where the form's default loses every round (it is shot to
pieces driving broadside) and 5,000 decisions teach the tank to close in and win: a change that breaks
learning, the action's form or the rewards turns this red (two seeds, their mean gain). The full-size figures are
bench_tank_ladder.py's (docs/tank-learning.md).
"""

from __future__ import annotations

import multiprocessing as mp

import gymnasium as gym
import numpy as np
import torch

import actor.bots.tankroyale.env  # noqa: F401 - registers TankRoyale-v0
from tests.bench.inprocess import make_sac, play, run_settings, train

ENV = "TankRoyale-v0"
KW = {"opponent": "SpinBot", "max_turns": 1500}
ROUNDS = 12
SEEDS = (2, 3)  # both seeds' untrained networks lose every round (see the test)


def wins_and_return(sac) -> tuple[float, float]:  # noqa: ANN001 - a learner.sac.SAC
    bots = play(sac, ENV, KW, ROUNDS)
    return float(np.mean([i["won"] for i in bots.infos])), float(np.mean(bots.returns))


def default_action() -> tuple[float, float]:
    """The form's default, no network: every action zero."""
    wins, returns = [], []
    for seed in range(ROUNDS):
        env = gym.make(ENV, **KW)
        env.reset(seed=10_000 + seed)
        total, done, info = 0.0, False, {}
        while not done:
            _, r, terminated, truncated, info = env.step(np.zeros(4, np.float32))
            total, done = total + r, terminated or truncated
        wins.append(info["won"])
        returns.append(total)
    return float(np.mean(wins)), float(np.mean(returns))


def untrained_and_trained(seed: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """One seed's untrained and trained figures, in a process of its own (one torch thread)."""
    torch.set_num_threads(1)
    run = run_settings(["learning_starts=500", "seq_len=16", "overlap=8", "batch_size=16"], hidden=48)
    torch.manual_seed(seed)
    untrained = wins_and_return(make_sac(ENV, KW, run))
    return untrained, wins_and_return(train(ENV, KW, 5000, run, seed=seed))


def test_a_short_run_beats_the_untrained_tank_against_spinbot() -> None:
    with mp.get_context("spawn").Pool(len(SEEDS)) as pool:  # the seeds side by side on the two cores
        pending = pool.map_async(untrained_and_trained, SEEDS)
        default = default_action()  # meanwhile, while the seeds' processes start (their torch import)
        runs = pending.get(timeout=600)
    gains = []
    for seed, (untrained, trained) in zip(SEEDS, runs):
        assert untrained[0] <= 0.1, (seed, untrained)
        gains.append((trained[0] - untrained[0], trained[1] - untrained[1]))
    assert default[0] <= 0.1, default
    # Under the path aim, 5,000 decisions, seeds 2 / 3, wins (returns): on a machine with AVX-512 (2026-12-06)
    # 0.0 -> 0.75 (-11.1 -> 9.2) / 0.0 -> 0.42 (-10.5 -> 0.1); on an AVX2 one (2026-12-06, later) 0.0 -> 0.17
    # (-11.1 -> -6.0) / 0.0 -> 0.58 (-10.5 -> 5.7). One seed's figure moves with the CPU's float kernels (the
    # same seed learned 0.75 on one machine, 0.17 on the other), so the bar is the two seeds' mean gain. Both
    # seeds' untrained networks lose every round: on seeds whose untrained network happens to win (0, 4, 5 and 6
    # won 0.50-0.75), 5,000 decisions often end below it, as early learning is not monotone.
    wins = sum(g[0] for g in gains) / len(gains)
    returns = sum(g[1] for g in gains) / len(gains)
    assert wins >= 0.25 and returns >= 5.0, (default, gains)
