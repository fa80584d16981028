"""Our shots judged in hindsight: how near each passed the enemy, once it is known where the enemy went.

A hit is a reward of 0 or 1 that arrives a bullet's flight after the aim that earned it, and most shots miss:
the aim learns from few, all-or-nothing signals. A shot's wave (the circle its bullet's distance sweeps from
where it left) reaches the enemy at the same turn whether the bullet hits or not; there, the angle between the
shot and the enemy says how near it was. TankRewards.hindsight pays that nearness on every shot, graded, on the
turn it is known, per point of the damage the shot would deal on a hit: 1 dead on, 0.75 at the edge of the
enemy's body, 0 from four half-widths off. Per point of damage, not per shot: paid per shot, a policy is paid
more for more, lighter shots (in process its fire power fell from about 2 to 0.6-1.2, 2026-12-06), which is a
different game, not a better aim.

The same wave also names where the shot should have gone: the bearing from where it left to where the enemy was
when the wave reached it. TankBrain turns that into the aim action that would have pointed there (a label for the
decision that fired, sent to the learner as that step's action target; see TankBrain.take_labels).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from actor.bots.tankroyale import rules as R

REACH = 4.0  # half-widths of the enemy's body (at its distance) at which a shot's nearness falls to 0


@dataclass(frozen=True)
class Shot:
    x: float
    y: float
    direction: float  # degrees
    speed: float
    damage: float  # what it deals on a hit
    turn: int  # the turn it left on (its bullet moves that turn too)
    decision: int = -1  # the decision (episode step) that fired it
    frame: tuple[float, float, float] | None = None  # the gf aim's (bearing, lateral, escape angle) it was aimed in


@dataclass(frozen=True)
class Passed:
    """A shot whose wave reached the enemy: how near it passed, and where it should have gone."""

    shot: Shot
    nearness: float  # 0-1, times the damage it would deal on a hit
    bearing: float  # degrees, from where it left to where the enemy was when its wave reached it


class ShotWaves:
    """Our shots in flight, until each one's wave reaches the enemy."""

    def __init__(self) -> None:
        self.shots: list[Shot] = []

    def forget(self) -> None:
        self.shots.clear()

    def fired(self, x: float, y: float, direction: float, power: float, turn: int, decision: int = -1,
              frame: tuple[float, float, float] | None = None) -> None:
        self.shots.append(Shot(x, y, direction, R.calc_bullet_speed(power), R.calc_bullet_damage(power), turn,
                               decision, frame))

    def reached(self, turn: int, ex: float, ey: float) -> list[Passed]:
        """Each shot whose wave has reached the enemy at (ex, ey) by `turn`; those shots are done."""
        done: list[Passed] = []
        left: list[Shot] = []
        for s in self.shots:
            d = math.hypot(ex - s.x, ey - s.y)
            if s.speed * (turn - s.turn + 1) < d:
                left.append(s)
                continue
            bearing = math.degrees(math.atan2(ey - s.y, ex - s.x))
            off = abs(R.normalize_relative_degrees(s.direction - bearing))
            half = math.degrees(math.atan2(R.BOT_BOUNDING_CIRCLE_RADIUS, max(d, 1.0)))
            done.append(Passed(s, max(0.0, 1.0 - off / (REACH * half)) * s.damage, bearing))
        self.shots = left
        return done
