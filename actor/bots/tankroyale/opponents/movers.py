"""Opponents that beat fixed aims and fixed movement, after what beat them in Robocode's history.

Each keeps its radar on its target, moves sideways to it at a preferred distance (the body square to the
bearing, driving forwards or backwards along it, so a reversal is a change of speed, not a turn), and
aims with a gun from guns.py. What sets them apart is when they change direction:

    Oscillator  a fixed period: full ahead N turns, full reverse N turns (a habit; linear aim)   training
    Dodger      when our energy drops by a shot's cost: reverses, stops or changes speed at random
                (circular aim)                                                                   training
    Orbiter     random reversals in its orbit (linear aim)                                       training
    StopAndGo   a fixed period: drives N turns, stops M turns, drives on (circular aim)          training
    Surfer      on our shot: reverses or drives on at random, farther away (guess-factor gun)   held out
    Reverser    random reversals close in (circular aim)                                         held out
    Profiler    random reversals in a wider orbit (guess-factor gun: the Surfer's, with the
                Orbiter's movement)                                                              held out
    Wanderer    no orbit: drives in arcs to random points at its distance, braking into each, and
                picks a new one on our shot at odds drawn per round (circular aim)               held out
    Matcher     the Dodger's movement with a pattern-matching gun: it learns, within a round, where
                a tank that repeats itself goes                                                  held out

Every parameter (period, distance, odds) is drawn per round from the round's rng, so a tank that beats
them has learned the kind, not one instance. Head-on aim misses all of them while they move; linear aim
misses a reversal; a fixed movement is hit by the circular and guess-factor guns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from actor.bots.tankroyale import rules as R
from actor.bots.tankroyale.engine import Intent
from actor.bots.tankroyale.opponents.guns import GuessFactorGun, PatternGun, Track, intercept, on_target, power_for
from actor.bots.tankroyale.opponents.policy import (
    Policy,
    arrival_speed,
    direction_to,
    distance_to,
    independent,
    lock_radar,
)
from actor.bots.tankroyale.opponents.view import Me, Scan, View
from actor.bots.tankroyale.rules import normalize_relative_degrees as normal

WALL_MARGIN = 30.0  # how close to a wall a mover lets its path come
LOOK_AHEAD = 110.0  # how far along its path it looks for a wall


def smoothed(me: Me, travel: float, arena: tuple[float, float]) -> float | None:
    """`travel` turned the least (up to 75 degrees, either way) that keeps the path LOOK_AHEAD ahead off the
    walls ("wall smoothing"); None when no such turn exists: the mover should reverse instead."""
    for step in range(0, 76, 5):
        for candidate in ((travel + step, travel - step) if step else (travel,)):
            x = me.x + math.cos(math.radians(candidate)) * LOOK_AHEAD
            y = me.y + math.sin(math.radians(candidate)) * LOOK_AHEAD
            if WALL_MARGIN < x < arena[0] - WALL_MARGIN and WALL_MARGIN < y < arena[1] - WALL_MARGIN:
                return candidate
    return None


def drive(me: Me, travel: float, speed: float) -> tuple[float, float]:
    """Turn rate and target speed that move along `travel` forwards or backwards, whichever needs the
    smaller turn (back-as-front: a bot never turns round to go the other way)."""
    off = normal(travel - me.direction)
    if abs(off) > 90.0:
        off, speed = normal(off + 180.0), -speed
    return R.limit_turn_rate(off, me.speed), speed


@dataclass
class ShotWatch:
    """Tells when the target fired: its energy dropped by 0.1-3 (a shot's cost) on a turn that explains the
    drop no other way (no bullet of ours hit it, none of its hit us, no collision)."""

    energy: float | None = None

    def fired(self, view: View, s: Scan) -> bool:
        before, self.energy = self.energy, s.energy
        if before is None or view.bullet_hit or view.hit_by_bullet or view.bumps:
            return False
        return 0.09 < before - s.energy < 3.01


class Mover(Policy):
    """Shared by the movers: radar lock, an orbit at `distance`, and a gun ("linear", "circular", "gf" or
    "pattern").
    A subclass says which way it goes (`sign`: +1 counter-clockwise around the target, -1 clockwise) and how
    fast, turn by turn (`steer`)."""

    gun: ClassVar[str] = "linear"
    DISTANCE: ClassVar[tuple[float, float]] = (250.0, 400.0)  # the preferred distance is drawn from this

    def __init__(self) -> None:
        self.gf = GuessFactorGun()  # its counts outlive a round
        self.pattern = PatternGun()  # its history does not

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.track, self.sign, self.speed = Track(), (1.0 if rng.random() < 0.5 else -1.0), R.MAX_FORWARD_SPEED
        self.distance = float(rng.uniform(*self.DISTANCE))
        self.gf.new_round()
        self.pattern.new_round()
        self.setup(rng)

    def setup(self, rng: np.random.Generator) -> None:
        """Draw the round's own parameters."""

    def act(self, view: View) -> Intent:
        me, i = view.me, independent()
        s = self.track.see(view)
        if s is None:  # not seen yet (or lost): spin the radar and keep moving
            i.radar_turn_rate, i.target_speed = R.MAX_RADAR_TURN_RATE, self.speed * self.sign
            return i
        bearing, dist = direction_to(me, s.x, s.y), distance_to(me, s.x, s.y)
        i.radar_turn_rate = lock_radar(me, bearing)
        self.steer(view, s)
        i.turn_rate, i.target_speed = self.orbit(view, bearing, dist)
        self.aim(view, s, dist, i)
        return i

    def steer(self, view: View, s: Scan) -> None:
        """Set this turn's `sign` and `speed` (the subclass's habit)."""

    def orbit(self, view: View, bearing: float, dist: float) -> tuple[float, float]:
        """Sideways to the target, closing in or backing off by up to 35 degrees to hold `distance`;
        reverses where the walls leave no way on."""
        tilt = R.clamp((dist - self.distance) * 0.25, -35.0, 35.0)
        travel = smoothed(view.me, bearing + self.sign * (90.0 - tilt), (view.arena_width, view.arena_height))
        if travel is None:
            self.sign = -self.sign
            travel = bearing + self.sign * (90.0 - tilt)
        return drive(view.me, travel, self.speed)

    def aim(self, view: View, s: Scan, dist: float, i: Intent) -> None:
        me = view.me
        power = power_for(dist, me.energy)
        if self.gun == "gf":
            self.gf.see(me, s, self.track, max(power, 0.1), view.turn)
            goal = self.gf.aim(me, s, self.track, max(power, 0.1))
        elif self.gun == "pattern":
            self.pattern.see(s, self.track, view.turn)
            goal = self.pattern.aim(me, s, self.track, max(power, 0.1), (view.arena_width, view.arena_height))
        else:
            rate = self.track.turn_rate if self.gun == "circular" else 0.0
            goal = intercept(me, s, max(power, 0.1), rate, (view.arena_width, view.arena_height))
        i.gun_turn_rate = R.limit_gun_turn_rate(normal(goal - me.gun_direction))
        if me.gun_heat == 0 and power >= R.MIN_FIREPOWER and on_target(me, goal, dist):
            i.firepower = power


class Oscillator(Mover):
    """Sideways at full speed, reversing every `period` turns exactly (10-24, drawn per round): a habit
    that history predicts and a straight-line aim does not. Linear aim."""

    name = "Oscillator"
    pool = "training"

    def setup(self, rng: np.random.Generator) -> None:
        self.period, self.count = int(rng.integers(10, 25)), 0

    def steer(self, view: View, s: Scan) -> None:
        self.count += 1
        if self.count > self.period:
            self.sign, self.count = -self.sign, 1

    def orbit(self, view: View, bearing: float, dist: float) -> tuple[float, float]:
        """As Mover's, but a wall never reverses it (its period is its habit): it only turns along the wall."""
        tilt = R.clamp((dist - self.distance) * 0.25, -35.0, 35.0)
        travel = bearing + self.sign * (90.0 - tilt)
        travel = smoothed(view.me, travel, (view.arena_width, view.arena_height)) or travel
        return drive(view.me, travel, self.speed)


class Dodger(Mover):
    """Orbits at full speed and watches our energy: when it drops by a shot's cost, it reverses (half the
    time), stops for 8-20 turns, or goes on at a new speed (2-8), at odds drawn per round. Circular aim."""

    name = "Dodger"
    pool = "training"
    gun = "circular"

    def setup(self, rng: np.random.Generator) -> None:
        self.watch, self.stop_until = ShotWatch(), -1
        self.p_reverse = float(rng.uniform(0.4, 0.7))
        self.p_stop = float(rng.uniform(0.1, 1.0 - self.p_reverse) * 0.6)

    def steer(self, view: View, s: Scan) -> None:
        if self.watch.fired(view, s):
            r = self.rng.random()
            if r < self.p_reverse:
                self.sign, self.speed = -self.sign, R.MAX_FORWARD_SPEED
            elif r < self.p_reverse + self.p_stop:
                self.stop_until = view.turn + int(self.rng.integers(8, 21))
            else:
                self.speed = float(self.rng.uniform(2.0, R.MAX_FORWARD_SPEED))
        if view.turn < self.stop_until:
            self.speed = 0.0
        elif self.speed == 0.0:
            self.speed = R.MAX_FORWARD_SPEED


class Orbiter(Mover):
    """Orbits at about 300 at full speed, reversing at random (each turn at odds of 1 in 12-30, drawn per
    round, never within 6 turns of the last reversal). Linear aim."""

    name = "Orbiter"
    pool = "training"
    DISTANCE = (250.0, 350.0)
    ODDS: ClassVar[tuple[float, float]] = (12.0, 30.0)  # a reversal each turn at 1 in this many, drawn per round
    MIN_GAP: ClassVar[int] = 6  # turns after a reversal before the next may come

    def setup(self, rng: np.random.Generator) -> None:
        self.odds, self.since = 1.0 / float(rng.uniform(*self.ODDS)), 0
        self.min_gap = self.MIN_GAP

    def steer(self, view: View, s: Scan) -> None:
        self.since += 1
        if self.since > self.min_gap and self.rng.random() < self.odds:
            self.sign, self.since = -self.sign, 0


class StopAndGo(Mover):
    """Drives sideways at full speed for `go` turns (10-24), stops for `stop` turns (6-16), and drives on
    the same way; only the walls reverse it. A period again, of another kind. Circular aim."""

    name = "StopAndGo"
    pool = "training"  # the pool's one habit since 2026-12-07: Pulse, held out, judges what it teaches
    gun = "circular"

    def setup(self, rng: np.random.Generator) -> None:
        self.go, self.stop, self.count = int(rng.integers(10, 25)), int(rng.integers(6, 17)), 0

    def steer(self, view: View, s: Scan) -> None:
        self.count = (self.count + 1) % (self.go + self.stop)
        self.speed = R.MAX_FORWARD_SPEED if self.count < self.go else 0.0


class Pulse(Mover):
    """Sideways on a speed schedule: flat out for `fast` turns (8-30), a crawl of 2 for `slow` turns (6-20), over
    and over, the way kept (only the walls reverse it). StopAndGo's kind of habit with other numbers, a crawl for
    a stop and a linear gun: the held-out judge of a tank that trained against StopAndGo."""

    name = "Pulse"
    pool = "held_out"
    CRAWL: ClassVar[float] = 2.0

    def setup(self, rng: np.random.Generator) -> None:
        self.fast, self.slow, self.count = int(rng.integers(8, 31)), int(rng.integers(6, 21)), 0

    def steer(self, view: View, s: Scan) -> None:
        self.count = (self.count + 1) % (self.fast + self.slow)
        self.speed = R.MAX_FORWARD_SPEED if self.count < self.fast else self.CRAWL


class Surfer(Dodger):
    """Farther out (350-500) and always at full speed: on our shot it reverses or drives on, at odds drawn
    per round, and it aims with guess-factor statistics that learn where we go."""

    name = "Surfer"
    pool = "held_out"
    gun = "gf"
    DISTANCE = (350.0, 500.0)

    def setup(self, rng: np.random.Generator) -> None:
        self.watch, self.stop_until = ShotWatch(), -1
        self.p_reverse, self.p_stop = float(rng.uniform(0.35, 0.65)), 0.0

    def steer(self, view: View, s: Scan) -> None:
        super().steer(view, s)
        self.speed = R.MAX_FORWARD_SPEED


class Reverser(Orbiter):
    """Close in (150-250), reversing at random more often (odds of 1 in 8-20, at least 4 turns apart).
    Circular aim."""

    name = "Reverser"
    pool = "held_out"
    gun = "circular"
    DISTANCE = (150.0, 250.0)
    ODDS = (8.0, 20.0)
    MIN_GAP = 4


class Profiler(Orbiter):
    """Orbits at 250-400, reversing at random (odds of 1 in 15-35, at least 6 turns apart), and aims with
    guess-factor statistics, as the Surfer does: a second learning gun, with another movement, so that a
    tank can meet that kind of gun without meeting the Surfer."""

    name = "Profiler"
    pool = "held_out"
    gun = "gf"
    DISTANCE = (250.0, 400.0)
    ODDS = (15.0, 35.0)


class Wanderer(Mover):
    """No orbit and no broadside: it drives to a point, then another, each drawn from a dozen candidates
    100-250 ahead of it as the one nearest its preferred distance to us (with some chance in the choice:
    Robocode's random and minimum-risk movement). The body turns as it drives, so its path is a chain of
    arcs, and it brakes into each point (a stop a linear aim overshoots). On our shot it leaves for a new
    point at odds drawn per round (0.3-0.9). Circular aim."""

    name = "Wanderer"
    pool = "held_out"
    gun = "circular"
    DISTANCE = (200.0, 450.0)
    MARGIN: ClassVar[float] = 60.0  # how close to a wall a point may be
    LEG: ClassVar[int] = 60  # turns on one leg before it gives up on the point

    def setup(self, rng: np.random.Generator) -> None:
        self.watch, self.p_leave = ShotWatch(), float(rng.uniform(0.3, 0.9))
        self.point: tuple[float, float] | None = None
        self.leg_start, self.legs = 0, 0

    def steer(self, view: View, s: Scan) -> None:
        me = view.me
        shot = self.watch.fired(view, s)
        arrived = self.point is not None and distance_to(me, *self.point) < 25.0
        stale = view.turn - self.leg_start > self.LEG
        if self.point is None or arrived or stale or (shot and self.rng.random() < self.p_leave):
            self.point = self._pick(view, s)
            self.leg_start, self.legs = view.turn, self.legs + 1

    def _pick(self, view: View, s: Scan) -> tuple[float, float]:
        me, m = view.me, self.MARGIN
        best, best_risk = (view.arena_width / 2, view.arena_height / 2), math.inf
        for _ in range(12):
            angle, reach = self.rng.uniform(0.0, 360.0), self.rng.uniform(100.0, 250.0)
            x = me.x + math.cos(math.radians(angle)) * reach
            y = me.y + math.sin(math.radians(angle)) * reach
            if not (m < x < view.arena_width - m and m < y < view.arena_height - m):
                continue
            risk = abs(math.hypot(x - s.x, y - s.y) - self.distance) / self.distance + 0.5 * self.rng.random()
            if risk < best_risk:
                best, best_risk = (x, y), risk
        return best

    def orbit(self, view: View, bearing: float, dist: float) -> tuple[float, float]:
        assert self.point is not None  # steer picked one
        me = view.me
        left = distance_to(me, *self.point)
        return drive(me, direction_to(me, *self.point), arrival_speed(left))


class Matcher(Dodger):
    """The Dodger's movement (on our shot it reverses, stops or changes speed, at odds drawn per round) with a
    pattern-matching gun: within each round it learns where a tank that repeats its moves will be."""

    name = "Matcher"
    pool = "held_out"
    gun = "pattern"
