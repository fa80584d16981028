"""Scripted Tank Royale opponents, after the official sample bots, written once and run two ways.

Each opponent is a pure policy: `reset(rng)` at a round's start, then `act(view) -> Intent` every
turn, where the view is the bot's own state, this turn's scans and events, and the arena. Two thin
adapters feed it:

    the in-process environment   `act_on_turn(policy, bot_id, turn, arena)` reads the engine's
                                 schema-shaped dicts (env.py)
    a real game server           `python -m actor.bots.tankroyale.opponents SpinBot --server ws://...`
                                 runs it as a bot on the official Python bot API

The sample bots block ("turn 90 degrees, then drive to the wall"); a policy acts one turn at a time,
so multi-turn moves are kept as absolute goals (a heading, a start point and a distance) and
re-read from the state every turn, which also makes them immune to how the engine rounds a turn.
Angles follow the game: degrees, 0 = east, counter-clockwise positive, so "turn right" is negative.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from actor.bots.tankroyale import rules as R
from actor.bots.tankroyale.engine import Intent, Turn
from actor.bots.tankroyale.rules import normalize_relative_degrees as normal

# -- what a policy sees -----------------------------------------------------------------------

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


def view_from_schema(bot_id: int, state: dict[str, Any], events: Iterable[dict[str, Any]], turn: int,
                     arena: tuple[float, float]) -> View:
    """The view from the engine's (and the wire protocol's) `bot-state` and event maps."""
    me = Me.from_schema(state)
    scans, bumps, hit_wall, hit, bullet = [], [], False, False, None
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
    return View(turn, me, arena[0], arena[1], tuple(scans), tuple(bumps), hit_wall, hit, bullet)


def view_from_api(state: Any, events: Iterable[Any], turn: int, arena: tuple[float, float]) -> View:
    """The view from the bot API's BotState and event objects (a TickEvent's)."""
    from robocode_tank_royale.bot_api.events import HitBotEvent, HitByBulletEvent, HitWallEvent, ScannedBotEvent

    me = Me(state.x, state.y, state.energy, state.direction, state.gun_direction, state.radar_direction,
            state.speed, state.gun_heat, state.turn_rate, state.gun_turn_rate)
    scans, bumps, hit_wall, hit, bullet = [], [], False, False, None
    for e in events:
        if isinstance(e, ScannedBotEvent):
            scans.append(Scan(e.scanned_bot_id, e.x, e.y, e.energy, e.direction, e.speed))
        elif isinstance(e, HitBotEvent):
            bumps.append(Bump(e.victim_id, e.x, e.y, e.energy, bool(e.rammed)))
        elif isinstance(e, HitWallEvent):
            hit_wall = True
        elif isinstance(e, HitByBulletEvent):
            hit, bullet = True, e.bullet.direction if e.bullet is not None else bullet
    return View(turn, me, arena[0], arena[1], tuple(scans), tuple(bumps), hit_wall, hit, bullet)


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


# -- the policies ---------------------------------------------------------------------------

class Policy:
    """One scripted opponent: state lives here, decisions come from the view alone."""

    name: ClassVar[str] = "Policy"

    def reset(self, rng: np.random.Generator) -> None:
        """A new round: forget everything; `rng` is the only source of chance."""
        self.rng = rng

    def act(self, view: View) -> Intent:
        raise NotImplementedError


def _still() -> Intent:
    """Every order given, so nothing persists from an earlier turn."""
    return Intent(turn_rate=0.0, gun_turn_rate=0.0, radar_turn_rate=0.0, target_speed=0.0, firepower=0.0,
                  adjust_gun_for_body_turn=False, adjust_radar_for_body_turn=False,
                  adjust_radar_for_gun_turn=False, rescan=False)


def _independent() -> Intent:
    """Orders for a bot that turns body, gun and radar each on its own (all adjust flags set)."""
    i = _still()
    i.adjust_gun_for_body_turn = i.adjust_radar_for_body_turn = i.adjust_radar_for_gun_turn = True
    return i


class SittingDuck(Policy):
    """A stationary target (sample "SittingDuck"/"Target" before it is hurt): does nothing at all."""

    name = "SittingDuck"

    def act(self, view: View) -> Intent:
        return _still()


class SpinBot(Policy):
    """Sample SpinBot: circles right at speed 5 and fires 3 at whatever its (body-fixed) radar sweeps;
    on a collision it fires 3 if the other bot is within 10 degrees ahead."""

    name = "SpinBot"

    def act(self, view: View) -> Intent:
        me, i = view.me, _still()
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

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.phase, self.heading, self.move, self.dodge = "align", None, None, None
        self.peek = False

    def act(self, view: View) -> Intent:
        me, i = view.me, _still()
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

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.turn_dir, self.heading, self.move = -1.0, None, None

    def act(self, view: View) -> Intent:
        me, i = view.me, _still()
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


def _lock_radar(me: Me, bearing: float) -> float:
    """Radar turn that sweeps past `bearing` (twice the offset), so the next turn scans the bot again."""
    off = normal(bearing - me.radar_direction)
    return R.limit_radar_turn_rate(2.0 * off if abs(off) > 1e-6 else R.MAX_RADAR_TURN_RATE)


class Tracker(Policy):
    """Classic Tracker: picks a bot and keeps its radar on it; turns the gun straight at it (head-on aim),
    drives to about 140 when farther than 150, backs off under 100, and fires 3 once the gun is on it and
    it is close. Lost for more than 11 turns: takes whichever bot it sees next."""

    target: int | None
    last: tuple[float, float] | None

    name = "Tracker"

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.target, self.lost, self.last = None, 0, None

    def act(self, view: View) -> Intent:
        me, i = view.me, _independent()
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
        i.gun_turn_rate, i.radar_turn_rate = R.limit_gun_turn_rate(gun_off), _lock_radar(me, bearing)
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

    def act(self, view: View) -> Intent:
        me, i = view.me, _independent()
        if not view.scans:
            i.gun_turn_rate = i.radar_turn_rate = -10.0  # the sample's turnGunRight(10)
            return i
        s = view.scans[0]
        bearing = direction_to(me, s.x, s.y)
        off = normal(bearing - me.gun_direction)
        i.gun_turn_rate, i.radar_turn_rate = R.limit_gun_turn_rate(off), _lock_radar(me, bearing)
        power = min(R.MAX_FIREPOWER - abs(off), me.energy - 0.1)  # the sample keeps 0.1 of its energy
        if abs(off) <= 3.0 and me.gun_heat == 0 and power >= R.MIN_FIREPOWER:
            i.firepower = power
        return i


class HeadOnBot(Policy):
    """Baseline head-on aim: stands still, spins its radar, turns the gun at the last scan and fires when
    the gun points within the bot's radius of it (harder when closer)."""

    last: tuple[float, float] | None

    name = "HeadOnBot"

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.last = None

    def act(self, view: View) -> Intent:
        me, i = view.me, _independent()
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


