"""Where scripted opponents point their guns: at a bot's course, its turn, or where it has gone before.

Robocode's history of targeting, from the simplest aim to the one that learns a mover's habits:

    head-on      at where the bot is now (HeadOnBot, Tracker): misses anything that moves sideways
    linear       at where a bullet meets it if it keeps its heading and speed: hits a straight mover
    circular     the same, also keeping its turn rate: hits a bot that drives in arcs or circles
    guess factor at the part of its escape angle it has most often been found in when a wave of ours
                 reached it, kept per lateral speed and distance: learns a habit, whatever its cause
    pattern      at where it went after the moment of this round most like the last few turns (its speed
                 and turn rate, turn by turn), played on from where it is: learns a habit's timing, not
                 only its spread, but only one the round has already shown

A gun is told of the target each turn (`Track.see`) and asked for the direction to turn toward; the
policy fires when the gun already points there (the engine fires along last turn's gun direction).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from actor.bots.tankroyale import rules as R
from actor.bots.tankroyale.guess_factors import BINS as GF_BINS
from actor.bots.tankroyale.guess_factors import escape_angle as escape_angle_of_speed
from actor.bots.tankroyale.guess_factors import of_direction, to_bin
from actor.bots.tankroyale.opponents.view import Me, Scan, View
from actor.bots.tankroyale.rules import normalize_relative_degrees as normal

MAX_FLIGHT = 120  # turns a prediction looks ahead: a power-3 bullet crosses a 1000-unit arena in ~90


@dataclass
class Track:
    """The target as the radar last saw it, with what one scan cannot tell: its turn rate (degrees a turn,
    from the heading change between scans) and its lateral direction (+1: it moves counter-clockwise
    around us, -1 clockwise; kept from the last turn it moved sideways, so a bot that stops still has one)."""

    scan: Scan | None = None
    turn: int = -1
    turn_rate: float = 0.0
    lateral: float = 1.0

    def see(self, view: View) -> Scan | None:
        """Take this turn's scan of the target (the first bot seen); None when the radar saw nothing."""
        if not view.scans:
            return None
        s = view.scans[0]
        if self.scan is not None and self.scan.bot_id == s.bot_id and 0 < view.turn - self.turn <= 3:
            self.turn_rate = normal(s.direction - self.scan.direction) / (view.turn - self.turn)
        else:
            self.turn_rate = 0.0
        v_lat = lateral_speed(view.me, s)
        if abs(v_lat) > 0.5:
            self.lateral = 1.0 if v_lat > 0 else -1.0
        self.scan, self.turn = s, view.turn
        return s


def lateral_speed(me: Me, s: Scan) -> float:
    """The target's speed across the line from us to it: positive when it moves counter-clockwise around us."""
    bearing = math.radians(R.direction_to(me.x, me.y, s.x, s.y))
    return s.speed * math.sin(math.radians(s.direction) - bearing)


def escape_angle(power: float) -> float:
    """The widest angle (degrees) a bot at full speed can move, seen from the gun, while a bullet flies."""
    return escape_angle_of_speed(R.calc_bullet_speed(power))


def intercept(me: Me, s: Scan, power: float, turn_rate: float, arena: tuple[float, float]) -> float:
    """The direction to fire so that a bullet of `power` meets a target keeping its speed and turn rate
    (turn_rate 0: linear targeting). The shot leaves next turn, so the target moves one turn more."""
    return _meet(me, s, power, lambda flight: (s.speed, turn_rate), arena)


def _meet(me: Me, s: Scan, power: float, move: Callable[[int], tuple[float, float]],
          arena: tuple[float, float]) -> float:
    """The direction to where the target, making `move(flight)` (speed, turn rate) each turn from where it is
    now, meets a bullet of `power`."""
    speed = R.calc_bullet_speed(power)
    x, y, heading = s.x, s.y, s.direction
    r = R.BOT_BOUNDING_CIRCLE_RADIUS
    for flight in range(MAX_FLIGHT):  # the engine moves a bot along its heading, then turns it
        v, rate = move(flight)
        x = R.clamp(x + math.cos(math.radians(heading)) * v, r, arena[0] - r)
        y = R.clamp(y + math.sin(math.radians(heading)) * v, r, arena[1] - r)
        heading += rate
        if math.hypot(x - me.x, y - me.y) <= speed * flight:
            break
    return R.direction_to(me.x, me.y, x, y)


def power_for(distance: float, energy: float) -> float:
    """The usual choice: hard up close, lighter (faster, cheaper) far away; never the shot that disables us."""
    power = 3.0 if distance < 150 else 2.0 if distance < 450 else 1.5
    return max(0.0, min(power, energy - 0.5))


def on_target(me: Me, goal: float, distance: float) -> bool:
    """The gun points within a bot's half width of `goal` (what the next turn's shot leaves along)."""
    tolerance = math.degrees(math.atan2(R.BOT_BOUNDING_CIRCLE_RADIUS, max(distance, 1.0)))
    return abs(normal(goal - me.gun_direction)) <= tolerance


