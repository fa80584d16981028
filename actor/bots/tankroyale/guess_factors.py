"""Guess factors: where a bot is along its escape angle when a bullet (a wave) reaches it, -1 to +1.

Shared by the learning guns of the scripted opponents (opponents/guns.py, which count where we go) and our
tank's wave surfing (surf.py, which counts where their bullets found us): the same angle, the same bins.
"""

from __future__ import annotations

import math

from actor.bots.tankroyale import rules as R

BINS = 31  # guess factors -1..+1 in steps of 1/15: about a bot's width at 400 units


def escape_angle(bullet_speed: float) -> float:
    """The widest angle (degrees) a bot at full speed can move, seen from the gun, while a bullet of this speed
    flies."""
    return math.degrees(math.asin(R.MAX_FORWARD_SPEED / bullet_speed))


def of_direction(direction: float, bearing: float, escape: float, lateral: float) -> float:
    """The guess factor of `direction` (degrees) off a wave's `bearing`: over its escape angle, signed by the way
    (`lateral`, +1 / -1) the bot was moving across the wave's line when it left; clamped to -1..+1."""
    return max(-1.0, min(1.0, R.normalize_relative_degrees(direction - bearing) / escape * lateral))


def to_bin(gf: float) -> int:
    return int(round((max(-1.0, min(1.0, gf)) + 1.0) / 2.0 * (BINS - 1)))
