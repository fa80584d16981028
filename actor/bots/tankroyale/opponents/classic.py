"""The six classic opponents tank-train plays by default, after the official sample bots of the same names.

The sample bots block ("turn 90 degrees, then drive to the wall"); a policy acts one turn at a time,
so multi-turn moves are kept as absolute goals (a heading, a start point and a distance) and
re-read from the state every turn, which also makes them immune to how the engine rounds a turn.
"""

from __future__ import annotations

import numpy as np

from actor.bots.tankroyale import rules as R
from actor.bots.tankroyale.engine import Intent
from actor.bots.tankroyale.opponents.policy import (
    Move,
    Policy,
    arrival_speed,
    direction_to,
    distance_to,
    independent,
    lock_radar,
    still,
)
from actor.bots.tankroyale.opponents.view import Me, View
from actor.bots.tankroyale.rules import normalize_relative_degrees as normal


class SittingDuck(Policy):
    """A stationary target (sample "SittingDuck"/"Target" before it is hurt): does nothing at all."""

    name = "SittingDuck"
    pool = "training"

    def act(self, view: View) -> Intent:
        return still()


class SpinBot(Policy):
    """Sample SpinBot: circles right at speed 5 and fires 3 at whatever its (body-fixed) radar sweeps;
    on a collision it fires 3 if the other bot is within 10 degrees ahead."""

    name = "SpinBot"
    pool = "training"

    def act(self, view: View) -> Intent:
        me, i = view.me, still()
        i.target_speed, i.turn_rate = 5.0, -R.MAX_TURN_RATE
        ahead = any(abs(normal(direction_to(me, b.x, b.y) - me.direction)) < 10 for b in view.bumps)
        if (view.scans or ahead) and me.gun_heat == 0:
            i.firepower = R.MAX_FIREPOWER
        return i


class Walls(Policy):
    """Sample Walls: squares up to a wall, drives to it, turns the gun 90 degrees left (inward) and then
    runs the perimeter counter-clockwise, turning left at each wall; fires 2 at every scan and rescans
    while driving a wall ("peeking"). Hit by a bot: backs 100 if it is ahead, else drives on 100."""

    heading: float | None
    move: Move | None
    dodge: Move | None

    name = "Walls"
    pool = "training"

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.phase, self.heading, self.move, self.dodge = "align", None, None, None
        self.peek = False

    def act(self, view: View) -> Intent:
        me, i = view.me, still()
        reach = max(view.arena_width, view.arena_height)
        if self.heading is None:
            self.heading = (me.direction - me.direction % 90.0) % 360.0  # turn right by direction % 90
        if view.scans and me.gun_heat == 0:
            i.firepower = 2.0
        i.rescan = bool(view.scans) and self.peek
        for b in view.bumps:
            ahead = abs(normal(direction_to(me, b.x, b.y) - me.direction)) < 90
            self.dodge = Move(me.x, me.y, -100.0 if ahead else 100.0)
        if view.hit_wall:  # a wall ends a drive, as it does a blocking forward()
            self.move = None
        if self.phase in ("corner", "run"):  # the gun stays 90 degrees left of the body, pointing inward
            i.gun_turn_rate = R.limit_gun_turn_rate(normal(me.direction + 90.0 - me.gun_direction))
        if self.dodge is not None:
            left = self.dodge.left(me)
            if abs(left) > 0.5 and not view.hit_wall:
                i.target_speed = arrival_speed(left)
                return i
            self.dodge = None
        self._phase(view, i, reach)
        return i

    def _phase(self, view: View, i: Intent, reach: float) -> None:
        me, heading = view.me, self.heading
        assert heading is not None  # act() squares it up before any phase
        if self.phase in ("align", "corner"):
            off = normal(heading - me.direction)
            i.turn_rate = R.limit_turn_rate(off, me.speed)
            if abs(off) < 0.5 and abs(me.speed) < 0.5:
                self.phase, self.move = ("to_wall" if self.phase == "align" else "run"), Move(me.x, me.y, reach)
                self.peek = self.phase == "run"
        elif self.phase == "gun":
            off = normal(heading + 90.0 - me.gun_direction)
            i.gun_turn_rate = R.limit_gun_turn_rate(off)
            if abs(off) < 0.5:
                self.phase, self.heading = "corner", (heading + 90.0) % 360.0
        if self.phase in ("to_wall", "run"):
            left = self.move.left(me) if self.move is not None else 0.0
            if left > 0.5:
                i.target_speed = arrival_speed(left)
                i.turn_rate = R.limit_turn_rate(normal(heading - me.direction), me.speed)
            elif abs(me.speed) < 0.5:
                if self.phase == "to_wall":
                    self.phase = "gun"
                else:
                    self.phase, self.peek = "corner", False
                    self.heading = (heading + 90.0) % 360.0