@dataclass
class _Wave:
    x: float
    y: float
    turn: int
    speed: float
    bearing: float
    lateral: float
    segment: tuple[int, int]


@dataclass
class GuessFactorGun:
    """Guess-factor targeting: a virtual wave leaves every turn the target is seen; when it reaches the
    target, the bin of the target's guess factor (its angle off the wave's bearing, over the escape angle,
    signed by its lateral direction then: +1 is as far as it could go the way it was moving, -1 as far back)
    is counted, per segment (lateral speed and distance). It fires at the most visited bin. The counts
    outlive a round, as a real bot's saved data does: the more it plays a bot, the better it knows it."""

    stats: np.ndarray = field(default_factory=lambda: np.zeros((3, 3, GF_BINS)))
    waves: list[_Wave] = field(default_factory=list)

    def new_round(self) -> None:
        self.waves = []

    def see(self, me: Me, s: Scan, track: Track, power: float, turn: int) -> None:
        """Send this turn's wave and count the waves that reached the target."""
        self._break(s, turn)
        self.waves.append(_Wave(me.x, me.y, turn, R.calc_bullet_speed(power), R.direction_to(me.x, me.y, s.x, s.y),
                                track.lateral, _segment(me, s)))

    def _break(self, s: Scan, turn: int) -> None:
        left = []
        for w in self.waves:
            if (turn - w.turn) * w.speed < math.hypot(s.x - w.x, s.y - w.y) - R.BOT_BOUNDING_CIRCLE_RADIUS:
                left.append(w)
                continue
            gf = of_direction(R.direction_to(w.x, w.y, s.x, s.y), w.bearing, escape_angle_of_speed(w.speed), w.lateral)
            self.stats[w.segment][to_bin(gf)] += 1.0
        self.waves = left[-200:]

    def aim(self, me: Me, s: Scan, track: Track, power: float) -> float:
        """The direction to the most visited guess factor of the target's segment (head-on when none yet)."""
        counts = self.stats[_segment(me, s)]
        best = int(np.argmax(counts)) if counts.any() else GF_BINS // 2
        gf = best / (GF_BINS - 1) * 2.0 - 1.0
        return R.direction_to(me.x, me.y, s.x, s.y) + track.lateral * gf * escape_angle(power)


@dataclass
class PatternGun:
    """Pattern matching: the target's speed and turn rate, one row a turn this round; to aim, the past moment
    whose last `match` rows are nearest the last `match` (speeds over 8, turn rates over 10, squared), and the
    target's own moves after it replayed from where it is now until a bullet could reach it. A bot that
    repeats itself is hit where it will be; one that never does gets a guess. Circular aim until the round has
    `warmup` turns to match against."""

    match: int = 16  # turns compared: 8 leaves a long straight stretch matching anywhere in it
    warmup: int = 48
    rows: np.ndarray = field(default_factory=lambda: np.zeros((256, 2)))
    n: int = 0
    last_turn: int = -1

    def new_round(self) -> None:
        self.n, self.last_turn = 0, -1

    def see(self, s: Scan, track: Track, turn: int) -> None:
        """Record this turn's move; a turn the radar missed repeats the last row, so rows stay one a turn."""
        gap = min(max(1, turn - self.last_turn), 10) if self.last_turn >= 0 else 1
        self.last_turn = turn
        for _ in range(gap):
            if self.n == len(self.rows):
                self.rows = np.concatenate([self.rows, np.zeros_like(self.rows)])
            self.rows[self.n] = (s.speed, track.turn_rate)
            self.n += 1

    def best_match(self) -> int | None:
        """The row index that ends the past stretch most like the latest one (None: too little history).
        A candidate leaves at least `match` turns of what came after it to replay."""
        n, k = self.n, self.match
        if n < self.warmup:
            return None
        scaled = self.rows[:n] / (R.MAX_FORWARD_SPEED, R.MAX_TURN_RATE)
        windows = np.lib.stride_tricks.sliding_window_view(scaled, k, axis=0)  # (n - k + 1, 2, k)
        candidates = windows[:n - 2 * k + 1]
        cost = ((candidates - windows[-1]) ** 2).sum(axis=(1, 2))
        latest = len(cost) - 1 - int(np.argmin(cost[::-1]))  # of equals, the latest: the habit as it is now
        return latest + k - 1

    def aim(self, me: Me, s: Scan, track: Track, power: float, arena: tuple[float, float]) -> float:
        """The direction to where the target's matched past, played on from now, meets a bullet of `power`."""
        end = self.best_match()
        if end is None:
            return intercept(me, s, power, track.turn_rate, arena)
        return _meet(me, s, power, lambda flight: tuple(self.rows[min(end + 1 + flight, self.n - 1)]), arena)


def _segment(me: Me, s: Scan) -> tuple[int, int]:
    v = abs(lateral_speed(me, s))
    d = math.hypot(s.x - me.x, s.y - me.y)
    return (0 if v < 2 else 1 if v < 6 else 2), (0 if d < 250 else 1 if d < 450 else 2)
