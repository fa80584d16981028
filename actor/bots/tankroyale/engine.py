"""The rules of Robocode Tank Royale as one pure, deterministic engine: turn in, turn out.

CONTRACT (fixed; the server, the in-process environment and the opponents are written against it):

- Units and frames are the official game's: x right, y up, origin at the arena's bottom-left corner,
  directions in degrees in [0, 360), 0 = east, counter-clockwise positive; speeds in units per turn.
- Everything the engine returns is plain data shaped like the official protocol's JSON schema
  (camelCase keys, events with a "type" such as "ScannedBotEvent"), so the server sends it as it
  is and the in-process front end reads the same dicts.
- Deterministic for a seed: the same setup, participants, seed and intents give the same game.
- No I/O, no clocks, no threads. Skipped turns are the server's business: a bot whose intent did
  not arrive simply gets no new intent (its last one persists, as the official server does), and
  the server adds the SkippedTurnEvent to that bot's events itself.

Usage:
    engine = Engine(Setup(), [Participant(1, "saclstm-tank"), Participant(2, "SpinBot")], seed=7)
    turn = engine.new_round()                 # turn 1 of round 1: states, no events yet
    while not turn.round_ended:
        turn = engine.step({1: Intent(target_speed=8), 2: Intent(turn_rate=10, firepower=1)})
    if engine.game_ended: results = engine.results()
    else: turn = engine.new_round()
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Setup:
    """The game setup (official `game-setup` schema; defaults are the official "classic" game type)."""

    arena_width: int = 800
    arena_height: int = 600
    number_of_rounds: int = 10
    gun_cooling_rate: float = 0.1
    max_inactivity_turns: int = 450
    turn_timeout_us: int = 30_000
    ready_timeout_us: int = 1_000_000
    game_type: str = "classic"

    def to_schema(self) -> dict[str, Any]:
        """The `game-setup` JSON map the server sends."""
        raise NotImplementedError


@dataclass(frozen=True)
class Participant:
    """One bot in the game: its id (1-based, as the server assigns) and its name."""

    id: int
    name: str
    version: str = "1.0"


@dataclass
class Intent:
    """One bot's orders (official `bot-intent`). None keeps the value last set, as the official server does.

    Out-of-range values are clamped by the engine as the official server clamps them.
    """

    turn_rate: float | None = None
    gun_turn_rate: float | None = None
    radar_turn_rate: float | None = None
    target_speed: float | None = None
    firepower: float | None = None
    adjust_gun_for_body_turn: bool | None = None
    adjust_radar_for_body_turn: bool | None = None
    adjust_radar_for_gun_turn: bool | None = None
    rescan: bool | None = None
    fire_assist: bool | None = None

    @classmethod
    def from_schema(cls, msg: dict[str, Any]) -> Intent:
        """From a `bot-intent` JSON map (camelCase keys; unknown keys ignored)."""
        raise NotImplementedError


@dataclass
class Turn:
    """What one turn produced, as the official protocol shapes it.

    bot_states: bot id -> `bot-state` map (energy, x, y, direction, gunDirection, radarDirection,
        radarSweep, speed, turnRate, gunTurnRate, radarTurnRate, gunHeat, enemyCount, isDroid), for
        every bot alive at the start of this turn (a bot that died this turn is included, energy 0).
    bullets: every bullet in flight after this turn, as `bullet-state` maps
        (bulletId, ownerId, power, x, y, direction).
    events: bot id -> the events that bot is told of this turn (`event` maps with "type" and
        "turnNumber"), in the order the official server generates them.
    observer_events: every event of the turn, for observers and controllers.
    round_ended / game_ended: the round (or the whole game) ended on this turn.
    """

    round_number: int
    turn_number: int
    bot_states: dict[int, dict[str, Any]]
    bullets: list[dict[str, Any]]
    events: dict[int, list[dict[str, Any]]]
    observer_events: list[dict[str, Any]] = field(default_factory=list)
    round_ended: bool = False
    game_ended: bool = False


class Engine:
    """A whole game: rounds of turns for a fixed set of participants."""

    def __init__(self, setup: Setup, participants: list[Participant], seed: int = 0) -> None:
        raise NotImplementedError

    def new_round(self) -> Turn:
        """Start the next round (random start positions and directions from the seed); its first turn."""
        raise NotImplementedError

    def step(self, intents: dict[int, Intent]) -> Turn:
        """Apply the intents that arrived (missing ids keep their last intent) and play one turn."""
        raise NotImplementedError

    @property
    def game_ended(self) -> bool:
        raise NotImplementedError

    def round_results(self) -> list[dict[str, Any]]:
        """Per bot, this round's scores (official `results-for-bot` shape without firstPlaces etc.), ranked."""
        raise NotImplementedError

    def results(self) -> list[dict[str, Any]]:
        """The game's results, summed over rounds, as official `results-for-observer` maps
        (id, name, version, rank, survival, lastSurvivorBonus, bulletDamage, bulletKillBonus,
        ramDamage, ramKillBonus, totalScore, firstPlaces, secondPlaces, thirdPlaces), ranked."""
        raise NotImplementedError