class RandomBot(Policy):
    """Baseline random actions: a random drive, turn and gun turn held for 5-30 turns, the radar spinning,
    and a random shot at a 10% chance each turn the gun is cool."""

    name = "RandomBot"

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.hold, self.orders = 0, (0.0, 0.0, 0.0)

    def act(self, view: View) -> Intent:
        i = _independent()
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


OPPONENTS: dict[str, type[Policy]] = {
    p.name: p for p in (SittingDuck, SpinBot, Walls, RamFire, Tracker, TrackFire, RandomBot, HeadOnBot)
}
import actor.bots.tankroyale.samples  # noqa: E402, F401  more sample bots (held out of training) add themselves


def make(name: str) -> Policy:
    """A fresh policy by its key (the bot's name in the game); call reset(rng) before a round."""
    try:
        return OPPONENTS[name]()
    except KeyError:
        raise ValueError(f"unknown opponent {name!r}; known: {', '.join(OPPONENTS)}") from None


# -- adapter (b): the engine's dicts ------------------------------------------------------------

def act_on_turn(policy: Policy, bot_id: int, turn: Turn, arena: tuple[float, float]) -> Intent:
    """The policy's orders for bot `bot_id` after `turn` (its state and the events it was told of)."""
    view = view_from_schema(bot_id, turn.bot_states[bot_id], turn.events.get(bot_id, ()), turn.turn_number, arena)
    return policy.act(view)