class RamFire(Policy):
    """Sample RamFire: turns 5 degrees a turn (towards where it last saw a bot) until its radar finds one,
    faces it, drives 5 past it and rescans; on a collision it faces the bot, fires a shot that will not
    kill it (3/2/1/0.5/0.1 by the bot's energy: the ram bonus is worth more) and rams again 40 further."""

    heading: float | None
    move: Move | None

    name = "RamFire"
    pool = "training"

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.turn_dir, self.heading, self.move = -1.0, None, None

    def act(self, view: View) -> Intent:
        me, i = view.me, still()
        if view.scans:
            s = view.scans[0]
            self._face(me, s.x, s.y, distance_to(me, s.x, s.y) + 5.0)
            i.rescan = True
        for b in view.bumps:
            self._face(me, b.x, b.y, 40.0)
            if me.gun_heat == 0:
                i.firepower = next((p for floor, p in _SPARING if b.energy > floor), 0.0)
        if view.hit_wall:
            self.move = None
        if self.heading is not None:
            off = normal(self.heading - me.direction)
            if abs(off) > 0.5:  # the sample turns first (blocking), then drives
                i.turn_rate = R.limit_turn_rate(off, me.speed)
                return i
            self.heading = None
        left = self.move.left(me) if self.move is not None else 0.0
        if left > 0.5:
            i.target_speed, i.rescan = arrival_speed(left), True
        else:
            self.move = None
            i.turn_rate = 5.0 * self.turn_dir
        return i

    def _face(self, me: Me, x: float, y: float, drive: float) -> None:
        self.heading = direction_to(me, x, y)
        self.turn_dir = 1.0 if normal(self.heading - me.direction) >= 0 else -1.0
        self.move = Move(me.x, me.y, drive)


_SPARING = ((16, 3.0), (10, 2.0), (4, 1.0), (2, 0.5), (0.4, 0.1))  # (the bot's energy above, our shot)


class Tracker(Policy):
    """Classic Tracker: picks a bot and keeps its radar on it; turns the gun straight at it (head-on aim),
    drives to about 140 when farther than 150, backs off under 100, and fires 3 once the gun is on it and
    it is close. Lost for more than 11 turns: takes whichever bot it sees next."""

    target: int | None
    last: tuple[float, float] | None

    name = "Tracker"
    pool = "training"

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.target, self.lost, self.last = None, 0, None

    def act(self, view: View) -> Intent:
        me, i = view.me, independent()
        s = next((s for s in view.scans if s.bot_id == self.target), None)
        if s is None and view.scans and (self.target is None or self.lost > 11):
            s = view.scans[0]
        if s is None:
            self.lost += 1
            i.radar_turn_rate = R.MAX_RADAR_TURN_RATE if self.lost <= 2 or self.lost > 6 else -R.MAX_RADAR_TURN_RATE
            if self.last is not None:
                i.gun_turn_rate = R.limit_gun_turn_rate(normal(direction_to(me, *self.last) - me.gun_direction))
            return i
        self.target, self.lost, self.last = s.bot_id, 0, (s.x, s.y)
        bearing, dist = direction_to(me, s.x, s.y), distance_to(me, s.x, s.y)
        gun_off = normal(bearing - me.gun_direction)
        i.gun_turn_rate, i.radar_turn_rate = R.limit_gun_turn_rate(gun_off), lock_radar(me, bearing)
        i.turn_rate = R.limit_turn_rate(normal(bearing - me.direction), me.speed)
        if dist > 150:
            i.target_speed = arrival_speed(dist - 140.0) if abs(normal(bearing - me.direction)) < 30 else 0.0
        elif dist < 100:
            i.target_speed = -4.0
        if dist <= 150 and abs(gun_off) < 3.0 and me.gun_heat == 0:
            i.firepower = R.MAX_FIREPOWER
        return i


class TrackFire(Policy):
    """Sample TrackFire: sits still, sweeps its gun right until it sees a bot, then keeps the gun on it and
    fires when within 3 degrees, harder the better aligned (3 minus the error)."""

    name = "TrackFire"
    pool = "training"

    def act(self, view: View) -> Intent:
        me, i = view.me, independent()
        if not view.scans:
            i.gun_turn_rate = i.radar_turn_rate = -10.0  # the sample's turnGunRight(10)
            return i
        s = view.scans[0]
        bearing = direction_to(me, s.x, s.y)
        off = normal(bearing - me.gun_direction)
        i.gun_turn_rate, i.radar_turn_rate = R.limit_gun_turn_rate(off), lock_radar(me, bearing)
        power = min(R.MAX_FIREPOWER - abs(off), me.energy - 0.1)  # the sample keeps 0.1 of its energy
        if abs(off) <= 3.0 and me.gun_heat == 0 and power >= R.MIN_FIREPOWER:
            i.firepower = power
        return i
