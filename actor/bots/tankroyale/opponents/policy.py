"""A scripted opponent's shape, the registry every opponent joins, and the moves they share.

Each opponent is a pure policy: `reset(rng)` at a round's start, then `act(view) -> Intent` every
turn. A class that sets `name` joins the registry by being defined (`Policy.__init_subclass__`); the
package imports every module in it, so a new opponent is one class in one module, nothing else.
`pool` says where it plays: "training" (tank-train's default opponents), "held_out" (only ever an
evaluation's opponent, to tell whether the tank learned the game or its training opponents) or
"baseline" (a simple bot that also plays in our tank's place in tank-eval).

Angles follow the game: degrees, 0 = east, counter-clockwise positive, so "turn right" is negative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from actor.bots.tankroyale import rules as R
from actor.bots.tankroyale.engine import Intent, Turn
from actor.bots.tankroyale.opponents.view import Me, View, view_from_schema
from actor.bots.tankroyale.rules import normalize_relative_degrees as normal

POOLS = ("training", "held_out", "baseline")
REGISTRY: dict[str, type[Policy]] = {}  # name -> class, in the order the classes were defined


class Policy:
    """One scripted opponent: state lives here, decisions come from the view alone."""

    name: ClassVar[str] = ""
    pool: ClassVar[str] = "held_out"
    rng: np.random.Generator

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:  # a shared base (no name of its own) does not play
            return
        if cls.pool not in POOLS:
            raise TypeError(f"opponent {cls.name}: pool {cls.pool!r} is not one of {POOLS}")
        if cls.name in REGISTRY and REGISTRY[cls.name].__qualname__ != cls.__qualname__:
            raise TypeError(f"two opponents are named {cls.name!r}: {REGISTRY[cls.name]} and {cls}")
        REGISTRY[cls.name] = cls

    def reset(self, rng: np.random.Generator) -> None:
        """A new round: forget the round's state; `rng` is the only source of chance."""
        self.rng = rng

    def act(self, view: View) -> Intent:
        raise NotImplementedError


def make(name: str) -> Policy:
    """A fresh policy by its key (the bot's name in the game); call reset(rng) before a round."""
    try:
        return REGISTRY[name]()
    except KeyError:
        raise ValueError(f"unknown opponent {name!r}; known: {', '.join(REGISTRY)}") from None


def act_on_turn(policy: Policy, bot_id: int, turn: Turn, arena: tuple[float, float]) -> Intent:
    """The policy's orders for bot `bot_id` after `turn` (its state and the events it was told of)."""
    view = view_from_schema(bot_id, turn.bot_states[bot_id], turn.events.get(bot_id, ()), turn.turn_number, arena)
    return policy.act(view)


# -- orders ---------------------------------------------------------------------------------------

def still() -> Intent:
    """Every order given, so nothing persists from an earlier turn."""
    return Intent(turn_rate=0.0, gun_turn_rate=0.0, radar_turn_rate=0.0, target_speed=0.0, firepower=0.0,
                  adjust_gun_for_body_turn=False, adjust_radar_for_body_turn=False,
                  adjust_radar_for_gun_turn=False, rescan=False)


def independent() -> Intent:
    """Orders for a bot that turns body, gun and radar each on its own (all adjust flags set)."""
    i = still()
    i.adjust_gun_for_body_turn = i.adjust_radar_for_body_turn = i.adjust_radar_for_gun_turn = True
    return i


def lock_radar(me: Me, bearing: float) -> float:
    """Radar turn that sweeps past `bearing` (twice the offset), so the next turn scans the bot again."""
    off = normal(bearing - me.radar_direction)
    return R.limit_radar_turn_rate(2.0 * off if abs(off) > 1e-6 else R.MAX_RADAR_TURN_RATE)


# -- geometry and multi-turn moves ----------------------------------------------------------------

def direction_to(me: Me, x: float, y: float) -> float:
    return R.direction_to(me.x, me.y, x, y)


def distance_to(me: Me, x: float, y: float) -> float:
    return math.hypot(x - me.x, y - me.y)


def arrival_speed(distance: float, top: float = R.MAX_FORWARD_SPEED) -> float:
    """The speed that still stops within `distance` braking at the game's deceleration b (2 units/turn): the
    turns of braking cover about v(v + b)/(2b), so v is the positive root of v^2 + b v - 2 b d; signed."""
    d, b = abs(distance), -R.DECELERATION
    v = min(top, d, (math.sqrt(b * b + 8.0 * b * d) - b) / 2.0)
    return math.copysign(v, distance)


@dataclass(frozen=True)
class Move:
    """A straight drive of `distance` (negative: backwards) from a start point, as blocking
    forward()/back() would do; what is left is read off the position, so no turn's rounding adds up."""

    x: float
    y: float
    distance: float

    def left(self, me: Me) -> float:
        return math.copysign(max(0.0, abs(self.distance) - distance_to(me, self.x, self.y)), self.distance)
