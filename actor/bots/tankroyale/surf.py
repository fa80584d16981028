"""Wave surfing: the enemy's shots as waves, where they found us, and which way to go so the next one does not.

A gun that learns where we go (guess factors, pattern matching) beats any fixed answer to its shots: turning
back on every shot, which beats a straight-line or circular gun, is a habit it learns within a round. Robocode's
answer is to surf: each shot the enemy is seen to fire (a drop in its energy) is a wave leaving where it stood,
at its bullet's speed; where a wave met us is a guess factor (our angle off its bearing, over the escape angle,
signed by the way we were moving across it), and we count two things per guess factor: where its bullets hit
us, and where its waves passed us (what a gun learning our movement sees). Before the nearest wave arrives,
each of our two ways (go on, turn back) is played forward with our own movement to the turn the wave meets us,
and the way whose guess factor has been less dangerous is taken.

The counts outlive a round, as the enemy's do, and start again with a new enemy. Pure functions of positions
and events, so the controls (brain.py) and the tests drive them without a server.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from actor.bots.tankroyale import rules as R
from actor.bots.tankroyale.guess_factors import BINS, escape_angle, of_direction
from actor.bots.tankroyale.guess_factors import to_bin as gf_bin
from actor.bots.tankroyale.walls import orbit_heading

_KERNEL = 1.0 / (1.0 + (np.arange(BINS)[:, None] - np.arange(BINS)[None, :]) ** 2.0)  # one count, smoothed
VISIT_WEIGHT = 0.25  # a wave that passed us, against a bullet that hit us (0-0.5 measured alike; 2 worse: docs/tank-experiments.md)
HORIZON = 120  # turns a way is played forward at most


@dataclass
class Wave:
    """One enemy shot, from where it was fired."""

    x: float
    y: float
    turn: int  # the turn its bullet left
    speed: float  # its bullet's speed
    bearing: float  # degrees, from where it was fired to us then
    lateral: float  # +1: we were moving counter-clockwise around its origin then, -1 clockwise
    going: float  # +1 / -1: the way we were told to go when it was seen (what "turn back" is against)

    @property
    def escape(self) -> float:
        """The widest angle (degrees) a bot at full speed can move, seen from the origin, while the bullet flies."""
        return escape_angle(self.speed)

    def radius(self, turn: float) -> float:
        return (turn - self.turn) * self.speed

    def gf(self, x: float, y: float) -> float:
        """The guess factor of a point: its angle off the wave's bearing over the escape angle, -1..+1."""
        return self.gf_of_direction(R.direction_to(self.x, self.y, x, y))

    def gf_of_direction(self, direction: float) -> float:
        return of_direction(direction, self.bearing, self.escape, self.lateral)


