"""What a round's fight was, per bot, from what an observer sees: shots, hits, damage dealt and taken, who
destroyed whom, and so how a won round was won.

A win rate alone cannot tell a tank that shoots straight from one that waits for its opponent to die of
inactivity, nor a round won by destroying the opponent from one won by outlasting it. Everything here
is read from the turn as the official protocol shapes it for observers (the server's TickEventForObserver,
or the engine's Turn: its observer_events and bot_states), so a networked battle (battle.Arena, via the
controller's ticks) and TankRoyale-v0 (engine turns) are counted by the same code:

    fight = Fight()
    for msg in ticks_of_one_round:
        fight.add(Frame.from_tick(msg))      # or Frame.from_turn(engine_turn)
    fight.sides[1].hits, fight.ending(1)     # "destroyed", "outlasted" or "lost"

Damage as the brain's Tally counts it (brain.py): a bullet's full damage (4p + 2 max(p - 1, 0), as the
BulletHitBotEvent says, even past the victim's last energy point), and for a collision RAM_DAMAGE to
each of the two bots, counted as dealt by each to the other (whoever rammed).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from actor.bots.tankroyale.rules import RAM_DAMAGE

ENDINGS = ("destroyed", "outlasted", "lost")


@dataclass(frozen=True)
class Frame:
    """One turn as an observer sees it, whichever source it came from (see from_tick and from_turn)."""

    round: int
    turn: int
    bots: dict[int, dict[str, Any]]  # id -> `bot-state` map (x, y, energy, direction, gunDirection, ...)
    bullets: list[dict[str, Any]]  # `bullet-state` maps in flight after the turn
    events: list[dict[str, Any]]  # every event of the turn, in the order they happened

    @staticmethod
    def from_tick(msg: dict[str, Any]) -> Frame:
        """From a TickEventForObserver (the server's, ours or the official one's)."""
        bots = {int(s["id"]): s for s in msg.get("botStates") or [] if "id" in s}
        return Frame(int(msg.get("roundNumber", 0)), int(msg.get("turnNumber", 0)), bots,
                     list(msg.get("bulletStates") or []), list(msg.get("events") or []))

    @staticmethod
    def from_turn(turn: Any) -> Frame:
        """From the engine's Turn (engine.py), as TankRoyale-v0 plays it in process."""
        return Frame(turn.round_number, turn.turn_number, dict(turn.bot_states), list(turn.bullets),
                     list(turn.observer_events))


@dataclass
class Side:
    """One bot's part of a round's fight."""

    shots: int = 0  # bullets it fired
    hits: int = 0  # of them, those that hit a bot
    dealt: float = 0.0  # damage its bullets did, plus RAM_DAMAGE per collision it was in
    taken: float = 0.0  # damage bullets and collisions did to it

    def to_dict(self) -> dict[str, float]:
        return {"shots": self.shots, "hits": self.hits, "dealt": round(self.dealt, 3), "taken": round(self.taken, 3)}


@dataclass
class Fight:
    """One round's fight, turn by turn (`add`); a frame of another round is refused, so one Fight never
    mixes two rounds (FightFeed starts a new one when the round changes)."""

    round: int = 0
    sides: dict[int, Side] = field(default_factory=dict)
    dead: dict[int, int | None] = field(default_factory=dict)  # victim -> who destroyed it (None: nobody)
    turns: int = 0  # the last turn seen
    frames: int = 0  # turns seen
    # (what, bullet id) already counted: a source that repeats an event (one per bot told) counts once
    counted: set[tuple[str, int]] = field(default_factory=set, init=False, repr=False)

    def add(self, frame: Frame) -> None:
        """One turn's events; bots in the frame's states get a side even when nothing happened to them."""
        if self.frames and frame.round != self.round:
            raise ValueError(f"a frame of round {frame.round} added to the fight of round {self.round}")
        self.round, self.turns, self.frames = frame.round, frame.turn, self.frames + 1
        for bot in frame.bots:
            self.side(bot)
        self.add_events(frame.events)

    def add_events(self, events: Iterable[dict[str, Any]]) -> None:
        """The events of one turn (an observer's: all of them, in the order they happened)."""
        events = list(events)
        collided: set[frozenset[int]] = set()
        for e in events:
            kind = e.get("type")
            if kind == "BulletFiredEvent":
                self._fired(e.get("bullet") or {})
            elif kind == "BulletHitBotEvent":
                self._hit(e)
            elif kind == "BotHitBotEvent":
                pair = frozenset((int(e["botId"]), int(e["victimId"])))
                if len(pair) == 2 and pair not in collided:  # observers may get one event per bot of the pair
                    collided.add(pair)
                    for bot in pair:
                        self.side(bot).taken += RAM_DAMAGE
                        self.side(bot).dealt += RAM_DAMAGE
        for e in events:
            if e.get("type") == "BotDeathEvent":
                victim = int(e["victimId"])
                self.dead.setdefault(victim, killer(victim, events))

    def side(self, bot: int) -> Side:
        return self.sides.setdefault(bot, Side())

    def _fired(self, bullet: dict[str, Any]) -> None:
        key = ("fired", int(bullet.get("bulletId", -1)))
        if key not in self.counted:
            self.counted.add(key)
            self.side(int(bullet["ownerId"])).shots += 1

    def _hit(self, e: dict[str, Any]) -> None:
        bullet = e.get("bullet") or {}
        key = ("hit", int(bullet.get("bulletId", -1)))
        if key in self.counted:
            return
        self.counted.add(key)
        shooter, damage = int(bullet["ownerId"]), float(e["damage"])
        self.side(shooter).hits += 1
        self.side(shooter).dealt += damage
        self.side(int(e["victimId"])).taken += damage

    # -- how it ended ---------------------------------------------------------------------------------

    def survived(self, bot: int) -> bool:
        """`bot` alone is left: every other bot in the round died, it did not (the engine's own win, bar draws)."""
        others = [b for b in self.sides if b != bot]
        return bot not in self.dead and bool(others) and all(b in self.dead for b in others)

    def destroyed(self, bot: int) -> int:
        """How many bots died of `bot`'s bullets or of a collision with it."""
        return sum(1 for k in self.dead.values() if k == bot)

    def ending(self, bot: int, won: bool | None = None) -> str:
        """How the round ended for `bot`: "destroyed" (won, and an opponent died of its bullet or of a collision
        with it), "outlasted" (won, but the opponent died otherwise: inactivity, a wall, or the round ended),
        "lost". `won` is the results' word when there are results (the server's ranking); else survival."""
        if not (self.survived(bot) if won is None else won):
            return "lost"
        return "destroyed" if self.destroyed(bot) else "outlasted"


def killer(victim: int, events: list[dict[str, Any]]) -> int | None:
    """Who destroyed `victim` on the turn it died: the first event of the turn that left it below zero, a
    bullet's owner or the other bot of a collision; None when none did (inactivity, a wall)."""
    for e in events:
        if e.get("victimId") != victim or float(e.get("energy", 0.0)) >= 0.0:
            continue
        if e.get("type") == "BulletHitBotEvent":
            return int((e.get("bullet") or {})["ownerId"])
        if e.get("type") == "BotHitBotEvent":
            return int(e["botId"])
    return None


class FightFeed:
    """Observer ticks in, one Fight per round: `fight` is the round being played (or the one just ended,
    until the next round's first tick), so a round-ended callback reads it whole."""

    def __init__(self) -> None:
        self.fight = Fight()

    def add(self, frame: Frame) -> Fight:
        if self.fight.frames and frame.round != self.fight.round:
            self.fight = Fight()
        self.fight.add(frame)
        return self.fight
