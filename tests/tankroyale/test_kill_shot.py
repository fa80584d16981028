"""The finishing shot (TankControls.kill_shot): a shot is never stronger than what destroys the enemy it sees."""

from __future__ import annotations

import numpy as np
import pytest

from actor.bots.tankroyale import rules as R
from actor.bots.tankroyale.brain import KILL_MARGIN, TankBrain, TankControls
from actor.bots.tankroyale.env import TankRoyaleEnv


@pytest.mark.parametrize("energy", [0.5, 1.0, 3.9, 4.0, 4.1, 10.0, 16.0])
def test_kill_power_is_the_least_power_whose_damage_takes_the_energy(energy: float) -> None:
    p = R.kill_power(energy)
    assert R.calc_bullet_damage(p) == pytest.approx(energy)
    assert R.calc_bullet_damage(p * 0.99) < energy


def orders_power(kill_shot: bool, enemy_energy: float, power: float) -> float:
    brain = TankBrain(controls=TankControls(kill_shot=kill_shot))
    brain.my_id = 1
    brain.scanned(2, 400.0, 300.0, enemy_energy, 0.0, 8.0, 5)
    return brain.orders(np.array([0.0, 0.0, 0.0, power], np.float32)).firepower


def test_against_a_low_enemy_the_shot_is_the_weakest_that_destroys_it() -> None:
    assert orders_power(True, 1.0, 3.0) == pytest.approx(R.kill_power(1.0) + KILL_MARGIN)
    assert orders_power(True, 0.1, 3.0) == pytest.approx(R.kill_power(0.1) + KILL_MARGIN)
    assert orders_power(True, 0.0, 3.0) >= R.MIN_FIREPOWER  # never below the least shot there is
    assert orders_power(False, 1.0, 3.0) == 3.0  # off: the policy's power


def test_the_policys_power_stands_when_it_is_already_weaker_or_the_enemy_is_strong() -> None:
    assert orders_power(True, 50.0, 3.0) == 3.0  # 3 does not destroy 50 points: the policy's power
    assert orders_power(True, 10.0, 0.5) == 0.5  # weaker than the kill already
    assert orders_power(True, 1.0, 0.0) == 0.0  # holding fire holds


def fired_powers(kill_shot: bool) -> tuple[list[float], bool]:
    """Our bullets' powers over one round of power 3 against SittingDuck, and whether our shot destroyed it."""
    env = TankRoyaleEnv(opponent="SittingDuck", max_turns=1500, kill_shot=int(kill_shot))
    powers: list[float] = []
    apply = env.brain.apply

    def watching(events: list[dict]) -> None:
        powers.extend(float(e["bullet"]["power"]) for e in events
                      if e.get("type") == "BulletFiredEvent" and e["bullet"]["ownerId"] == env.brain.my_id)
        apply(events)

    env.brain.apply = watching  # type: ignore[method-assign]
    env.reset(seed=3)
    while True:
        _, _, terminated, truncated, info = env.step(np.array([0, 0, 0, 3], np.float32))
        if terminated or truncated:
            break
    return powers, bool(info["won"] and info["tally"]["destroyed"] > 0)


def test_on_the_engine_the_last_shots_at_a_sitting_duck_are_its_finishing_shots() -> None:
    plain, plain_killed = fired_powers(False)
    finishing, killed = fired_powers(True)
    assert plain_killed and killed
    assert set(plain) == {3.0}  # every shot at the policy's power
    assert max(finishing) == 3.0 and min(finishing) < 3.0  # full power while it is strong, less at its end
    assert finishing[-1] < 3.0