@dataclass
class Surf:
    """The enemy's waves in the air and what its earlier ones did to us."""

    hits: np.ndarray = field(default_factory=lambda: np.zeros(BINS))  # smoothed counts of where bullets hit us
    visits: np.ndarray = field(default_factory=lambda: np.zeros(BINS))  # of where waves passed us
    waves: list[Wave] = field(default_factory=list)
    lateral: float = 1.0  # our way across the enemy's line, kept while we stand still

    def new_round(self) -> None:
        """A round begins: no wave is in the air (the counts stay: the enemy is the one we met last round)."""
        self.waves, self.lateral = [], 1.0

    def forget(self) -> None:
        """Another enemy (a new game, another opponent): what the last one did says nothing of it."""
        self.hits[:], self.visits[:] = 0.0, 0.0

    def moved(self, x: float, y: float, direction: float, speed: float, ex: float, ey: float) -> None:
        """Our state this turn: which way we move across the line from the enemy (at ex, ey)."""
        across = speed * math.sin(math.radians(direction - R.direction_to(ex, ey, x, y)))
        if abs(across) > 0.5:
            self.lateral = 1.0 if across > 0 else -1.0

    def fired(self, ex: float, ey: float, power: float, turn: int, x: float, y: float, going: float) -> None:
        """The enemy, last seen at (ex, ey), fired a shot of `power` that left on `turn`; we were at (x, y)."""
        self.waves.append(Wave(ex, ey, turn, R.calc_bullet_speed(power), R.direction_to(ex, ey, x, y),
                               self.lateral, 1.0 if going >= 0 else -1.0))

    def hit(self, turn: int, x: float, y: float, bullet: dict) -> None:
        """A bullet hit us at (x, y): count its guess factor on the wave it came with (its direction, when the
        event gives it, else our position), and that wave is done."""
        power = bullet.get("power")
        speed = R.calc_bullet_speed(float(power)) if power is not None else None
        best, miss = None, 50.0
        for w in self.waves:
            if speed is not None and abs(w.speed - speed) > 0.01:
                continue
            off = abs(w.radius(turn) - math.hypot(x - w.x, y - w.y))
            if off < miss:
                best, miss = w, off
        if best is None:
            return
        direction = bullet.get("direction")
        gf = best.gf_of_direction(float(direction)) if direction is not None else best.gf(x, y)
        self.hits += _KERNEL[gf_bin(gf)]
        self.waves.remove(best)

    def passed(self, turn: int, x: float, y: float) -> None:
        """Waves that have gone past us: count where each met us."""
        left = []
        for w in self.waves:
            if w.radius(turn) > math.hypot(x - w.x, y - w.y) + R.BOT_BOUNDING_CIRCLE_RADIUS:
                self.visits += _KERNEL[gf_bin(w.gf(x, y))]
            else:
                left.append(w)
        self.waves = left

    def danger(self, gf: float) -> float:
        """How often this guess factor was where the enemy's bullets found us, and (less) where its waves did:
        each as a share of its own count, so the first hit already outweighs many quiet passes."""
        b = gf_bin(gf)
        hits, visits = self.hits.sum(), self.visits.sum()
        return (self.hits[b] / hits if hits else 0.0) + VISIT_WEIGHT * (self.visits[b] / visits if visits else 0.0)

    def dangers(self, wave: Wave, turn: int, me: tuple[float, float, float, float], offset: float,
                enemy: tuple[float, float], arena: tuple[float, float], orbit: bool = True,
                stick: float = 0.0) -> tuple[float, float]:
        """(going on, turning back): the danger of where each way takes us when `wave` meets us (play_forward's
        arguments), "turning back" against the way we went when it was fired."""
        return (self.danger(wave.gf(*play_forward(wave, turn, me, wave.going, offset, enemy, arena, orbit, stick))),
                self.danger(wave.gf(*play_forward(wave, turn, me, -wave.going, offset, enemy, arena, orbit, stick))))

    def nearest(self, turn: int, x: float, y: float) -> Wave | None:
        """The wave that meets us first (one still at least a turn away)."""
        best, soonest = None, math.inf
        for w in self.waves:
            left = (math.hypot(x - w.x, y - w.y) - w.radius(turn)) / w.speed
            if 1.0 <= left < soonest:
                best, soonest = w, left
        return best


def play_forward(wave: Wave, turn: int, me: tuple[float, float, float, float], way: float, offset: float,
                 enemy: tuple[float, float], arena: tuple[float, float], orbit: bool = True,
                 stick: float = 0.0) -> tuple[float, float]:
    """Where we are when `wave` meets us if we drive `way` (+1 ahead, -1 in reverse) at full speed from
    `me` = (x, y, direction, speed), holding the heading `offset` (degrees) from broadside to the enemy at
    `enemy` as the controls do (`orbit`: the offset taken along the way we drive; `stick`: bent along the walls
    as walls.orbit_heading bends it), stopped by the walls."""
    x, y, direction, speed = me
    ex, ey = enemy
    low, high_x, high_y = R.BOT_BOUNDING_CIRCLE_RADIUS, arena[0] - R.BOT_BOUNDING_CIRCLE_RADIUS, arena[1] - R.BOT_BOUNDING_CIRCLE_RADIUS
    target = R.MAX_FORWARD_SPEED * way
    for t in range(turn + 1, turn + HORIZON + 1):
        speed = R.calc_new_bot_speed(speed, target)
        rad = math.radians(direction)
        x, y = x + math.cos(rad) * speed, y + math.sin(rad) * speed
        if not (low <= x <= high_x and low <= y <= high_y):
            x, y, speed = R.clamp(x, low, high_x), R.clamp(y, low, high_y), 0.0
        heading = orbit_heading(x, y, R.direction_to(x, y, ex, ey), offset, way, orbit, arena, stick)
        direction += R.limit_turn_rate(R.normalize_relative_degrees(heading - direction), speed)
        if wave.radius(t) >= math.hypot(x - wave.x, y - wave.y):
            break
    return x, y


def choose(surf: Surf, wave: Wave, turn: int, me: tuple[float, float, float, float], offset: float,
           enemy: tuple[float, float], arena: tuple[float, float], bias: float, orbit: bool = True,
           stick: float = 0.0) -> float:
    """The way to drive (+1 / -1) against `wave`: turn back (against the way we went when it was fired) when
    that way's guess factor is the less dangerous, by a margin: `bias` in [-1, 1] is how much more dangerous
    going on must be, as a share of both dangers, before we turn back (-1: always turn back, as a reflex to a
    shot; 0: the safer way; +1: never). With nothing counted yet the two ways tie, and the bias decides."""
    d_on, d_back = surf.dangers(wave, turn, me, offset, enemy, arena, orbit, stick)
    margin = d_on - d_back - bias * (d_on + d_back)
    return -wave.going if margin > 0.0 or (margin == 0.0 and bias < 0.0) else wave.going
