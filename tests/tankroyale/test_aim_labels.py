"""Each shot's aim labelled in hindsight (TankBrain.take_targets): the aim action that would have pointed where
the enemy was when the shot's wave reached it, sent as the firing step's action target.

Played on the rules engine through TankRoyale-v0 against StopAndGo (a period: the aim that hits it is not
head-on), with the shipped aim form (a guess factor over the escape angle)."""

from __future__ import annotations

import math

import numpy as np

from actor.bots.tankroyale.brain import AIM, MAX_AIM, aim_for, guess_factor
from actor.bots.tankroyale.env import TankRoyaleEnv

FORM = dict(aim="gf", move="orbit", speed="surf", react=1, repeat=30, fixed="speed=-4;turn=0", observe="duel")


def play(aim: float, rounds: int) -> tuple[float, list[tuple[int, int, float]]]:
    """Rounds with a constant aim action: the hit rate, and (round, lag in steps, label) for each label."""
    env = TankRoyaleEnv(opponent="StopAndGo", max_turns=1500, **FORM)
    shots = hits = 0
    labels: list[tuple[int, int, float]] = []
    for r in range(rounds):
        env.reset(seed=r)
        step, done = 0, False
        while not done:
            _, _, terminated, truncated, info = env.step(np.array([0.0, 0.0, aim, 2.0], np.float32))
            for t, target in info["action_targets"].items():
                assert np.isnan(np.delete(target, AIM)).all(), "only the aim is labelled"
                assert 0 <= t <= step
                labels.append((r, step - t, float(target[AIM])))
            step, done = step + 1, terminated or truncated
        shots, hits = shots + info["tally"]["shots"], hits + info["tally"]["hits"]
    return hits / max(shots, 1), labels


def test_aim_for_inverts_the_guess_factor_aim() -> None:
    for aim in (-30.0, -12.5, 0.0, 7.0, 30.0):
        goal = 40.0 + -1.0 * guess_factor(aim) * 25.0  # bearing 40, lateral -1, escape angle 25
        assert math.isclose(aim_for(goal, (40.0, -1.0, 25.0)), aim, abs_tol=1e-6)
    assert aim_for(100.0, (40.0, 1.0, 25.0)) == MAX_AIM  # beyond the escape angle: its edge
    assert aim_for(55.0, (40.0, 1.0, 0.0)) == 0.0  # an enemy that never moved: head-on


def test_the_labels_name_an_aim_that_hits_where_head_on_misses() -> None:
    """Head-on hits StopAndGo in few shots; most shots' labels lie to one side; that side's typical label,
    played as a constant aim in other rounds, hits several times as often. Without the labels (or with them
    pointing anywhere else) the figure falls back to head-on's or below."""
    head_on, labels = play(0.0, 6)
    assert len(labels) >= 100, "too few shots labelled"
    lags = [lag for _, lag, _ in labels]
    assert np.mean([lag <= 3 for lag in lags]) > 0.95, "labels come within a few decisions of their shot"
    typical = float(np.median([label for _, _, label in labels]))
    assert abs(typical) > 5.0, typical
    taught, _ = play(typical, 6)
    assert taught > 2 * head_on and taught > 0.15, (head_on, taught, typical)
