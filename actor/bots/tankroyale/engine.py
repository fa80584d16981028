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

Sources: repository robocode-dev/tank-royale, server/src/main/kotlin/dev/robocode/tankroyale/server/
(core/TurnProcessor, GunEngine, CollisionDetector, BotInitializer; rules/; model/; score/), the latest code found
(its main branch after release 0.36: detect-then-apply collisions, "Classic" survival scoring); the numbers and
formulas live in rules.py. The server never sends HitByBulletEvent or DeathEvent: it sends BulletHitBotEvent and
BotDeathEvent to the victim too, and the bot API renames them for the victim.

Official quirks kept on purpose (they change play): a target speed of exactly 0 stops a bot in one turn and
crossing zero from a speed v > 2 gives v/2 - 1 (rules.calc_new_bot_speed); after a wall hit with an event the next
wall hit is silent and free; firing costs the firepower asked for even above 3; a bullet's hit test is the line
from its point to its next one; a bullet destroyed by another bullet still hits a bot that turn; a killing shot
scores only the energy its victim had left; leaders with a total of exactly 0 get rank 0; results_for_bot's rank
is the position in the accumulated list and its bulletKillBonus is truncated.

Where this engine may differ from the official server:
- Randomness is random.Random(seed) (start positions, the first-turn collision move), not java.util.Random.
- A bot's events are in the order they were generated; the official server keeps them in a HashSet (no order),
  so fire assist here takes the first bot scanned last turn where the official one takes any of them.
- bot_states gives a bot that died this turn energy 0 (this contract); the official state carries the negative
  energy (events here do carry it, as officially).
- An intent field left None keeps its last value (this contract, and older servers). The latest official
  GameServer rebuilds each received intent from defaults, so an omitted field becomes 0/false (fireAssist true);
  the official bot APIs send every field, so only hand-written clients can tell.
- round_results() is this round alone; the official RoundEndedEventForBot carries the results accumulated so far,
  which results_for_bot(bot_id) gives.
- No teams, droids, team messages, colours, debug graphics or bot output; Python's math library may differ from
  the JVM's in the last bit of a sine or cosine.