# -- adapter (a): a bot on the official Python bot API ------------------------------------------

def apply_intent(bot: Any, intent: Intent) -> None:
    """Set a bot API bot's orders from an Intent (None leaves an order as it was, as on the wire)."""
    for field in ("target_speed", "turn_rate", "gun_turn_rate", "radar_turn_rate", "adjust_gun_for_body_turn",
                  "adjust_radar_for_body_turn", "adjust_radar_for_gun_turn"):
        value = getattr(intent, field)
        if value is not None:
            setattr(bot, field, value)
    if intent.firepower:  # the bot API refuses a shot while the gun is hot and clears it once fired
        bot.set_fire(intent.firepower)
    if intent.rescan:
        bot.set_rescan()


def bot(name: str, server_url: str | None = None, server_secret: str | None = None, seed: int = 0) -> Any:
    """The opponent `name` as a bot on the official API (imported here: the environment never needs it).

    A `Bot` whose run loop only calls go(): the bot API dispatches a turn's events from go(), the
    TickEvent first, and on_tick sets the orders that the next go() sends. (A BaseBot calling go() in
    its handlers would never be told of a tick: nothing dispatches its events.)
    """
    from robocode_tank_royale.bot_api import Bot, BotInfo

    from actor.bots.tankroyale.botapi import end_on_clean_close

    end_on_clean_close()  # a server shutting down cleanly ends start(), not the process's exit
    policy = make(name)

    class OpponentBot(Bot):
        def __init__(self) -> None:
            about = (policy.__doc__ or "").split(":")[0][:200]
            info = BotInfo(name=name, version="1.0", authors=["saclstm"], description=about,
                           game_types={"classic", "melee", "1v1"}, platform="Python", programming_lang="Python")
            super().__init__(info, server_url, server_secret)
            self.policy, self.arena = policy, (800.0, 600.0)
            self.policy.reset(np.random.default_rng(seed))

        def on_game_started(self, e: Any) -> None:
            self.arena = (e.game_setup.arena_width, e.game_setup.arena_height)

        def on_round_started(self, e: Any) -> None:
            self.policy.reset(np.random.default_rng([seed, e.round_number]))

        def on_tick(self, e: Any) -> None:
            if e.bot_state is not None:
                apply_intent(self, self.policy.act(view_from_api(e.bot_state, e.events, e.turn_number, self.arena)))

        def run(self) -> None:
            while self.running:
                self.go()

    return OpponentBot()


def main(argv: list[str] | None = None) -> int:
    """No server at the URL is one line and exit 1; `--retry-s` waits for one, and for its return."""
    from actor.bots.tankroyale.cli import wait_for_server

    p = argparse.ArgumentParser(prog="python -m actor.bots.tankroyale.opponents",
                                description="Run a scripted Tank Royale opponent against a game server.")
    p.add_argument("name", choices=sorted(OPPONENTS), help="the opponent (also its bot name in the game)")
    p.add_argument("--server", default="ws://localhost:7654", help="game server URL")
    p.add_argument("--secret", default=None, help="the server's bot secret, if any")
    p.add_argument("--seed", type=int, default=0, help="seed for the opponents that use chance")
    p.add_argument("--retry-s", type=float, default=0.0, help="wait up to this long for the server, at start and "
                   "whenever it goes away (0: exit when there is none)")
    args = p.parse_args(argv)
    from protocol.lifeline import hold

    hold()  # started by tank-train or tank-eval: end when it ends
    while True:
        if not wait_for_server(args.server, args.retry_s):
            print(f"opponents: no game server answers at {args.server}", file=sys.stderr)
            return 1
        try:
            b = bot(args.name, args.server, args.secret, args.seed)
        except ImportError as exc:
            print(f"opponents: needs the Tank Royale bot API (pip install 'saclstm[tankroyale]'): {exc}",
                  file=sys.stderr)
            return 2
        b.start()  # returns when the server closes the connection
        if args.retry_s <= 0:
            return 0


if __name__ == "__main__":  # run the imported module's main: samples.py registers into it, not into __main__
    from actor.bots.tankroyale.opponents import main as _main

    sys.exit(_main())
