"""More of the official sample bots (Crazy, Corners, VelociBot, MyFirstBot, Fire), written as policies.

Held out (`pool`): `tank-train` never plays them by default; they are the opponents a trained tank is evaluated against to tell
whether it learned Tank Royale or only the six it trained on. Each moves in a way none of those six
does: zigzag arcs flat out, a corner and a sweeping gun, alternating speeds on a spinning gun, a
seesaw, a sitter that moves only when hit.

Written the way classic.py writes the classic ones: one turn at a time, a blocking move kept as a
goal re-read from the state every turn. The samples' blocking calls inside event handlers (MyFirstBot
and Fire turn perpendicular to a bullet that hit them) run beside the move in progress, as the bot
API's handlers do: the turn and the drive proceed together.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from actor.bots.tankroyale import rules as R
from actor.bots.tankroyale.engine import Intent
from actor.bots.tankroyale.opponents.policy import Move, Policy, arrival_speed, distance_to, still
from actor.bots.tankroyale.opponents.view import Me, View
from actor.bots.tankroyale.rules import normalize_relative_degrees as normal


@dataclass
class Rotation:
    """A blocking turn of `remaining` degrees (positive: left), counted down by how far the heading really
    turned, so the engine's speed-dependent limit on the body's turn rate never leaves it short."""

    remaining: float
    last: float

    def seen(self, heading: float) -> None:
        turned = normal(heading - self.last)
        self.last = heading
        if abs(turned) >= abs(self.remaining) - 1e-9 or turned * self.remaining < 0:
            self.remaining = 0.0
        else:
            self.remaining -= turned

    @property
    def done(self) -> bool:
        return abs(self.remaining) < 1e-6


def _perpendicular(me: Me, bullet_direction: float) -> float:
    """The samples' `turn_right(90 - bearing to the bullet's direction)`, as a left turn in degrees."""
    return normal(bullet_direction - me.direction) - 90.0


class Crazy(Policy):
    """Sample Crazy: drives flat out while turning left 90, right 180, left 180, over and over (arcs that
    zigzag); reverses when it hits a wall or rams a bot, and drives forward again at each new cycle;
    fires 1 at every scan. Gun and radar ride on the body."""

    PATTERN = (90.0, -180.0, 180.0)
    turn: Rotation | None

    name = "Crazy"

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.forward, self.stage, self.turn = True, 0, None

    def act(self, view: View) -> Intent:
        me, i = view.me, still()
        if view.hit_wall or any(b.rammed for b in view.bumps):
            self.forward = not self.forward
        if self.turn is None:
            self.turn = Rotation(self.PATTERN[0], me.direction)
        else:
            self.turn.seen(me.direction)
        if self.turn.done:
            self.stage = (self.stage + 1) % len(self.PATTERN)
            self.forward = self.forward or self.stage == 0  # the loop's set_forward(40000)
            self.turn = Rotation(self.PATTERN[self.stage], me.direction)
        i.turn_rate = R.limit_turn_rate(self.turn.remaining, me.speed)
        i.target_speed = R.MAX_FORWARD_SPEED if self.forward else R.MAX_BACKWARD_SPEED
        if view.scans and me.gun_heat == 0:
            i.firepower = 1.0
        return i


class Corners(Policy):
    """Sample Corners: faces a wall, drives to it, turns left and drives into a corner (stopping to fire
    while it sees a bot on the way), turns its gun 90 left and then sweeps it 3 degrees a turn, 30 turns
    each way. Fires by distance (1 beyond 200 or below 15 energy, 2 beyond 50, else 3). The corner is
    drawn at random each round (the sample moves on after a round it dies in, which in a duel is each
    round it loses)."""

    turn: Rotation | None
    move: Move | None

    name = "Corners"

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.corner = 90.0 * int(rng.integers(4))
        self.phase, self.turn, self.move, self.gun_left, self.sweep = "face", None, None, 0.0, 0

    def act(self, view: View) -> Intent:
        me, i = view.me, still()
        if view.scans and me.gun_heat == 0:
            d = distance_to(me, view.scans[0].x, view.scans[0].y)
            i.firepower = 1.0 if d > 200 or me.energy < 15 else 2.0 if d > 50 else 3.0
        if view.hit_wall:
            self.move = None
        if self.phase in ("face", "turn"):
            goal = self.corner if self.phase == "face" else self.corner + 90.0
            off = normal(goal - me.direction)
            i.turn_rate = R.limit_turn_rate(off, me.speed)
            if abs(off) < 1e-6:
                self.phase, self.move = ("drive" if self.phase == "face" else "corner"), Move(me.x, me.y, 5000.0)
        elif self.phase in ("drive", "corner"):
            left = self.move.left(me) if self.move is not None else 0.0
            if left > 0.5 and not view.scans:  # it stops while it sees a bot, and drives on after
                i.target_speed = arrival_speed(left)
            elif left <= 0.5:
                self.phase, self.gun_left = ("turn" if self.phase == "drive" else "gun"), 90.0
        else:
            i.gun_turn_rate = self._gun()
        return i

    def _gun(self) -> float:
        """Turn the gun 90 left, then 3 degrees a turn, 30 turns left, 30 right, and so on."""
        if self.phase == "gun":
            rate = min(self.gun_left, R.MAX_GUN_TURN_RATE)
            self.gun_left -= rate
            if self.gun_left <= 1e-9:
                self.phase = "sweep"
            return rate
        self.sweep += 1
        return 3.0 if (self.sweep - 1) // 30 % 2 == 0 else -3.0


class VelociBot(Policy):
    """Sample VelociBot: the gun (and the radar on it) turns 15 degrees a turn; every 64 turns it straightens
    out at speed 4, half way through it backs at 6; hit by a bullet it starts turning 5 a turn, hitting a
    wall reverses its speed. Fires 1 at every scan."""

    name = "VelociBot"

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.count, self.turn_rate, self.speed = 0, 0.0, 0.0

    def act(self, view: View) -> Intent:
        me, i = view.me, still()
        if view.hit_by_bullet:
            self.turn_rate = 5.0
        if view.hit_wall:
            self.speed = -self.speed if self.speed else -4.0
        if self.count % 64 == 0:
            self.turn_rate, self.speed = 0.0, 4.0
        elif self.count % 64 == 32:
            self.speed = -6.0
        self.count += 1
        i.turn_rate, i.target_speed = R.limit_turn_rate(self.turn_rate, me.speed), self.speed
        i.gun_turn_rate = 15.0
        if view.scans and me.gun_heat == 0:
            i.firepower = 1.0
        return i


class MyFirstBot(Policy):
    """Sample MyFirstBot: a seesaw (100 ahead, the gun once round to the left, 100 back, the gun round
    again); fires 1 at every scan; hit by a bullet, it turns perpendicular to it while it goes on."""

    move: Move | None
    dodge: Rotation | None

    name = "MyFirstBot"

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.stage, self.move, self.gun_left, self.dodge = 0, None, 0.0, None

    def act(self, view: View) -> Intent:
        me, i = view.me, still()
        if view.scans and me.gun_heat == 0:
            i.firepower = 1.0
        if self.dodge is not None:
            self.dodge.seen(me.direction)
        if view.hit_by_bullet and view.bullet_direction is not None:
            self.dodge = Rotation(_perpendicular(me, view.bullet_direction), me.direction)
        if self.dodge is not None and not self.dodge.done:
            i.turn_rate = R.limit_turn_rate(self.dodge.remaining, me.speed)
        if self.stage % 2 == 0:  # forward(100) / back(100)
            if self.move is None:
                self.move = Move(me.x, me.y, 100.0 if self.stage == 0 else -100.0)
            left = self.move.left(me) if not view.hit_wall else 0.0
            if abs(left) > 0.5:
                i.target_speed = arrival_speed(left)
                return i
            self.stage, self.move, self.gun_left = self.stage + 1, None, 360.0
        rate = min(self.gun_left, R.MAX_GUN_TURN_RATE)  # turn_gun_left(360)
        self.gun_left -= rate
        i.gun_turn_rate = rate
        if self.gun_left <= 1e-9:
            self.stage = (self.stage + 1) % 4
        return i


class Fire(Policy):
    """Sample Fire: sits still turning its gun 5 degrees a turn to the right; fires 3 at a bot within 50
    while it has over 50 energy, else 1; hit by a bullet, turns perpendicular to it and moves 50, ahead and
    back in turn; rammed, turns its gun to the bot and fires 3."""

    dodge: Rotation | None
    move: Move | None
    gun_goal: tuple[float, float] | None

    name = "Fire"

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.dist, self.dodge, self.move, self.gun_goal = 50.0, None, None, None

    def act(self, view: View) -> Intent:
        me, i = view.me, still()  # the gun rides the body, the radar the gun
        if view.scans and me.gun_heat == 0:
            close = distance_to(me, view.scans[0].x, view.scans[0].y) < 50 and me.energy > 50
            i.firepower, i.rescan = (3.0 if close else 1.0), True
        if view.bumps:
            self.gun_goal = (view.bumps[0].x, view.bumps[0].y)
        if self.gun_goal is not None:
            off = normal(R.direction_to(me.x, me.y, *self.gun_goal) - me.gun_direction)
            i.gun_turn_rate = R.limit_gun_turn_rate(off)
            if abs(off) < 1e-6:
                i.firepower, self.gun_goal = (3.0 if me.gun_heat == 0 else 0.0), None
        else:
            i.gun_turn_rate = -5.0
        self._evade(view, i)
        return i

    def _evade(self, view: View, i: Intent) -> None:
        me = view.me
        if self.dodge is None and self.move is None and view.hit_by_bullet and view.bullet_direction is not None:
            self.dodge = Rotation(_perpendicular(me, view.bullet_direction), me.direction)
            return self._turn(i, me)
        if self.dodge is not None:
            self.dodge.seen(me.direction)
            if not self.dodge.done:
                return self._turn(i, me)
            self.dodge, self.move = None, Move(me.x, me.y, self.dist)
            self.dist = -self.dist
        if self.move is not None:
            left = self.move.left(me) if not view.hit_wall else 0.0
            if abs(left) > 0.5:
                i.target_speed = arrival_speed(left)
            else:
                self.move = None
        return None

    def _turn(self, i: Intent, me: Me) -> None:
        assert self.dodge is not None
        i.turn_rate = R.limit_turn_rate(self.dodge.remaining, me.speed)


SAMPLES: tuple[type[Policy], ...] = (Crazy, Corners, VelociBot, MyFirstBot, Fire)
