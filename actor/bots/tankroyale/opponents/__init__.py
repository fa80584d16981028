"""Scripted Tank Royale opponents: one registry, every module in this package a part of it.

Each opponent is a pure policy (policy.py): `reset(rng)` at a round's start, then `act(view) -> Intent`
every turn, where the view (view.py) is the bot's own state, this turn's scans and events, and the
arena. Three thin adapters feed it:

    the in-process environment   `act_on_turn(policy, bot_id, turn, arena)` reads the engine's
                                 schema-shaped dicts (env.py)
    our game server itself       a house bot (house.py, `server --house SpinBot`): the same call on the
                                 server's turn, no process, no socket (tank-train's and tank-eval's default)
    any game server              `python -m actor.bots.tankroyale.opponents SpinBot --server ws://...`
                                 runs it as a bot on the official Python bot API (bot.py)

The modules, by what their opponents are for:
    classic.py    the six tank-train has always played (SittingDuck, SpinBot, Walls, RamFire, Tracker,
                  TrackFire), after the official samples
    baselines.py  HeadOnBot and RandomBot, which also play in our tank's place in tank-eval
    samples.py    five more official samples, held out of training
    movers.py     bots that beat fixed aims and fixed movement: they dodge a shot, move with a period or
                  orbit with random reversals, and aim where a predictable mover will be (guns.py)

A new opponent is a Policy subclass with a `name` (and a `pool`) in any module here: importing this
package imports every module in it, and the class joins OPPONENTS as it is defined.
"""

from __future__ import annotations

import importlib
import pkgutil

from actor.bots.tankroyale.opponents.bot import apply_intent, bot, main
from actor.bots.tankroyale.opponents.policy import (
    POOLS,
    REGISTRY,
    Move,
    Policy,
    act_on_turn,
    arrival_speed,
    direction_to,
    distance_to,
    independent,
    lock_radar,
    make,
    still,
)
from actor.bots.tankroyale.opponents.view import Bump, Me, Scan, View, view_from_api, view_from_schema
from actor.bots.tankroyale.rules import normalize_relative_degrees as normal

_FIRST = ("classic", "baselines", "samples")  # the roster's long-standing order; any other module follows


def _load_all() -> None:
    found = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    for name in [*_FIRST, *(n for n in found if n not in _FIRST)]:
        importlib.import_module(f"{__name__}.{name}")


_load_all()
OPPONENTS = REGISTRY  # name -> Policy class


def pool(which: str) -> tuple[str, ...]:
    """The opponents of one pool ("training", "held_out" or "baseline"), in the registry's order."""
    if which not in POOLS:
        raise ValueError(f"pool {which!r}: must be one of {', '.join(POOLS)}")
    return tuple(name for name, cls in REGISTRY.items() if cls.pool == which)


__all__ = ["OPPONENTS", "POOLS", "Bump", "Me", "Move", "Policy", "Scan", "View", "act_on_turn", "apply_intent",
           "arrival_speed", "bot", "direction_to", "distance_to", "independent", "lock_radar", "main", "make",
           "normal", "pool", "still", "view_from_api", "view_from_schema"]
