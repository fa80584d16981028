"""The two baselines: simple bots that also play in our tank's place in `saclstm tank-eval`'s battles."""

from __future__ import annotations

import math

import numpy as np

from actor.bots.tankroyale import rules as R
from actor.bots.tankroyale.engine import Intent
from actor.bots.tankroyale.opponents.policy import Policy, direction_to, distance_to, independent
from actor.bots.tankroyale.opponents.view import View
from actor.bots.tankroyale.rules import normalize_relative_degrees as normal


class RandomBot(Policy):
    """Baseline random actions: a random drive, turn and gun turn held for 5-30 turns, the radar spinning,
    and a random shot at a 10% chance each turn the gun is cool."""

    name = "RandomBot"
    pool = "baseline"

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.hold, self.orders = 0, (0.0, 0.0, 0.0)

    def act(self, view: View) -> Intent:
        i = independent()
        if self.hold <= 0:
            r = self.rng
            self.hold = int(r.integers(5, 31))
            self.orders = (float(r.uniform(-R.MAX_FORWARD_SPEED, R.MAX_FORWARD_SPEED)),
                           float(r.uniform(-R.MAX_TURN_RATE, R.MAX_TURN_RATE)),
                           float(r.uniform(-R.MAX_GUN_TURN_RATE, R.MAX_GUN_TURN_RATE)))
        self.hold -= 1
        i.target_speed, i.turn_rate, i.gun_turn_rate = self.orders
        i.radar_turn_rate = R.MAX_RADAR_TURN_RATE
        shoot = self.rng.random() < 0.1
        if shoot and view.me.gun_heat == 0:
            i.firepower = float(self.rng.uniform(R.MIN_FIREPOWER, R.MAX_FIREPOWER))
        return i


class HeadOnBot(Policy):
    """Baseline head-on aim: stands still, spins its radar, turns the gun at the last scan and fires when
    the gun points within the bot's radius of it (harder when closer)."""

    last: tuple[float, float] | None

    name = "HeadOnBot"
    pool = "baseline"

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.last = None

    def act(self, view: View) -> Intent:
        me, i = view.me, independent()
        i.radar_turn_rate = R.MAX_RADAR_TURN_RATE
        if view.scans:
            self.last = (view.scans[0].x, view.scans[0].y)
        if self.last is None:
            return i
        bearing, dist = direction_to(me, *self.last), distance_to(me, *self.last)
        off = normal(bearing - me.gun_direction)
        i.gun_turn_rate = R.limit_gun_turn_rate(off)
        if me.gun_heat == 0 and abs(off) <= math.degrees(math.atan2(R.BOT_BOUNDING_CIRCLE_RADIUS, max(dist, 1.0))):
            i.firepower = 3.0 if dist < 200 else 2.0 if dist < 400 else 1.0
        return i