"""

from __future__ import annotations

import math
import numbers
import random
from dataclasses import dataclass, field
from typing import Any

from actor.bots.tankroyale import rules as R

_RAD = math.pi / 180.0
_DEG = 180.0 / math.pi
_NEAR = R.NEAR_EPSILON
_BOT_R = R.BOT_BOUNDING_CIRCLE_RADIUS
_BOT_D = float(R.BOT_BOUNDING_CIRCLE_DIAMETER)
_BOT_D2 = _BOT_D * _BOT_D
_BULLET_D = R.BULLET_MAX_BOUNDING_CIRCLE_DIAMETER
_BULLET_D2 = _BULLET_D * _BULLET_D
# A bullet's line (at most one step long) cannot touch a bot whose centre is farther than a step plus 18 away.
_HIT_REACH = R.MAX_BULLET_SPEED + _BOT_R + 1.0
_SCAN_REACH2 = (R.RADAR_RADIUS + _BOT_R) ** 2
# An arm (a 1200-long line from the scanner) cannot touch a circle of radius 18 whose centre is farther than 18
# from the arm's whole line: a cheap miss before the official line/circle test (margin kept for rounding).
_ARM_MISS = R.RADAR_RADIUS * (_BOT_R + 0.01)


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
    min_number_of_participants: int = 2
    max_number_of_participants: int | None = None
    default_turns_per_second: int = 30

    def __post_init__(self) -> None:
        for name, low, high in (("arena_width", R.ARENA_MIN_SIZE, R.ARENA_MAX_SIZE),
                                ("arena_height", R.ARENA_MIN_SIZE, R.ARENA_MAX_SIZE),
                                ("gun_cooling_rate", R.MIN_GUN_COOLING_RATE, R.MAX_GUN_COOLING_RATE)):
            value = getattr(self, name)
            kinds = (int, float) if name == "gun_cooling_rate" else (int,)
            if not isinstance(value, kinds) or isinstance(value, bool) or not low <= value <= high:
                raise ValueError(f"Setup.{name} must be within [{low}, {high}], got {value!r}")
        for name in ("number_of_rounds", "max_inactivity_turns"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < (1 if name == "number_of_rounds" else 0):
                raise ValueError(f"Setup.{name} must be a non-negative whole number (rounds >= 1), got {value!r}")

    def to_schema(self) -> dict[str, Any]:
        """The `game-setup` JSON map the server sends (nothing is locked)."""
        msg: dict[str, Any] = {
            "gameType": self.game_type,
            "arenaWidth": self.arena_width, "isArenaWidthLocked": False,
            "arenaHeight": self.arena_height, "isArenaHeightLocked": False,
            "minNumberOfParticipants": self.min_number_of_participants, "isMinNumberOfParticipantsLocked": False,
            "isMaxNumberOfParticipantsLocked": False,
            "numberOfRounds": self.number_of_rounds, "isNumberOfRoundsLocked": False,
            "gunCoolingRate": self.gun_cooling_rate, "isGunCoolingRateLocked": False,
            "maxInactivityTurns": self.max_inactivity_turns, "isMaxInactivityTurnsLocked": False,
            "turnTimeout": self.turn_timeout_us, "isTurnTimeoutLocked": False,
            "readyTimeout": self.ready_timeout_us, "isReadyTimeoutLocked": False,
            "defaultTurnsPerSecond": self.default_turns_per_second,
        }
        if self.max_number_of_participants is not None:
            msg["maxNumberOfParticipants"] = self.max_number_of_participants
        return msg


@dataclass(frozen=True)
class Participant:
    """One bot in the game: its id (1-based, as the server assigns) and its name."""

    id: int
    name: str
    version: str = "1.0"


_INTENT_NUMBERS = {"turnRate": "turn_rate", "gunTurnRate": "gun_turn_rate", "radarTurnRate": "radar_turn_rate",
                   "targetSpeed": "target_speed", "firepower": "firepower"}
_INTENT_FLAGS = {"adjustGunForBodyTurn": "adjust_gun_for_body_turn",
                 "adjustRadarForBodyTurn": "adjust_radar_for_body_turn",
                 "adjustRadarForGunTurn": "adjust_radar_for_gun_turn", "rescan": "rescan", "fireAssist": "fire_assist"}


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
        """From a `bot-intent` JSON map (camelCase keys; unknown keys ignored).

        Numbers must be finite numbers and flags booleans (JSON null = not set); anything else is a ValueError,
        so a malformed intent is refused whole instead of half applied.
        """
        if not isinstance(msg, dict):
            raise ValueError(f"bot-intent must be a JSON object, got {type(msg).__name__}")
        kwargs: dict[str, Any] = {}
        for key, attr in _INTENT_NUMBERS.items():
            value = msg.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"bot-intent {key} must be a finite number, got {value!r}")
            kwargs[attr] = float(value)
        for key, attr in _INTENT_FLAGS.items():
            value = msg.get(key)
            if value is None:
                continue
            if not isinstance(value, bool):
                raise ValueError(f"bot-intent {key} must be true or false, got {value!r}")
            kwargs[attr] = value
        return cls(**kwargs)


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


_NUMBER_FIELDS = ("turn_rate", "gun_turn_rate", "radar_turn_rate", "target_speed", "firepower")


def _check_intent(bot_id: int, intent: Intent) -> None:
    if not isinstance(intent, Intent):
        raise ValueError(f"bot {bot_id}: intent must be an Intent, got {type(intent).__name__}")
    for name in _NUMBER_FIELDS:
        value = getattr(intent, name)
        if value is not None and not ((type(value) is float or isinstance(value, numbers.Real))
                                      and math.isfinite(value)):
            raise ValueError(f"bot {bot_id}: intent {name} must be a finite number or None, got {value!r}")


class _Bot:
    """A bot's state in the current round, its standing orders and last turn's snapshot (ModelUpdater's botsCopies)."""

    __slots__ = ("id", "energy", "x", "y", "direction", "gun_direction", "radar_direction", "radar_sweep", "speed",
                 "turn_rate", "gun_turn_rate", "radar_turn_rate", "gun_heat", "px", "py", "pdir", "pgun", "pradar",
                 "t_speed", "t_turn", "t_gun", "t_radar", "t_fire", "adj_gun_body", "adj_radar_body",
                 "adj_radar_gun", "rescan", "fire_assist", "wall_event", "last_scan", "events")

    def __init__(self, bot_id: int, x: float, y: float, direction: float) -> None:
        self.id = bot_id
        self.energy = R.INITIAL_BOT_ENERGY
        self.x = x
        self.y = y
        self.direction = self.gun_direction = self.radar_direction = direction  # body, gun and radar start aligned
        self.radar_sweep = self.speed = self.turn_rate = self.gun_turn_rate = self.radar_turn_rate = 0.0
        self.gun_heat = R.INITIAL_GUN_HEAT
        self.px, self.py, self.pdir, self.pgun, self.pradar = x, y, direction, direction, direction
        # model/BotIntent.kt defaults: everything 0/false except fire assist, which is on by default
        self.t_speed = self.t_turn = self.t_gun = self.t_radar = self.t_fire = 0.0
        self.adj_gun_body = self.adj_radar_body = self.adj_radar_gun = self.rescan = False
        self.fire_assist = True
        self.wall_event = False  # a BotHitWallEvent was sent last turn (the next wall hit is then silent)
        self.last_scan: tuple[float, float] | None = None  # first bot scanned last turn (for fire assist)
        self.events: list[dict[str, Any]] = []

    def apply(self, intent: Intent) -> None:
        """model/BotIntent.update: fields that are set replace the standing order; unset ones keep it."""
        if intent.target_speed is not None:
            self.t_speed = float(intent.target_speed)
        if intent.turn_rate is not None:
            self.t_turn = float(intent.turn_rate)
        if intent.gun_turn_rate is not None:
            self.t_gun = float(intent.gun_turn_rate)
        if intent.radar_turn_rate is not None:
            self.t_radar = float(intent.radar_turn_rate)
        if intent.firepower is not None:
            self.t_fire = float(intent.firepower)
        if intent.adjust_gun_for_body_turn is not None:
            self.adj_gun_body = bool(intent.adjust_gun_for_body_turn)
        if intent.adjust_radar_for_body_turn is not None:
            self.adj_radar_body = bool(intent.adjust_radar_for_body_turn)
        if intent.adjust_radar_for_gun_turn is not None:
            self.adj_radar_gun = bool(intent.adjust_radar_for_gun_turn)
        if intent.rescan is not None:
            self.rescan = bool(intent.rescan)
        if intent.fire_assist is not None:
            self.fire_assist = bool(intent.fire_assist)

    def disable_movement(self) -> None:
        """model/BotIntent.disableMovement: a disabled bot's orders are zeroed."""
        self.t_speed = self.t_turn = self.t_gun = self.t_radar = self.t_fire = 0.0


class _Bullet:
    """A bullet: its start point and the turns flown (model/Bullet, IBullet.calcPosition); x/y now, nx/ny next turn."""

    __slots__ = ("id", "owner", "power", "direction", "sx", "sy", "speed", "cos", "sin", "tick", "x", "y", "nx", "ny")

    def __init__(self, bullet_id: int, owner: int, power: float, direction: float, x: float, y: float) -> None:
        self.id = bullet_id
        self.owner = owner
        self.power = power
        self.direction = direction
        self.sx = self.x = x
        self.sy = self.y = y
        self.speed = R.calc_bullet_speed(power)
        angle = direction * _RAD
        self.cos = math.cos(angle)
        self.sin = math.sin(angle)
        self.tick = 0
        self.nx = self.ny = 0.0

    def advance(self) -> None:
        self.tick = tick = self.tick + 1
        distance = self.speed * tick
        self.x = self.sx + self.cos * distance
        self.y = self.sy + self.sin * distance
        distance = self.speed * (tick + 1)
        self.nx = self.sx + self.cos * distance
        self.ny = self.sy + self.sin * distance

    def state(self) -> dict[str, Any]:
        return {"bulletId": self.id, "ownerId": self.owner, "power": self.power, "x": self.x, "y": self.y,
                "direction": self.direction}


class _Record:
    """score/ScoreAndDamage.kt: what one bot did to the others in the current round."""

    __slots__ = ("bullet_damage", "ram_hits", "bullet_kills", "ram_kills", "survival", "last_survivor")

    def __init__(self) -> None:
        self.bullet_damage: dict[int, float] = {}
        self.ram_hits: dict[int, int] = {}
        self.bullet_kills: dict[int, None] = {}  # insertion-ordered sets, as Kotlin's mutableSetOf
        self.ram_kills: dict[int, None] = {}
        self.survival = 0
        self.last_survivor = 0

    def total_damage(self, victim: int) -> float:
        return self.bullet_damage.get(victim, 0.0) + self.ram_hits.get(victim, 0) * R.RAM_DAMAGE

    def score(self) -> dict[str, Any]:
        """score/ScoreTracker.calculateScore, as floats (rounded only when a results table is made)."""
        return {
            "bulletDamage": R.SCORE_PER_BULLET_DAMAGE * sum(self.bullet_damage.values()),
            "bulletKillBonus": R.BONUS_PER_BULLET_KILL * sum(self.total_damage(v) for v in self.bullet_kills),
            "ramDamage": R.SCORE_PER_RAM_DAMAGE * (sum(self.ram_hits.values()) * R.RAM_DAMAGE),
            "ramKillBonus": R.BONUS_PER_RAM_KILL * sum(self.total_damage(v) for v in self.ram_kills),
            "survival": R.SCORE_PER_SURVIVAL * self.survival,
            "lastSurvivorBonus": R.BONUS_PER_LAST_SURVIVOR * self.last_survivor,
            "firstPlaces": 0, "secondPlaces": 0, "thirdPlaces": 0, "rank": 0,
        }


_SCORE_PARTS = ("bulletDamage", "bulletKillBonus", "ramDamage", "ramKillBonus", "survival", "lastSurvivorBonus")
_PLACES = ("firstPlaces", "secondPlaces", "thirdPlaces")


def _total(score: dict[str, Any]) -> float:
    """model/Score.totalScore, summed in the official order (floating-point sums depend on it)."""
    return (score["bulletDamage"] + score["bulletKillBonus"] + score["ramDamage"] + score["ramKillBonus"]
            + score["survival"] + score["lastSurvivorBonus"])


def _update_ranks(scores: list[dict[str, Any]]) -> None:
    """score/RankDecorator: shared ranks by total score, best first.

    Kept as the official code has it: it starts from a "previous total" of 0.0 with rank 0, so leaders whose total
    is exactly 0 get rank 0 (and, in a round, no placement). Only a round where nobody scored at all shows it.
    """
    last_total, last_rank = 0.0, 0
    for index, score in enumerate(sorted(scores, key=_total, reverse=True)):
        total = _total(score)
        if total != last_total:
            last_rank = index + 1
        score["rank"] = last_rank
        last_total = total


def _results_row(score: dict[str, Any]) -> dict[str, int]:
    """The whole numbers of a `results-for-bot` table: GameServer rounds half up, but truncates bulletKillBonus."""
    row = {key: R.round_to_int(score[key]) for key in _SCORE_PARTS}
    row["bulletKillBonus"] = int(score["bulletKillBonus"])
    row["totalScore"] = R.round_to_int(_total(score))
    return row


class _ScoreTracker:
    """score/ScoreTracker.kt: one round's damage records, deaths, survival and last-survivor counts."""

    def __init__(self, ids: list[int]) -> None:
        self.ids = ids
        self.records = {i: _Record() for i in ids}
        self.alive = dict.fromkeys(ids)
        self.last_survivors_set = False

    def bullet_hit(self, shooter: int, victim: int, damage: float, killed: bool) -> None:
        record = self.records[shooter]
        record.bullet_damage[victim] = record.bullet_damage.get(victim, 0.0) + damage
        if killed:
            record.bullet_kills[victim] = None

    def ram_hit(self, rammer: int, victim: int, killed: bool) -> None:
        record = self.records[rammer]
        record.ram_hits[victim] = record.ram_hits.get(victim, 0) + 1
        if killed:
            record.ram_kills[victim] = None

    def deaths(self, victims: list[int]) -> None:
        """registerDeaths (latest, "Classic" scoring): every bot still alive scores one survival per bot that died
        (deaths of one turn are all dead first); when one bot is left it alone gets the last survivor count, one
        per opponent; if the last bots die together nobody gets it."""
        newly = [victim for victim in victims if victim in self.alive]
        if not newly:
            return
        for victim in newly:
            del self.alive[victim]
        for _ in newly:
            for survivor in self.alive:
                self.records[survivor].survival += 1
        if not self.last_survivors_set and len(self.alive) == 1:
            self.last_survivors_set = True
            for survivor in self.alive:
                self.records[survivor].last_survivor += len(self.ids) - 1

    def scores(self) -> list[dict[str, Any]]:
        """ScoreCalculator.getScores without placements: best total first (stable), shared ranks."""
        scores = []
        for bot_id in self.ids:
            score = self.records[bot_id].score()
            score["id"] = bot_id
            scores.append(score)
        scores.sort(key=_total, reverse=True)
        _update_ranks(scores)
        return scores


class Engine:
    """A whole game: rounds of turns for a fixed set of participants.

    Each turn runs the official server's pipeline (core/TurnProcessor.kt, the refactored ModelUpdater) in its
    order: snapshot, cool and fire guns, execute intents (speed, move, then turn), bot-wall hits, bot-bot hits,
    keep bots inside, radar scans, move bullets, bullet-wall hits, bullet hits (bullets and bots), inactivity,
    disabled bots, deaths, round over.
    """

    def __init__(self, setup: Setup, participants: list[Participant], seed: int = 0,
                 initial_positions: dict[int, tuple[float | None, float | None, float | None]] | None = None) -> None:
        """initial_positions: bot id -> (x, y, direction), any of them None for random: the official server's
        debugging option (--enable-initial-position, ModelUpdater.adjustForInitialPosition), x and y clamped so
        the bot is inside the arena. It applies to every round."""
        if not participants:
            raise ValueError("a game needs at least one participant")
        ids = [p.id for p in participants]
        if len(set(ids)) != len(ids) or any(isinstance(i, bool) or not isinstance(i, int) or i < 1 for i in ids):
            raise ValueError(f"participant ids must be distinct whole numbers >= 1, got {ids}")
        grid_w, grid_h = setup.arena_width // R.START_CELL_SIZE, setup.arena_height // R.START_CELL_SIZE
        if grid_w * grid_h < len(ids):
            raise ValueError(f"arena {setup.arena_width}x{setup.arena_height} is too small for {len(ids)} bots")
        self.setup = setup
        self.participants = list(participants)
        self._by_id = {p.id: p for p in participants}
        self._ids = ids
        self._rng = random.Random(seed)
        self._width = float(setup.arena_width)
        self._height = float(setup.arena_height)
        self._round_number = 0
        self._turn_number = 0
        self._round_ended = True
        self._game_ended = False
        self._bots: list[_Bot] = []
        self._bullets: list[_Bullet] = []
        self._next_bullet_id = 0
        self._inactivity = 0
        self._tracker = _ScoreTracker(ids)
        self._round_scores: list[dict[str, Any]] | None = None
        self._accumulated: list[dict[str, Any]] = []
        self._initial = dict(initial_positions or {})
        unknown = set(self._initial) - set(ids)
        if unknown:
            raise ValueError(f"initial positions for unknown bot ids {sorted(unknown)}")

    # --- public -------------------------------------------------------------------------------------------------

    @property
    def round_number(self) -> int:
        return self._round_number

    @property
    def turn_number(self) -> int:
        return self._turn_number

    @property
    def game_ended(self) -> bool:
        return self._game_ended

    def new_round(self) -> Turn:
        """Start the next round (random start positions and directions from the seed); its first turn.

        As the official ModelUpdater.update: the new round's first turn is played at once with no orders (they were
        cleared), so guns have cooled once (3.0 -> 2.9) and bots stand where they were placed.
        """
        if self._game_ended:
            raise RuntimeError("the game has ended: no more rounds")
        if not self._round_ended:
            raise RuntimeError(f"round {self._round_number} is still being played")
        self._round_number += 1
        self._turn_number = 0
        self._round_ended = False
        self._next_bullet_id = 0
        self._bullets = []
        self._inactivity = 0
        self._tracker = _ScoreTracker(self._ids)
        self._round_scores = None
        self._bots = self._place_bots()
        return self._play_turn()

    def step(self, intents: dict[int, Intent]) -> Turn:
        """Apply the intents that arrived (missing ids keep their last intent) and play one turn."""
        if self._round_ended:
            raise RuntimeError("no round is being played: call new_round() first")
        for bot_id, intent in intents.items():  # all checked before any is applied: a bad one changes nothing
            if bot_id not in self._by_id:
                raise ValueError(f"intent for unknown bot id {bot_id!r}")
            _check_intent(bot_id, intent)
        alive = {b.id: b for b in self._bots}
        for bot_id, intent in intents.items():
            bot = alive.get(bot_id)
            if bot is not None:  # a dead bot's orders are ignored
                bot.apply(intent)
        return self._play_turn()

    def round_results(self) -> list[dict[str, Any]]:
        """Per bot, this round's scores (official `results-for-bot` shape without firstPlaces etc.), ranked."""
        scores = self._round_scores if self._round_scores is not None else self._tracker.scores()
        return [self._row(score) for score in scores]

    def results(self) -> list[dict[str, Any]]:
        """The game's results, summed over rounds, as official `results-for-observer` maps
        (id, name, version, rank, survival, lastSurvivorBonus, bulletDamage, bulletKillBonus,
        ramDamage, ramKillBonus, totalScore, firstPlaces, secondPlaces, thirdPlaces), ranked.

        Rounds count once they have ended. Best total first, equal totals by id, with shared ranks (as the
        latest official ResultsView; older versions keyed a TreeMap by total alone and lost one of two equal rows).
        """
        scores = self._accumulated or self._zero_scores()
        rows = []
        for score in sorted(scores, key=lambda sc: (-_total(sc), sc["id"])):
            row = self._row(score)
            for key in _PLACES:
                row[key] = score[key]
            rows.append(row)
        return rows

    def results_for_bot(self, bot_id: int) -> dict[str, int]:
        """What the official server puts in a bot's RoundEndedEventForBot / GameEndedEventForBot: the results
        accumulated over the rounds ended so far, with rank = the bot's position in the accumulated list (which
        the official server orders by the first round's totals and never re-sorts: GameServer.getResultsForBot)."""
        scores = self._accumulated or self._zero_scores()
        for index, score in enumerate(scores):
            if score["id"] == bot_id:
                row = _results_row(score)
                row["rank"] = index + 1
                for key in _PLACES:
                    row[key] = score[key]
                return row
        raise ValueError(f"no results for bot id {bot_id!r}")

    # --- round setup ----------------------------------------------------------------------------------------------

    def _row(self, score: dict[str, Any]) -> dict[str, Any]:
        p = self._by_id[score["id"]]
        return {"id": p.id, "name": p.name, "version": p.version, "rank": score["rank"], **_results_row(score)}

    def _zero_scores(self) -> list[dict[str, Any]]:
        return _ScoreTracker(self._ids).scores()

    def _place_bots(self) -> list[_Bot]:
        """ModelUpdater.randomBotPosition: one bot per free cell of a ~50x50 grid, somewhere inside that cell so
        that its bounding circle stays in it; body, gun and radar share one random direction."""
        setup, rng = self.setup, self._rng
        grid_w = setup.arena_width // R.START_CELL_SIZE
        grid_h = setup.arena_height // R.START_CELL_SIZE
        cell_w = setup.arena_width // grid_w
        cell_h = setup.arena_height // grid_h
        cells = grid_w * grid_h
        occupied: set[int] = set()
        bots = []
        for bot_id in self._ids:
            while True:
                cell = rng.randrange(cells)
                if cell not in occupied:
                    break
            occupied.add(cell)
            row, col = divmod(cell, grid_w)
            x = col * cell_w + _BOT_R + rng.random() * (cell_w - R.BOT_BOUNDING_CIRCLE_DIAMETER)
            y = row * cell_h + _BOT_R + rng.random() * (cell_h - R.BOT_BOUNDING_CIRCLE_DIAMETER)
            direction = rng.random() * 360
            fixed = self._initial.get(bot_id)
            if fixed is not None:
                fx, fy, fdir = fixed
                x = R.clamp(float(x if fx is None else fx), _BOT_R, self._width - _BOT_R)
                y = R.clamp(float(y if fy is None else fy), _BOT_R, self._height - _BOT_R)
                direction = direction if fdir is None else float(fdir) % 360.0
            bots.append(_Bot(bot_id, float(x), float(y), direction))
        return bots

    # --- one turn (core/TurnProcessor.processTurn) ---------------------------------------------------------------

    def _play_turn(self) -> Turn:
        self._turn_number += 1
        tn = self._turn_number
        bots = self._bots
        by_id = {b.id: b for b in bots}
        obs: list[dict[str, Any]] = []
        for b in bots:  # botsCopies: the state at the start of the turn
            b.events = []
            b.px, b.py, b.pdir, b.pgun, b.pradar = b.x, b.y, b.direction, b.gun_direction, b.radar_direction
        self._cool_and_fire(bots, tn, obs)
        self._execute_intents(bots)
        if tn > 1:  # the official wall check needs a previous turn of the round
            self._bot_wall_hits(bots, tn, obs)
        self._bot_bot_hits(bots, tn, obs)
        self._constrain(bots)
        self._scans(bots, tn, obs)
        self._move_bullets(by_id, tn, obs)
        if self._bullet_hits(bots, by_id, tn, obs):
            self._inactivity = 0
        if self._inactivity > self.setup.max_inactivity_turns:
            for b in bots:
                b.energy -= R.INACTIVITY_DAMAGE
        self._inactivity += 1
        for b in bots:
            if 0.0 <= b.energy < _NEAR:
                b.disable_movement()
        dead = [b.id for b in bots if b.energy < 0.0]
        for victim in dead:
            event = {"type": "BotDeathEvent", "turnNumber": tn, "victimId": victim}
            for b in bots:
                b.events.append(event)
            obs.append(event)
        self._tracker.deaths(dead)
        if self._round_is_over(bots):
            self._end_round(by_id, tn)
        turn = self._snapshot(bots, obs)
        if dead:
            self._bots = [b for b in bots if b.energy >= 0.0]
        return turn

    def _cool_and_fire(self, bots: list[_Bot], tn: int, obs: list[dict[str, Any]]) -> None:
        """GunEngine.coolDownAndFireGuns: before the bots move, so a shot leaves along last turn's gun direction."""
        rate = self.setup.gun_cooling_rate
        for b in bots:
            if b.gun_heat == 0.0 and b.energy >= _NEAR:
                fp = b.t_fire
                if fp >= R.MIN_FIREPOWER and b.energy > fp:
                    self._fire(b, fp, tn, obs)
            else:
                heat = b.gun_heat - rate
                b.gun_heat = heat if heat > 0.0 else 0.0

    def _fire(self, b: _Bot, firepower: float, tn: int, obs: list[dict[str, Any]]) -> None:
        """GunEngine.fireBullet: power is capped at 3 but the energy paid is the firepower asked for (official)."""
        power = min(firepower, R.MAX_FIREPOWER)
        direction = b.gun_direction
        if b.fire_assist and b.gun_direction == b.radar_direction and b.last_scan is not None:
            sx, sy = b.last_scan  # fire assist: aim at the bot this radar scanned last turn
            direction = (math.atan2(sy - b.y, sx - b.x) * _DEG) % 360.0
        b.gun_heat = R.calc_gun_heat(power)
        self._next_bullet_id += 1
        bullet = _Bullet(self._next_bullet_id, b.id, power, direction, b.x, b.y)
        self._bullets.append(bullet)
        event = {"type": "BulletFiredEvent", "turnNumber": tn, "bullet": bullet.state()}
        b.events.append(event)
        obs.append(event)
        b.energy -= firepower

    def _execute_intents(self, bots: list[_Bot]) -> None:
        """TurnProcessor.executeBotIntent for enabled bots: new speed, move along the old direction, then turn.

        Turn rates are clamped as rules/math.kt does (body 10 - 0.75|speed| with the new speed, gun 20, radar 45);
        the gun and radar ride on the body (and the radar on the gun) unless the adjust flags say otherwise.
        """
        new_speed = R.calc_new_bot_speed
        cos, sin = math.cos, math.sin
        max_body, max_gun, max_radar = R.MAX_TURN_RATE, R.MAX_GUN_TURN_RATE, R.MAX_RADAR_TURN_RATE
        for b in bots:
            if b.energy < _NEAR:
                continue  # disabled: no movement at all
            speed, target = b.speed, b.t_speed
            if speed != target or speed == 0.0:  # cruising at the target speed keeps it (calcNewBotSpeed)
                speed = b.speed = new_speed(speed, target)
            angle = b.direction * _RAD
            b.x += cos(angle) * speed
            b.y += sin(angle) * speed
            max_turn = max_body - 0.75 * (speed if speed >= 0.0 else -speed)  # |speed| <= 8 already
            turn = b.t_turn
            turn = max_turn if turn > max_turn else -max_turn if turn < -max_turn else turn
            gun = b.t_gun
            gun = max_gun if gun > max_gun else -max_gun if gun < -max_gun else gun
            radar = b.t_radar
            radar = max_radar if radar > max_radar else -max_radar if radar < -max_radar else radar
            b.turn_rate, b.gun_turn_rate, b.radar_turn_rate = turn, gun, radar
            gun_adjust = turn + gun
            if b.adj_gun_body:
                gun_adjust -= turn
            radar_adjust = gun_adjust + radar
            if b.adj_radar_gun:
                radar_adjust -= gun
                if b.adj_gun_body:  # "orig. Robocode compatibility" in the official code
                    radar_adjust += turn
            if b.adj_radar_body:
                radar_adjust -= turn
            b.direction = (b.direction + turn) % 360.0
            b.gun_direction = (b.gun_direction + gun_adjust) % 360.0
            b.radar_direction = (b.radar_direction + radar_adjust) % 360.0
            b.radar_sweep = radar_adjust

    def _bot_wall_hits(self, bots: list[_Bot], tn: int, obs: list[dict[str, Any]]) -> None:
        """CollisionDetector.checkAndHandleBotWallCollisions: pulled back inside along its move and stopped; the
        event and the damage max(|v|/2 - 1, 0) only if last turn brought no BotHitWallEvent (official)."""
        width, height = self._width, self._height
        lo, hi_x, hi_y = _BOT_R, width - _BOT_R, height - _BOT_R
        for b in bots:
            sent = False
            if lo <= b.x <= hi_x and lo <= b.y <= hi_y:
                b.wall_event = sent  # inside: constrainBotPosition would leave it where it is
                continue
            x, y = R.constrain_bot_position(b.px, b.py, b.x, b.y, width, height)
            if x != b.x or y != b.y:
                b.x, b.y = x, y
                if not b.wall_event:
                    event = {"type": "BotHitWallEvent", "turnNumber": tn, "victimId": b.id}
                    b.events.append(event)
                    obs.append(event)
                    b.energy -= R.calc_wall_damage(b.speed)
                    sent = True
                b.speed = 0.0
            b.wall_event = sent

    def _bot_bot_hits(self, bots: list[_Bot], tn: int, obs: list[dict[str, Any]]) -> None:
        """CollisionDetector.checkAndHandleBotCollisions (detect, then apply): every pair whose bounding circles
        touch (distance <= 36) where the bots stand after moving, who rams whom and where they go back to are
        decided for all pairs first; then 0.6 damage to each bot of each pair."""
        n = len(bots)
        found = []
        for i in range(n - 1):
            b1 = bots[i]
            for j in range(i + 1, n):
                b2 = bots[j]
                dx = b2.x - b1.x
                if dx > _BOT_D or dx < -_BOT_D:
                    continue
                dy = b2.y - b1.y
                if dy > _BOT_D or dy < -_BOT_D or dx * dx + dy * dy > _BOT_D2:
                    continue
                found.append(self._collision(b1, b2, tn))
        for collision in found:
            self._bots_collide(*collision, tn, obs)

    def _collision(self, b1: _Bot, b2: _Bot, tn: int) -> tuple[_Bot, _Bot, bool, bool, tuple[float, ...]]:
        """computeBotCollisionOutcome: a bot rams when it drives toward the other; both go back to last turn's
        place, except on a round's first turn, where the second bot goes to a random place."""
        ram12 = R.is_ramming(b1.x, b1.y, b1.direction, b1.speed, b2.x, b2.y)
        ram21 = R.is_ramming(b2.x, b2.y, b2.direction, b2.speed, b1.x, b1.y)
        if tn == 1:
            rng = self._rng
            x2 = _BOT_R + rng.random() * (self._width - R.BOT_BOUNDING_CIRCLE_DIAMETER)
            y2 = _BOT_R + rng.random() * (self._height - R.BOT_BOUNDING_CIRCLE_DIAMETER)
            places: tuple[float, ...] = (b1.x, b1.y, x2, y2)
        else:
            places = (b1.px, b1.py, b2.px, b2.py)
        return b1, b2, ram12, ram21, places

    def _bots_collide(self, b1: _Bot, b2: _Bot, ram12: bool, ram21: bool, places: tuple[float, ...], tn: int,
                      obs: list[dict[str, Any]]) -> None:
        """applyBotCollisions: 0.6 damage to both, ram hits scored for rammers (a kill if it took the victim below
        0), both moved, rammers stopped, a BotHitBotEvent to each."""
        alive1, alive2 = b1.energy >= 0.0, b2.energy >= 0.0
        b1.energy -= R.RAM_DAMAGE
        b2.energy -= R.RAM_DAMAGE
        if ram12:
            self._tracker.ram_hit(b1.id, b2.id, alive2 and b2.energy < 0.0)
        if ram21:
            self._tracker.ram_hit(b2.id, b1.id, alive1 and b1.energy < 0.0)
        b1.x, b1.y, b2.x, b2.y = places
        if ram12:
            b1.speed = 0.0
        if ram21:
            b2.speed = 0.0
        e1 = {"type": "BotHitBotEvent", "turnNumber": tn, "botId": b1.id, "victimId": b2.id, "energy": b2.energy,
              "x": b2.x, "y": b2.y, "rammed": ram12}
        e2 = {"type": "BotHitBotEvent", "turnNumber": tn, "botId": b2.id, "victimId": b1.id, "energy": b1.energy,
              "x": b1.x, "y": b1.y, "rammed": ram21}
        b1.events.append(e1)
        b2.events.append(e2)
        obs.append(e1)
        obs.append(e2)

    def _constrain(self, bots: list[_Bot]) -> None:
        width, height = self._width, self._height
        lo_x, hi_x, lo_y, hi_y = _BOT_R, width - _BOT_R, _BOT_R, height - _BOT_R
        for b in bots:
            if not (lo_x <= b.x <= hi_x and lo_y <= b.y <= hi_y):
                b.x, b.y = R.constrain_bot_position(b.px, b.py, b.x, b.y, width, height)

    def _scans(self, bots: list[_Bot], tn: int, obs: list[dict[str, Any]]) -> None:
        """TurnProcessor.checkAndHandleScans: a bot that moved (position or any direction) or asked to rescan scans
        the arc its radar swept this turn (radius 1200, from radarDirection back over radarSweep); a zero sweep is
        a line. Every other bot whose bounding circle touches it is scanned."""
        for s in bots:
            s.last_scan = None
            if not (s.rescan or s.x != s.px or s.y != s.py or s.direction != s.pdir or s.gun_direction != s.pgun
                    or s.radar_direction != s.pradar):
                continue
            spread = s.radar_sweep
            end = s.radar_direction
            if spread >= 0:
                start = (end - spread) % 360.0
            else:
                start, end = end, (end - spread) % 360.0
            a = start * _RAD
            x0 = math.cos(a) * R.RADAR_RADIUS
            y0 = math.sin(a) * R.RADAR_RADIUS
            if start == end:
                x1, y1 = x0, y0
            else:
                a = end * _RAD
                x1 = math.cos(a) * R.RADAR_RADIUS
                y1 = math.sin(a) * R.RADAR_RADIUS
            line = start == end
            sx, sy = s.x, s.y
            for t in bots:
                if t is s:
                    continue
                tx, ty = t.x, t.y
                vx = tx - sx
                vy = ty - sy
                if not line and vx * vx + vy * vy > _SCAN_REACH2:
                    continue
                c0 = x0 * vy - y0 * vx  # 1200 x the distance from t's centre to the first arm's line (signed)
                c1 = x1 * vy - y1 * vx
                if line or not (c0 > 0.0 and c1 <= 0.0):  # not between the arms: does an arm touch the circle?
                    if not ((-_ARM_MISS < c0 < _ARM_MISS
                             and R.is_line_intersecting_circle(sx, sy, sx + x0, sy + y0, tx, ty, _BOT_R))
                            or (not line and -_ARM_MISS < c1 < _ARM_MISS
                                and R.is_line_intersecting_circle(sx, sy, sx + x1, sy + y1, tx, ty, _BOT_R))):
                        continue
                event = {"type": "ScannedBotEvent", "turnNumber": tn, "scannedByBotId": s.id, "scannedBotId": t.id,
                         "energy": t.energy, "x": tx, "y": ty, "direction": t.direction, "speed": t.speed}
                s.events.append(event)
                obs.append(event)
                if s.last_scan is None:
                    s.last_scan = (tx, ty)

    def _move_bullets(self, by_id: dict[int, _Bot], tn: int, obs: list[dict[str, Any]]) -> None:
        """Bullets advance one tick; one whose point is on or past a wall is gone (BulletHitWallEvent to its owner)."""
        width, height = self._width, self._height
        kept = []
        for bullet in self._bullets:
            bullet.advance()
            x, y = bullet.x, bullet.y
            if x <= 0 or y <= 0 or x >= width or y >= height:
                event = {"type": "BulletHitWallEvent", "turnNumber": tn, "bullet": bullet.state()}
                owner = by_id.get(bullet.owner)
                if owner is not None:
                    owner.events.append(event)
                obs.append(event)
            else:
                kept.append(bullet)
        self._bullets = kept

    def _bullet_hits(self, bots: list[_Bot], by_id: dict[int, _Bot], tn: int, obs: list[dict[str, Any]]) -> bool:
        """CollisionDetector.checkAndHandleBulletHits (detect, then apply): each bullet's line runs from this
        turn's point to next turn's. All bullet-bullet crossings and all bullet-bot touches (radius 18, never the
        owner) are found first, then applied in that order; so, as officially, a bullet destroyed by another one
        still hits a bot it touches this turn. Returns whether any bot was hit (that resets inactivity)."""
        bullets = self._bullets
        if not bullets:
            return False
        n = len(bullets)
        crossings = []
        for i in range(n - 1):
            a = bullets[i]
            for j in range(i + 1, n):
                c = bullets[j]
                dx = c.nx - a.nx
                if dx > _BULLET_D or dx < -_BULLET_D:
                    continue
                dy = c.ny - a.ny
                if dy > _BULLET_D or dy < -_BULLET_D or dx * dx + dy * dy > _BULLET_D2:
                    continue
                if R.is_line_intersecting_line(a.x, a.y, a.nx, a.ny, c.x, c.y, c.nx, c.ny):
                    crossings.append((a, c))
        hits = []
        for a in bullets:
            for bot in bots:
                if bot.id == a.owner:
                    continue
                dx = bot.x - a.x
                dy = bot.y - a.y
                if dx > _HIT_REACH or dx < -_HIT_REACH or dy > _HIT_REACH or dy < -_HIT_REACH:
                    continue  # farther than a bullet's step plus the bot's radius: cannot touch
                if R.is_line_intersecting_circle(a.x, a.y, a.nx, a.ny, bot.x, bot.y, _BOT_R):
                    hits.append((a, bot))
        if not crossings and not hits:
            return False
        gone: set[int] = set()
        for a, c in crossings:
            self._bullets_collide(a, c, by_id, tn, obs)
            gone.add(a.id)
            gone.add(c.id)
        for a, bot in hits:
            self._bullet_hits_bot(a, bot, by_id, tn, obs)
            gone.add(a.id)
        self._bullets = [b for b in bullets if b.id not in gone]
        return bool(hits)

    @staticmethod
    def _bullets_collide(a: _Bullet, c: _Bullet, by_id: dict[int, _Bot], tn: int, obs: list[dict[str, Any]]) -> None:
        sa, sc = a.state(), c.state()
        e1 = {"type": "BulletHitBulletEvent", "turnNumber": tn, "bullet": sa, "hitBullet": sc}
        e2 = {"type": "BulletHitBulletEvent", "turnNumber": tn, "bullet": sc, "hitBullet": sa}
        owner = by_id.get(a.owner)
        if owner is not None:
            owner.events.append(e1)
        owner = by_id.get(c.owner)
        if owner is not None:
            owner.events.append(e2)
        obs.append(e1)  # observers get one event per crossing

    def _bullet_hits_bot(self, a: _Bullet, bot: _Bot, by_id: dict[int, _Bot], tn: int,
                         obs: list[dict[str, Any]]) -> None:
        """applyBulletHitResults: damage 4p + 2max(p-1, 0) to the victim, 3p energy back to the shooter (if it
        was in this turn). The score counts only the energy the victim still had (latest official: capped)."""
        damage = R.calc_bullet_damage(a.power)
        energy = bot.energy
        scored = damage if energy >= damage else max(energy, 0.0)
        bot.energy = energy - damage
        shooter = by_id.get(a.owner)
        if shooter is not None:
            shooter.energy += R.BULLET_HIT_ENERGY_GAIN_FACTOR * a.power
        self._tracker.bullet_hit(a.owner, bot.id, scored, energy >= 0.0 and bot.energy < 0.0)
        event = {"type": "BulletHitBotEvent", "turnNumber": tn, "bullet": a.state(), "victimId": bot.id,
                 "damage": damage, "energy": bot.energy}
        if shooter is not None:
            shooter.events.append(event)
        bot.events.append(event)
        obs.append(event)

    # --- round end and the turn's picture -------------------------------------------------------------------------

    def _round_is_over(self, bots: list[_Bot]) -> bool:
        """One bot (or none) left; or, with no bullet in flight, every bot left is disabled (a draw, official)."""
        alive = [b for b in bots if b.energy >= 0.0]
        if len(alive) <= 1:
            return True
        return not self._bullets and all(b.energy < _NEAR for b in alive)

    def _end_round(self, by_id: dict[int, _Bot], tn: int) -> None:
        """ScoreCalculator.getScores + AccumulatedScoreCalculator: placements by this round's rank, WonRoundEvent
        to every rank-1 bot (only bots, not observers), then the round's scores join the game's."""
        scores = self._tracker.scores()
        for score in scores:
            rank = score["rank"]
            if 1 <= rank <= 3:
                score[_PLACES[rank - 1]] += 1
            if rank == 1 and score["id"] in by_id:
                by_id[score["id"]].events.append({"type": "WonRoundEvent", "turnNumber": tn})
        self._round_scores = scores
        if not self._accumulated:
            self._accumulated = [dict(score) for score in scores]
        else:
            acc = {score["id"]: score for score in self._accumulated}
            for score in scores:
                total = acc[score["id"]]
                for key in _SCORE_PARTS + _PLACES:
                    total[key] += score[key]
            _update_ranks(self._accumulated)
        self._round_ended = True
        if self._round_number >= self.setup.number_of_rounds:
            self._game_ended = True

    def _snapshot(self, bots: list[_Bot], obs: list[dict[str, Any]]) -> Turn:
        alive = sum(1 for b in bots if b.energy >= 0.0)
        states = {}
        for b in bots:
            energy = b.energy
            states[b.id] = {
                "energy": energy if energy >= 0.0 else 0.0, "x": b.x, "y": b.y, "direction": b.direction,
                "gunDirection": b.gun_direction, "radarDirection": b.radar_direction, "radarSweep": b.radar_sweep,
                "speed": b.speed, "turnRate": b.turn_rate, "gunTurnRate": b.gun_turn_rate,
                "radarTurnRate": b.radar_turn_rate, "gunHeat": b.gun_heat,
                "enemyCount": alive - 1 if energy >= 0.0 else alive, "isDroid": False,
            }
        return Turn(self._round_number, self._turn_number, states, [bullet.state() for bullet in self._bullets],
                    {b.id: b.events for b in bots}, obs, self._round_ended, self._game_ended)
