"""What a scripted opponent sees: its own state, this turn's scans and events, and the arena.

One view, built two ways: from the engine's (and the wire protocol's) schema maps, which TankRoyale-v0
and our server speak, and from the official bot API's objects, which a bot process gets. A policy that
decides on the view alone plays alike in both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Me:
    """A bot's own state at the start of its turn, under the bot API's BotState attribute names: what a
    scripted opponent decides on, and what our tank's brain observes in TankRoyale-v0 (env.py)."""

    x: float
    y: float
    energy: float
    direction: float
    gun_direction: float
    radar_direction: float
    speed: float
    gun_heat: float
    turn_rate: float = 0.0
    gun_turn_rate: float = 0.0

    @classmethod
    def from_schema(cls, s: dict[str, Any]) -> Me:
        """From the engine's (and the wire protocol's) `bot-state` map."""
        return cls(s["x"], s["y"], s["energy"], s["direction"], s["gunDirection"], s["radarDirection"], s["speed"],
                   s["gunHeat"], s["turnRate"], s["gunTurnRate"])


@dataclass(frozen=True)
class Scan:
    """Another bot, seen by our radar this turn."""

    bot_id: int
    x: float
    y: float
    energy: float
    direction: float
    speed: float


@dataclass(frozen=True)
class Bump:
    """A collision with another bot this turn (rammed: we drove into it)."""

    bot_id: int
    x: float
    y: float
    energy: float
    rammed: bool


@dataclass(frozen=True)
class View:
    """Everything a scripted opponent decides on: no ids of others beyond what it scanned or hit."""

    turn: int
    me: Me
    arena_width: float
    arena_height: float
    scans: tuple[Scan, ...] = ()
    bumps: tuple[Bump, ...] = ()
    hit_wall: bool = False
    hit_by_bullet: bool = False
    bullet_direction: float | None = None  # the heading of a bullet that hit us this turn
    bullet_hit: bool = False  # one of our bullets hit a bot this turn (its energy fell for a reason it can see)


def view_from_schema(bot_id: int, state: dict[str, Any], events: Iterable[dict[str, Any]], turn: int,
                     arena: tuple[float, float]) -> View:
    """The view from the engine's (and the wire protocol's) `bot-state` and event maps."""
    me = Me.from_schema(state)
    scans, bumps, hit_wall, hit, bullet, ours = [], [], False, False, None, False
    for e in events:
        kind = e.get("type")
        if kind == "ScannedBotEvent" and e.get("scannedByBotId", bot_id) == bot_id:
            scans.append(Scan(e["scannedBotId"], e["x"], e["y"], e["energy"], e["direction"], e["speed"]))
        elif kind == "BotHitBotEvent":
            other = e["victimId"] if e["victimId"] != bot_id else e.get("botId", -1)
            bumps.append(Bump(other, e["x"], e["y"], e["energy"], bool(e.get("rammed", False))))
        elif kind == "BotHitWallEvent":
            hit_wall = True
        elif kind == "HitByBulletEvent" or (kind == "BulletHitBotEvent" and e.get("victimId") == bot_id):
            hit, bullet = True, (e.get("bullet") or {}).get("direction", bullet)
        elif kind == "BulletHitBotEvent" and (e.get("bullet") or {}).get("ownerId") == bot_id:
            ours = True
    return View(turn, me, arena[0], arena[1], tuple(scans), tuple(bumps), hit_wall, hit, bullet, ours)


def view_from_api(state: Any, events: Iterable[Any], turn: int, arena: tuple[float, float]) -> View:
    """The view from the bot API's BotState and event objects (a TickEvent's)."""
    from robocode_tank_royale.bot_api.events import (
        BulletHitBotEvent,
        HitBotEvent,
        HitByBulletEvent,
        HitWallEvent,
        ScannedBotEvent,
    )

    me = Me(state.x, state.y, state.energy, state.direction, state.gun_direction, state.radar_direction,
            state.speed, state.gun_heat, state.turn_rate, state.gun_turn_rate)
    scans, bumps, hit_wall, hit, bullet, ours = [], [], False, False, None, False
    for e in events:
        if isinstance(e, ScannedBotEvent):
            scans.append(Scan(e.scanned_bot_id, e.x, e.y, e.energy, e.direction, e.speed))
        elif isinstance(e, HitBotEvent):
            bumps.append(Bump(e.victim_id, e.x, e.y, e.energy, bool(e.rammed)))
        elif isinstance(e, HitWallEvent):
            hit_wall = True
        elif isinstance(e, HitByBulletEvent):
            hit, bullet = True, e.bullet.direction if e.bullet is not None else bullet
        elif isinstance(e, BulletHitBotEvent):
            ours = True
    return View(turn, me, arena[0], arena[1], tuple(scans), tuple(bumps), hit_wall, hit, bullet, ours)
