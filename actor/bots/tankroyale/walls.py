"""Wall smoothing: an orbit bent along the walls instead of driven into them.

The orbit heads square to the enemy's bearing; in an 800 x 600 arena that runs into a wall every few dozen turns
(16 wall hits a round against the Surfer, measured in process, docs/tank-experiments.md): each hit stops the
tank dead where any gun finds it, and costs up to 3 energy. Robocode's answer: before each turn, look `stick`
pixels ahead along the way the tank moves; while that point is outside the arena, bend the way toward the enemy
(the side away from the nearest wall for an orbiting tank) a few degrees at a time. The surf form plays its ways
forward with the same bend, so what it predicts is where it goes.
"""

from __future__ import annotations

import math

from actor.bots.tankroyale import rules as R

STEP = 5.0  # degrees bent at a time


def smoothed(x: float, y: float, heading: float, way: float, toward: float, arena: tuple[float, float],
             stick: float) -> float:
    """The body heading (degrees) to turn toward instead of `heading`, for a tank at (x, y) driving `way` (> 0
    ahead, < 0 in reverse, 0 stopped: unchanged) with the enemy at direction `toward`: the least bend of its way
    of moving toward the enemy's side that keeps the point `stick` pixels ahead inside the arena (none found,
    or `stick` 0: `heading` itself)."""
    if stick <= 0.0 or way == 0.0:
        return heading
    move = heading if way > 0 else heading + 180.0
    side = 1.0 if R.normalize_relative_degrees(toward - move) >= 0.0 else -1.0
    low = R.BOT_BOUNDING_CIRCLE_RADIUS
    high_x, high_y = arena[0] - low, arena[1] - low
    for k in range(int(180.0 / STEP) + 1):
        bend = side * k * STEP
        rad = math.radians(move + bend)
        px, py = x + math.cos(rad) * stick, y + math.sin(rad) * stick
        if low <= px <= high_x and low <= py <= high_y:
            return heading + bend
    return heading


def orbit_heading(x: float, y: float, toward: float, offset: float, way: float, orbit: bool,
                  arena: tuple[float, float], stick: float) -> float:
    """The body heading the controls turn toward (move = bearing or orbit): square to the enemy at direction
    `toward`, `offset` degrees off it (taken along the way we drive, `way`, when `orbit`), bent along the walls.
    The controls and the surf form's play forward both call it, so what the surf form predicts is where we go."""
    heading = toward + 90.0 + (-offset if orbit and way < 0 else offset)
    return smoothed(x, y, heading, way, toward, arena, stick)
