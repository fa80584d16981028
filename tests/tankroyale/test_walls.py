"""Wall smoothing (walls.py): the orbit bends along a wall instead of stopping against it, on the engine."""

from __future__ import annotations

import math

import numpy as np
import pytest

from actor.bots.tankroyale import rules as R
from actor.bots.tankroyale.brain import TankControls
from actor.bots.tankroyale.env import TankRoyaleEnv
from actor.bots.tankroyale.surf import Wave, play_forward
from actor.bots.tankroyale.walls import smoothed
from protocol.config import ConfigError

ARENA = (800.0, 600.0)


def ahead(x: float, y: float, direction: float, way: float, dist: float) -> tuple[float, float]:
    rad = math.radians(direction if way > 0 else direction + 180.0)
    return x + math.cos(rad) * dist, y + math.sin(rad) * dist


def inside(x: float, y: float) -> bool:
    r = R.BOT_BOUNDING_CIRCLE_RADIUS
    return r <= x <= ARENA[0] - r and r <= y <= ARENA[1] - r


@pytest.mark.parametrize("way", [1.0, -1.0])
def test_a_way_into_the_wall_is_bent_toward_the_enemy_until_the_stick_is_inside(way: float) -> None:
    # At (400, 60), the enemy due north at (400, 400); orbiting square to it means heading east or west along the
    # south wall: fine. Heading (or reversing) straight south into the wall is bent back toward the enemy's side.
    x, y, toward = 400.0, 60.0, 90.0
    into = 270.0 if way > 0 else 90.0  # the body's heading that moves the tank south
    bent = smoothed(x, y, into, way, toward, ARENA, 120.0)
    assert bent != into
    assert inside(*ahead(x, y, bent, way, 120.0))
    assert not inside(*ahead(x, y, into, way, 120.0))
    assert abs(R.normalize_relative_degrees(bent - into)) < 90.0  # the least bend that clears it, not a U-turn


def test_a_way_clear_of_the_walls_and_no_stick_leave_the_heading_alone() -> None:
    assert smoothed(400.0, 300.0, 0.0, 1.0, 90.0, ARENA, 120.0) == 0.0
    assert smoothed(400.0, 60.0, 270.0, 1.0, 90.0, ARENA, 0.0) == 270.0
    assert smoothed(400.0, 60.0, 270.0, 0.0, 90.0, ARENA, 120.0) == 270.0  # stopped: no way to bend


def test_the_surf_forms_play_forward_bends_as_the_controls_do() -> None:
    # Orbiting (400, 300) from (100, 450), driving on (north-east, square to it) while a power-3 shot flies: the
    # straight orbit reaches the north wall and stops there; bent, the tank slides along inside it, farther on.
    w = Wave(400.0, 300.0, 0, R.calc_bullet_speed(3.0), R.direction_to(400.0, 300.0, 100.0, 450.0), 1.0, 1.0)
    me = (100.0, 450.0, R.direction_to(100.0, 450.0, 400.0, 300.0) + 90.0, 8.0)
    straight = play_forward(w, 0, me, 1.0, 0.0, (400.0, 300.0), ARENA)
    bent = play_forward(w, 0, me, 1.0, 0.0, (400.0, 300.0), ARENA, stick=120.0)
    assert straight[1] == ARENA[1] - R.BOT_BOUNDING_CIRCLE_RADIUS  # against the wall
    assert inside(*bent) and bent[1] < straight[1] - 10.0 and bent[0] > straight[0] + 20.0


def wall_hits(stick: float, rounds: int) -> int:
    """Our BotHitWallEvents over `rounds` rounds of the shipped form's constant action against the Surfer."""
    env = TankRoyaleEnv(opponent="Surfer", aim="gf", move="orbit", speed="surf", observe="duel", react=True,
                        repeat=30, max_turns=600, wall_stick=stick)
    hits = 0
    apply = env.brain.apply

    def counting(events: list[dict]) -> None:
        nonlocal hits
        hits += sum(e.get("type") == "BotHitWallEvent" for e in events)
        apply(events)

    env.brain.apply = counting  # type: ignore[method-assign]
    for k in range(rounds):
        env.reset(seed=200 + k)
        while True:
            _, _, terminated, truncated, _ = env.step(np.array([-4, 0, 0, 2], np.float32))
            if terminated or truncated:
                break
    return hits


def test_on_the_engine_a_smoothed_orbit_hits_the_walls_far_less() -> None:
    plain, smooth = wall_hits(0.0, 4), wall_hits(120.0, 4)
    assert plain >= 20 and smooth <= plain / 4, (plain, smooth)


def test_a_stick_out_of_range_fails_with_its_key() -> None:
    with pytest.raises(ConfigError, match="wall_stick"):
        TankControls(wall_stick=-1.0)
