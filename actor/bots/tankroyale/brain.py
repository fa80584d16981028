"""What a Tank Royale tank sees, does and is rewarded for: pure functions of the game's own state and events.

Kept apart from the bot class (`tank.py`) so it can be driven, timed and
tested with the bot API's real event and state classes, without a server.

Observation: 35 numbers, each scaled to about [-1, 1] (OBSERVATION lists them).
Action: 4 numbers: target speed [-8, 8] units/turn, the body's turn [-10, 10],
the gun's aim [-30, 30] and fire power [0, 3] (below 0.1 holds fire; the
game's smallest shot is 0.1). How they become orders is TankControls': by
default, once the enemy was seen, the speed is an offset back from full ahead,
the aim picks a point on the enemy's course between where it is now and where
a bullet meets it, which the gun turns toward every turn (body turns do not carry it),
the body's turn is a heading offset from broadside to it (x 9 degrees), and the
radar sweeps across the last scan so the enemy is seen every turn.
Reward per turn (weights in TankRewards): damage dealt and taken by bullets and
rams, a kill, a death, a won round, and a small cost per turn.

A turn's events arrive as the official protocol shapes them (maps with "type"
and camelCase fields, as the engine and the server's tick carry them) and are
applied together, in the bot API's dispatch order, before the turn's step is
closed: so every event's reward lands in the step that ends at the turn it was
reported in, the killing shot of a won round and the lethal hit of a lost one
included.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from actor.bots.tankroyale import rules as R
from actor.bots.tankroyale.hindsight import ShotWaves
from actor.bots.tankroyale.surf import VISIT_WEIGHT, Surf, choose
from actor.bots.tankroyale.walls import orbit_heading

# The bot API's dispatch order of one turn's events: critical ones first (a won round, our death, a
# skipped turn), then by DefaultEventPriority (robocode_tank_royale.bot_api.default_event_priority).
_ORDER = {"WonRoundEvent": 0, "SkippedTurnEvent": 1, "DeathEvent": 2, "BotDeathEvent": 3, "BulletHitBotEvent": 4,
          "HitByBulletEvent": 5, "BotHitWallEvent": 6, "BotHitBotEvent": 7, "ScannedBotEvent": 8}

MAX_SPEED, MAX_TURN, MAX_RADAR_TURN = R.MAX_FORWARD_SPEED, R.MAX_TURN_RATE, R.MAX_RADAR_TURN_RATE
MAX_POWER, MIN_POWER = R.MAX_FIREPOWER, R.MIN_FIREPOWER
KILL_MARGIN = 0.1  # kill_shot's power above the least that destroys: 0.4 points of damage for a scan's staleness
_angle = R.normalize_relative_degrees  # degrees into [-180, 180)
# The gun action's range: with aim = bearing or lead, degrees either side (the lead a shot at power 1.5 needs for
# a target crossing at 8); with aim = path, -MAX_AIM..+MAX_AIM spans the enemy's course from now to where a bullet meets it.
MAX_AIM = 30.0
ACT_LOW = np.array([-MAX_SPEED, -MAX_TURN, -MAX_AIM, 0.0], np.float32)
ACT_HIGH = np.array([MAX_SPEED, MAX_TURN, MAX_AIM, MAX_POWER], np.float32)
AIM = 2  # the aim's part of the action (what a shot's label in hindsight names)
LOCK_LOST_AFTER = 3  # turns without a scan before a locked radar gives up and spins again

OBSERVATION = (
    "x", "y", "energy", "sin_dir", "cos_dir", "sin_gun", "cos_gun", "sin_radar", "cos_radar", "speed", "gun_heat",
    "turn_rate", "gun_turn_rate", "can_fire",
    "enemy_seen", "enemy_alive", "sin_bearing", "cos_bearing", "sin_gun_bearing", "cos_gun_bearing", "distance",
    "enemy_energy", "sin_enemy_heading", "cos_enemy_heading", "enemy_speed", "scan_age", "energy_lead",
    "wall_west", "wall_east", "wall_south", "wall_north",
    "enemies_left", "round_time", "hit_wall", "hit_bot",
)
OBS_DIM = len(OBSERVATION)  # 35, as the original Nim bot's
# With `observe = "duel"` five more follow, on what one scan cannot show of the enemy: its last shot (seen as a
# drop in its energy), its motion across and along our line to it, and how long since it last turned back.
DUEL = ("enemy_shot_age", "enemy_shot_power", "enemy_lateral", "enemy_advancing", "enemy_reversal_age")
# With `observe = "surf"` three more follow the duel numbers: whether an enemy shot is in the air, and how dangerous
# each way has been against the one that meets us first (surf.py), which the surf form's bias weighs.
SURF = ("wave_in_air", "danger_on", "danger_back")
# With `observe = "trace"` eight more follow the duel numbers: the enemy's speed across our line now and 4, 8, ...
# 28 turns ago. A decision spans up to 30 turns and one look a decision aliases a habit of that period (a
# StopAndGo seen at each of its shots); the trace shows the turns in between, so a recurrent policy sees the
# enemy's whole course, and a memoryless one the last decision's.
TRACE_EVERY, TRACE_LEN = 4, 8
LATERAL = DUEL.index("enemy_lateral")  # what the trace logs
TRACE = tuple(f"enemy_lateral_{TRACE_EVERY * k}_ago" for k in range(TRACE_LEN))
EXTRA = {"duel": DUEL, "surf": DUEL + SURF, "trace": DUEL + TRACE}


def obs_dim(controls: TankControls) -> int:
    """The observation's width for a form: 35, 40 with the duel numbers, 43 with the surf numbers, 48 with the
    trace."""
    return OBS_DIM + len(EXTRA.get(controls.observe, ()))


@dataclass(frozen=True)
class TankRewards:
    """Reward weights (docs/tankroyale.md, `[tank]`): per point of damage, per event, per turn."""

    damage_dealt: float = field(default=0.1, metadata={"help": "per energy point our bullets or rams take from others"})
    damage_taken: float = field(default=-0.1, metadata={"help": "per energy point we lose to bullets and rams"})
    kill: float = field(default=5.0, metadata={"help": "when a bot we hit dies"})
    death: float = field(default=-5.0, metadata={"help": "when we die"})
    win: float = field(default=5.0, metadata={"help": "when we win the round"})
    turn: float = field(default=-0.001, metadata={"help": "every turn, so that dawdling costs a little"})
    fired: float = field(default=0.0, metadata={"help": "per energy point spent firing (a shot costs its power)"})
    aim: float = field(default=0.0, metadata={"help": "per shot, times how close it left to where a bullet of its "
                                                      "power meets the enemy on its linear course (1 on it, 0 from 10 "
                                                      "degrees off): a hit's credit when it is fired"})
    hindsight: float = field(default=0.0, metadata={"help": "per point of damage a shot would deal on a hit, times how "
                                                            "near it passed the enemy, paid when its wave reaches it (1 "
                                                            "dead on, 0.75 at the edge of its body, 0 from four "
                                                            "half-widths off): every shot graded, not only hits "
                                                            "(hindsight.py)"})


@dataclass(frozen=True)
class TankControls:
    """How the action's aim and the radar become orders (docs/tankroyale.md, `[controls]`; what each form
    measured: docs/tank-experiments.md)."""

    aim: str = field(default="path", metadata={"help": "path: the gun action picks a point on the enemy's course "
                                                       "(if it keeps its speed and heading), from where it is now "
                                                       "(-30) to where a bullet of the chosen power meets it (+30), "
                                                       "turned toward every turn; gf: a guess factor ((action / 30) "
                                                       "cubed) over the enemy's escape angle, 0 head-on, +1 as far as it "
                                                       "can go the way it moves, -1 as far back (a reversal); "
                                                       "bearing: an offset in degrees from the enemy's bearing; "
                                                       "lead: an offset from where the bullet meets it; rate: a gun "
                                                       "turn rate that rides on the body (the first form)"})
    radar: str = field(default="lock", metadata={"help": "lock: sweep across the last scan, so the enemy is seen "
                                                         "every turn; spin: full rate always (scans up to 8 turns old)"})
    move: str = field(default="bearing", metadata={"help": "bearing: the body-turn action is a heading offset from "
                                                            "square to the enemy's bearing (0 = broadside, +-10 = "
                                                            "+-90 degrees), turned toward every turn; orbit: the same "
                                                            "offset taken along the way the tank drives, so negative "
                                                            "closes in and positive backs off whether it goes ahead "
                                                            "or in reverse (a reversal keeps the distance it chose); "
                                                            "rate: a body turn rate (the first form)"})
    speed: str = field(default="ahead", metadata={"help": "ahead: the speed action is an offset back from full speed "
                                                          "ahead (0 and above: +8, -4: stop, -8: full reverse); "
                                                          "keep: the same offset back from full speed the way the "
                                                          "tank was going when the decision began (the way it was "
                                                          "last told to go, so a tank against a wall or still slowing "
                                                          "to turn back goes the new way; 0 and above: go on, -8: "
                                                          "turn back), so a reversal is one value whichever way it "
                                                          "goes; flip: full speed always, the sign says which way (0 "
                                                          "and above: go on the way the tank was going, below 0: "
                                                          "turn back), so no action is a crawl; time: full speed "
                                                          "always, and below 0 the action times a turn back within "
                                                          "the decision (-8: at once, nearer 0: later, 0 and above: "
                                                          "go on); mix: full speed always, and the action is the odds "
                                                          "of turning back, drawn by the controls once a decision "
                                                          "(-8: always, 0: a coin flip, +8: never), so that even the "
                                                          "deterministic policy can play a mixed strategy (what a gun "
                                                          "that learns where we go cannot learn); surf: full speed "
                                                          "always, and while an enemy shot is in the air the controls "
                                                          "play both ways forward to where it meets us and take the one "
                                                          "whose guess factor its earlier shots found us at less "
                                                          "(docs/tankroyale.md, wave surfing); the action is the bias "
                                                          "(-8: turn back on every shot as flip does, 0: the safer "
                                                          "way, +8: never turn back), and with no shot in the air it "
                                                          "acts as flip; target: the target speed itself (the first form)"})
    repeat: int = field(default=8, metadata={"help": "turns per decision: an action is held this many turns (aim and "
                                                     "radar still follow the enemy every turn), its rewards summed"})
    observe: str = field(default="basic", metadata={"help": "basic: the 35 numbers; duel: five more about the "
                                                            "enemy: turns since its last shot and that shot's power "
                                                            "(from drops in its energy), its speed across and along "
                                                            "our line to it, turns since it last reversed across it; "
                                                            "surf: the duel numbers and three more, whether an enemy "
                                                            "shot is in the air and how dangerous going on and turning "
                                                            "back have been against it (the surf form's counts); "
                                                            "trace: the duel numbers and eight more, the enemy's speed "
                                                            "across our line now and every 4 turns back to 28 ago"})
    react: bool = field(default=False, metadata={"help": "a decision also ends, before its repeat turns are up, on "
                                                         "the turn the enemy's energy is seen to drop by a shot's cost "
                                                         "(0.1-3, with no hit to explain it): the policy can answer a "
                                                         "shot at once; what to do about it is still learned"})
    wall_stick: float = field(default=0.0, metadata={"help": "wall smoothing (move = bearing or orbit): each turn "
                                                             "the way the body moves is bent toward the enemy's "
                                                             "side until the point this many pixels ahead is inside "
                                                             "the arena, so the orbit slides along a wall instead of "
                                                             "stopping against it (the surf form predicts the same "
                                                             "bend); 0: no smoothing (walls.py)"})
    kill_shot: bool = field(default=False, metadata={"help": "a shot is never stronger than it needs to be to destroy "
                                                             "the enemy at the energy last scanned (plus 0.1): a "
                                                             "low enemy meets the fastest bullet that finishes it "
                                                             "and costs us the least; the policy's power otherwise"})
    fixed: str = field(default="", metadata={"help": "parts of every action the controls hold at a value, the policy's "
                                                     "own ignored: \"speed=-4;turn=0\" learns the aim and power alone "
                                                     "(parts: speed, turn, aim, power; empty: none)"})

    def __post_init__(self) -> None:
        from protocol.config import check

        try:
            fixed_parts(self.fixed)
        except ValueError as exc:
            check(False, "fixed", self.fixed, str(exc))

        check(self.aim in ("bearing", "gf", "lead", "path", "rate"), "aim", self.aim,
              "must be bearing, gf, lead, path or rate")
        check(self.radar in ("lock", "spin"), "radar", self.radar, "must be lock or spin")
        check(self.move in ("bearing", "orbit", "rate"), "move", self.move, "must be bearing, orbit or rate")
        check(self.speed in ("ahead", "flip", "keep", "mix", "surf", "target", "time"), "speed", self.speed,
              "must be ahead, flip, keep, mix, surf, target or time")
        check(1 <= self.repeat <= 30, "repeat", self.repeat, "must be 1..30 turns")
        check(0.0 <= self.wall_stick <= 400.0, "wall_stick", self.wall_stick, "must be 0..400 pixels")
        check(self.observe in ("basic", "duel", "surf", "trace"), "observe", self.observe,
              "must be basic, duel, surf or trace")


ACTION = ("speed", "turn", "aim", "power")  # the action's parts, in order


def fixed_parts(text: str) -> dict[int, float]:
    """TankControls.fixed, "speed=-4;turn=0", as {part's index: value}; a value outside its part's range is an error."""
    out: dict[int, float] = {}
    for pair in (p.strip() for p in text.split(";")):
        if not pair:
            continue
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"{pair!r}: expected part=value")
        if key not in ACTION:
            raise ValueError(f"{key!r} is not a part of the action ({', '.join(ACTION)})")
        i = ACTION.index(key)
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"{key}: {raw.strip()!r} is not a number") from None
        if not ACT_LOW[i] <= value <= ACT_HIGH[i]:
            raise ValueError(f"{key} must be within {ACT_LOW[i]:g}..{ACT_HIGH[i]:g}")
        out[i] = value
    return out


@dataclass(frozen=True)
class Orders:
    """One turn's intent, in the bot API's terms; the adjust flags make gun and radar turn on their own."""

    target_speed: float
    turn_rate: float
    gun_turn_rate: float
    radar_turn_rate: float
    firepower: float  # 0 = hold fire
    independent: bool  # adjust gun for body turn, radar for gun and body turn


@dataclass
class Tally:
    """One round's fight, for the training view and evaluation: what a win rate alone cannot tell."""

    shots: int = 0  # bullets we fired
    hits: int = 0  # of them, those that hit a bot
    dealt: float = 0.0  # damage our bullets and rams did
    taken: float = 0.0  # damage bullets and rams did to us
    destroyed: int = 0  # opponents that died of our bullets or rams (not of inactivity or their own firing)

    def to_dict(self) -> dict[str, float]:
        return {"shots": self.shots, "hits": self.hits, "dealt": round(self.dealt, 3), "taken": round(self.taken, 3),
                "destroyed": self.destroyed}


def guess_factor(aim: float) -> float:
    """The gf form's guess factor for an aim action in [-30, 30]: its cube, (aim / 30) ** 3, so that the middle
    of the range is fine-grained about head-on (the best fixed aim against a mover whose habit is unknown; aims
    of +-15 stay within an eighth of the escape angle) and the ends still reach either edge (+-1)."""
    return (max(-MAX_AIM, min(MAX_AIM, aim)) / MAX_AIM) ** 3


def aim_for(direction: float, frame: tuple[float, float, float]) -> float:
    """The gf form's aim action whose goal is `direction` (degrees) in `frame` = (bearing, lateral, escape angle):
    guess_factor's inverse, the guess factor clipped to the escape angle (a still enemy's frame has none: 0)."""
    bearing, lateral, escape = frame
    if escape <= 0.0:
        return 0.0
    gf = max(-1.0, min(1.0, R.normalize_relative_degrees(direction - bearing) / (lateral * escape)))
    return math.copysign(abs(gf) ** (1 / 3), gf) * MAX_AIM


@dataclass
class Enemy:
    """The last scan of the opponent."""

    id: int = -1
    x: float = 0.0
    y: float = 0.0
    energy: float = 0.0
    direction: float = 0.0
    speed: float = 0.0
    turn: int = -1
    alive: bool = False


class TankBrain:
    """Turns the game's state and events into observations and rewards, and actions into commands."""

    def __init__(self, rewards: TankRewards = TankRewards(), arena: tuple[int, int] = (800, 600),
                 controls: TankControls = TankControls(), seed: int | None = 0) -> None:
        self.rewards, self.controls = rewards, controls
        self.coins = np.random.default_rng(seed)  # speed = mix: the draw that turns back or goes on
        self.coin = 1.0  # this decision's draw (uniform in [0, 1)); 1.0 before the first: go on
        self.width, self.height = arena
        self.enemy = Enemy()
        self.reward = 0.0  # accumulated since the last turn
        self.hit_wall = self.hit_bot = False
        self.enemies_left = 1
        self.dead: set[int] = set()
        self.kills: set[int] = set()  # bots our hits killed, this round
        self.my_id = 1  # the game's id for us (set from game-started)
        self.outcome: str | None = None  # "won" or "died" once the round ended for us
        self.skipped = 0  # turns the server played without our intent, this round
        self.me: object | None = None  # the state last observed (the bot API's BotState or opponents.Me)
        self.turn = 0  # the turn last observed
        self.tally = Tally()
        self.top_speed = 0.0  # the enemy's highest speed seen this round: how far it has shown it can escape
        self.enemy_fired = False  # its energy fell by a shot's cost since the last decision (TankControls.react)
        self.shot_turn, self.shot_power, self.reversal_turn = -1, 0.0, -1  # its last shot and reversal, this round
        self.going = 1.0  # +1 ahead, -1 in reverse: the way we were going when this decision began
        self.ordered = 0.0  # the target speed last ordered: the way we are going, even while blocked or turning back
        self._explained = False  # this turn brought a hit or a collision: an energy drop is not a shot
        self.lateral = 1.0  # +1 while it moves counter-clockwise around us, -1 clockwise (kept when it stops)
        self.across = np.zeros(TRACE_EVERY * TRACE_LEN, np.float32)  # observe = trace: by turn % its length
        self.across_turn = -1  # the turn of its latest entry
        self.surf = Surf()  # speed = surf: the enemy's shots in the air, and where its earlier ones found us
        self.waves = ShotWaves()  # our shots in flight, judged when each reaches the enemy (hindsight, aim labels)
        self.decision = -1  # this round's decisions so far, less one: the episode step the current one is
        self.aim_frame: tuple[float, float, float] | None = None  # aim = gf: the frame of the gun's last order
        self.labels: list[tuple[int, float]] = []  # (decision, the aim action that would have hit): take_labels
        self.labelling = controls.aim == "gf"  # every shot's aim is labelled in hindsight where the form has one
        self.offset = 0.0  # the body's heading offset last ordered (degrees), for the surf numbers' play forward
        self.fixed = fixed_parts(controls.fixed)
        self.surfing = controls.speed == "surf" or controls.observe == "surf"  # the enemy's waves are tracked

    # -- one turn's events ----------------------------------------------------------------

    def apply(self, events: list[dict]) -> None:
        """All events of one turn, as schema maps, in the bot API's dispatch order (unknown types ignored)."""
        rammed, died = False, []
        self._explained = False
        for e in sorted(events, key=self._order):  # scans last: they see this turn's hits
            kind = e.get("type")
            if kind == "ScannedBotEvent":
                self.scanned(e["scannedBotId"], e["x"], e["y"], e["energy"], e["direction"], e["speed"],
                             e["turnNumber"])
            elif kind == "BulletHitBotEvent":
                self._explained = True
                self._bullet_hit(e)
            elif kind == "BotHitBotEvent" and self.my_id in (e.get("botId"), e.get("victimId")):
                self.hit_bot = rammed = self._explained = True
                self.damage_taken(R.RAM_DAMAGE)
                self.damage_dealt(R.RAM_DAMAGE)
            elif kind == "BotHitWallEvent" and e.get("victimId") == self.my_id:
                self.hit_wall = True
            elif kind == "BotDeathEvent":
                died.append(e["victimId"])
                self._death(e["victimId"])
            elif kind == "WonRoundEvent" and self.outcome is None:
                self.outcome = "won"
                self.won()
            elif kind == "SkippedTurnEvent":
                self.skipped += 1
            elif kind == "BulletFiredEvent":
                bullet = e.get("bullet") or {}
                self.tally.shots += 1
                self.reward += self.rewards.fired * float(bullet.get("power", 0.0))
                if self.rewards.aim and self.me is not None:
                    self.reward += self.rewards.aim * self._aim_quality(bullet)
                if ((self.rewards.hindsight or self.labelling) and bullet.get("ownerId", self.my_id) == self.my_id
                        and "x" in bullet):
                    self.waves.fired(float(bullet["x"]), float(bullet["y"]), float(bullet["direction"]),
                                     float(bullet["power"]), int(e.get("turnNumber", self.turn)), self.decision,
                                     self.aim_frame)

        for victim in died:  # an opponent that died of our bullet or of a collision with us this turn
            if victim != self.my_id and (victim in self.kills or rammed):
                self.tally.destroyed += 1

    def _order(self, e: dict) -> int:
        kind = e.get("type")
        if kind == "BotDeathEvent" and e.get("victimId") == self.my_id:
            kind = "DeathEvent"
        elif kind == "BulletHitBotEvent" and e.get("victimId") == self.my_id:
            kind = "HitByBulletEvent"
        return _ORDER.get(kind, len(_ORDER))  # type: ignore[arg-type]

    def _bullet_hit(self, e: dict) -> None:
        if e["victimId"] == self.my_id:
            self.damage_taken(e["damage"])
            if self.surfing and self.me is not None:
                self.surf.hit(int(e.get("turnNumber", self.turn)), self.me.x, self.me.y, e.get("bullet") or {})  # type: ignore[attr-defined]
        elif (e.get("bullet") or {}).get("ownerId") == self.my_id:
            self.tally.hits += 1
            self.damage_dealt(e["damage"])
            if e["energy"] <= 0:  # the victim's energy after our hit: we killed it
                self.bot_died(e["victimId"], by_us=True)

    def _death(self, victim: int) -> None:
        if victim != self.my_id:
            self.bot_died(victim, by_us=False)  # ours was already counted by the hit that killed it
        elif self.outcome is None:
            self.outcome = "died"
            self.died()

    # -- events ---------------------------------------------------------------------------

    def new_round(self, seed: int | None = None) -> None:
        """A round begins; `seed` (the env's, per episode) makes speed = mix's draws repeat with the round."""
        if seed is not None:
            self.coins = np.random.default_rng(seed)
        self.coin = 1.0
        self.enemy, self.reward, self.hit_wall, self.hit_bot = Enemy(), 0.0, False, False
        self.dead, self.kills, self.outcome, self.skipped = set(), set(), None, 0
        self.me, self.turn, self.tally = None, 0, Tally()
        self.top_speed, self.lateral, self.enemy_fired = 0.0, 1.0, False
        self.across[:], self.across_turn = 0.0, -1
        self.shot_turn, self.shot_power, self.reversal_turn = -1, 0.0, -1
        self.going, self.ordered = 1.0, 0.0
        self.surf.new_round()
        self.waves.forget()
        self.decision, self.aim_frame, self.labels = -1, None, []

    def scanned(self, bot_id: int, x: float, y: float, energy: float, direction: float, speed: float, turn: int) -> None:
        last = self.enemy
        if last.turn >= 0 and last.id == bot_id and not self._explained and 0.09 < last.energy - energy < 3.01:
            self.enemy_fired, self.shot_turn, self.shot_power = True, turn, last.energy - energy
            if self.surfing and self.me is not None:  # it fired from where it stood last turn, at where we were
                self.surf.fired(last.x, last.y, self.shot_power, turn - 1, self.me.x, self.me.y,  # type: ignore[attr-defined]
                                self.ordered or self.going)
        self.enemy = Enemy(bot_id, x, y, energy, direction, speed, turn, True)
        self.top_speed = max(self.top_speed, min(abs(speed), MAX_SPEED))
        if self.me is not None:
            bearing = math.atan2(y - self.me.y, x - self.me.x)  # type: ignore[attr-defined]
            across = speed * math.sin(math.radians(direction) - bearing)
            if abs(across) > 0.5:
                if (across > 0) != (self.lateral > 0):
                    self.reversal_turn = turn
                self.lateral = 1.0 if across > 0 else -1.0

    def _trace(self, turn: int, across: float) -> None:
        """Log the enemy's speed across our line at `turn`; turns not observed since the last entry keep it."""
        n = len(self.across)
        start = max(self.across_turn + 1, turn - n + 1) if self.across_turn >= 0 else turn
        held = self.across[self.across_turn % n] if self.across_turn >= 0 else across
        for t in range(start, turn):
            self.across[t % n] = held
        self.across[turn % n], self.across_turn = across, turn

    def _trace_numbers(self, turn: int) -> list[float]:
        """The TRACE numbers at `turn`: the logged speed across at turn, turn - 4, ...; 0 before the first scan."""
        if self.across_turn < 0:
            return [0.0] * TRACE_LEN
        n, last = len(self.across), self.across_turn
        return [float(self.across[min(t, last) % n]) if last - min(t, last) < n else 0.0
                for t in (turn - TRACE_EVERY * k for k in range(TRACE_LEN))]

    def damage_dealt(self, damage: float) -> None:
        self.tally.dealt += damage
        self.reward += self.rewards.damage_dealt * damage

    def damage_taken(self, damage: float) -> None:
        self.tally.taken += damage
        self.reward += self.rewards.damage_taken * damage

    def bot_died(self, victim_id: int, by_us: bool) -> None:
        """A bot died (counted once, however many events tell of it); a kill is rewarded when it was ours.

        The bot API dispatches a turn's BotDeathEvent before the hit that caused it, so the kill is
        rewarded whichever of the two comes first."""
        if by_us and victim_id not in self.kills:
            self.kills.add(victim_id)
            self.reward += self.rewards.kill
        if victim_id in self.dead:
            return
        self.dead.add(victim_id)
        self.enemies_left = max(0, self.enemies_left - 1)
        if victim_id == self.enemy.id:
            self.enemy.alive = False

    def died(self) -> None:
        self.reward += self.rewards.death

    def won(self) -> None:
        self.reward += self.rewards.win

    def take_labels(self) -> list[tuple[int, float]]:
        """The aim labels learned since the last call: (decision, aim action) for each of our shots whose wave
        reached the enemy, the aim that would have pointed where the enemy then was, in the frame the shot was
        aimed in. A decision that fired twice may get two (the later one wins)."""
        labels, self.labels = self.labels, []
        return labels

    def take_targets(self) -> dict[int, np.ndarray]:
        """take_labels as action targets by episode step (NaN where a part has none): what a trainer sends with
        those steps (protocol `target`; Gymnasium's info["action_targets"])."""
        out: dict[int, np.ndarray] = {}
        for step, aim in self.take_labels():
            target = out.setdefault(step, np.full(len(ACT_LOW), np.nan, np.float32))
            target[AIM] = aim
        return out

    def take_reward(self) -> float:
        """The reward of the turn that just ended, including the per-turn cost; resets the tally."""
        reward, self.reward = self.reward + self.rewards.turn, 0.0
        return reward

    # -- the turn -------------------------------------------------------------------------

    def observe(self, s, turn: int) -> np.ndarray:  # noqa: ANN001 - the bot API's BotState
        """The 35 numbers for BotState `s` at `turn`, each within [-1, 1]."""
        w, h, e = self.width, self.height, self.enemy
        seen = e.turn >= 0
        dx, dy = e.x - s.x, e.y - s.y
        bearing = math.degrees(math.atan2(dy, dx)) if seen else s.direction
        rel, gun_rel = math.radians(_angle(bearing - s.direction)), math.radians(_angle(bearing - s.gun_direction))
        heading = math.radians(_angle(e.direction - bearing))
        diag = math.hypot(w, h)
        rad = math.radians
        obs = [
            2 * s.x / w - 1, 2 * s.y / h - 1, min(s.energy, 200.0) / 100 - 1,
            math.sin(rad(s.direction)), math.cos(rad(s.direction)), math.sin(rad(s.gun_direction)),
            math.cos(rad(s.gun_direction)), math.sin(rad(s.radar_direction)), math.cos(rad(s.radar_direction)),
            s.speed / MAX_SPEED, min(s.gun_heat, 3.0) / 1.5 - 1, s.turn_rate / MAX_TURN, s.gun_turn_rate / R.MAX_GUN_TURN_RATE,
            1.0 if s.gun_heat == 0 else -1.0,
            1.0 if seen else -1.0, 1.0 if e.alive else -1.0, math.sin(rel), math.cos(rel), math.sin(gun_rel),
            math.cos(gun_rel), 2 * min(math.hypot(dx, dy), diag) / diag - 1 if seen else 1.0,
            min(e.energy, 200.0) / 100 - 1 if seen else -1.0, math.sin(heading), math.cos(heading),
            e.speed / MAX_SPEED, min(turn - e.turn, 100) / 50 - 1 if seen else 1.0,
            max(-100.0, min(100.0, s.energy - e.energy)) / 100 if seen else 0.0,
            2 * s.x / w - 1, 1 - 2 * s.x / w, 2 * s.y / h - 1, 1 - 2 * s.y / h,
            min(self.enemies_left, 10) / 5 - 1, min(turn, 2000) / 1000 - 1,
            1.0 if self.hit_wall else -1.0, 1.0 if self.hit_bot else -1.0,
        ]
        if self.controls.observe in ("duel", "surf", "trace"):
            duel = self._duel(s, turn)
            obs += duel
        if self.controls.observe == "trace":
            self._trace(turn, duel[LATERAL])  # logged turn by turn, read every 4 turns back
            obs += self._trace_numbers(turn)
        if seen and e.alive and self.waves.shots:
            passed = self.waves.reached(turn, e.x, e.y)
            self.reward += self.rewards.hindsight * sum(p.nearness for p in passed)
            self.labels += [(p.shot.decision, aim_for(p.bearing, p.shot.frame)) for p in passed
                            if p.shot.frame is not None and p.shot.decision >= 0]
        if seen and self.surfing:
            self.surf.moved(s.x, s.y, s.direction, s.speed, e.x, e.y)
            self.surf.passed(turn, s.x, s.y)
        if self.controls.observe == "surf":
            obs += self._surf_numbers(s, turn) if seen else [-1.0, -1.0, -1.0]

        self.hit_wall = self.hit_bot = False
        self.me, self.turn = s, turn
        return np.clip(np.array(obs, np.float32), -1.0, 1.0)

    def _duel(self, s, turn: int) -> list[float]:  # noqa: ANN001 - the bot API's BotState
        """The DUEL numbers: what a scan alone does not show, so that neither needs learning to be read off
        small changes in other numbers (a 2-point shot moves the enemy's energy number by 0.02)."""
        e = self.enemy
        if e.turn < 0:
            return [1.0, -1.0, 0.0, 0.0, 1.0]
        bearing = math.atan2(e.y - s.y, e.x - s.x)
        heading = math.radians(e.direction) - bearing
        shot_age = min(turn - self.shot_turn, 40) / 20 - 1 if self.shot_turn >= 0 else 1.0
        turned_age = min(turn - self.reversal_turn, 60) / 30 - 1 if self.reversal_turn >= 0 else 1.0
        return [shot_age, self.shot_power / 1.5 - 1 if self.shot_turn >= 0 else -1.0,
                e.speed * math.sin(heading) / MAX_SPEED, -e.speed * math.cos(heading) / MAX_SPEED, turned_age]

    def _surf_numbers(self, s, turn: int) -> list[float]:  # noqa: ANN001 - the bot API's BotState
        """The SURF numbers: -1, -1, -1 with no enemy shot in the air; else 1 and each way's danger (surf.danger,
        0 to 1.25) scaled to [-1, 1], played forward with the body offset last ordered."""
        wave = self.surf.nearest(turn, s.x, s.y)
        if wave is None:
            return [-1.0, -1.0, -1.0]
        dangers = self.surf.dangers(wave, turn, (s.x, s.y, s.direction, s.speed), self.offset,
                                    self._enemy_at(turn - self.enemy.turn), (self.width, self.height),
                                    self.controls.move == "orbit", self.controls.wall_stick)
        top = 1.0 + VISIT_WEIGHT
        return [1.0, *(2.0 * min(d, top) / top - 1.0 for d in dangers)]

    def decision_due(self, held: int) -> bool:
        """Whether the action held for `held` turns gives way to a new decision: its repeat turns are up, or
        (react) the enemy just fired."""
        return held >= self.controls.repeat or (self.controls.react and self.enemy_fired)

    def decide(self) -> None:
        """A new decision begins: what happened before it has been seen, and the way we are going is fixed for
        it (speed = keep), so a held "turn back" does not turn back again once it has."""
        self.enemy_fired = False
        self.decision += 1
        if self.controls.speed == "mix":
            self.coin = float(self.coins.random())
        if abs(self.ordered) > 0.5:  # the way it was last told to go, not the way it moves: a tank held against a
            self.going = 1.0 if self.ordered > 0 else -1.0  # wall, or still slowing to turn back, goes the new way

    @staticmethod
    def commands(action: np.ndarray) -> tuple[float, float, float, float]:
        """(target speed, turn rate, gun action, fire power or 0 for hold), clamped to the action's ranges."""
        a = np.clip(np.asarray(action, np.float64), ACT_LOW, ACT_HIGH)
        power = float(a[3]) if a[3] >= MIN_POWER else 0.0
        return float(a[0]), float(a[1]), float(a[2]), power

    def orders(self, action: np.ndarray, held: int = 0) -> Orders:
        """The intent for `action` from the state last observed, `held` turns into its decision: the aim and the
        radar as TankControls says."""
        if self.fixed:  # TankControls.fixed: those parts are the controls', whatever the policy chose
            action = np.array(action, np.float32)
            for i, value in self.fixed.items():
                action[i] = value
        speed, turn, aim, power = self.commands(action)
        power = self._finishing(power)
        s, c = self.me, self.controls
        if c.speed in ("ahead", "keep"):
            speed = min(MAX_SPEED, MAX_SPEED + 2.0 * speed) * (self.going if c.speed == "keep" else 1.0)
        elif c.speed == "flip":
            speed = MAX_SPEED * self.going * (1.0 if speed >= 0 else -1.0)
        elif c.speed == "mix":  # turn back at odds (8 - action) / 16
            speed = MAX_SPEED * self.going * (-1.0 if self.coin < (MAX_SPEED - speed) / (2 * MAX_SPEED) else 1.0)
        elif c.speed == "time":  # below 0: turn back that far into the decision (-8 at once, toward 0 at its end)
            turn_back = speed < 0 and held >= (MAX_SPEED + speed) / MAX_SPEED * c.repeat
            speed = MAX_SPEED * self.going * (-1.0 if turn_back else 1.0)
        target = self._target(s) if s is not None else None
        if c.speed == "surf":
            speed = MAX_SPEED * self._surf_way(s, target, speed, turn)
        self.ordered = speed
        if s is None:  # nothing observed yet: the first form's orders
            return Orders(speed, turn, R.limit_gun_turn_rate(aim), MAX_RADAR_TURN, power, False)
        if c.aim != "rate":
            goal = self._aim_goal(s, target, aim, power)
            goal = s.gun_direction if goal is None else goal  # type: ignore[attr-defined]
            gun = R.limit_gun_turn_rate(_angle(goal - s.gun_direction))  # type: ignore[attr-defined]
        else:
            gun = R.limit_gun_turn_rate(aim)
        if c.move in ("bearing", "orbit") and target is not None:
            offset = self.offset = turn * (90.0 / MAX_TURN)
            heading = orbit_heading(s.x, s.y, target, offset, speed, c.move == "orbit",  # type: ignore[attr-defined]
                                    (self.width, self.height), c.wall_stick)
            turn = R.limit_turn_rate(_angle(heading - s.direction), s.speed)  # type: ignore[attr-defined]
        radar = MAX_RADAR_TURN
        if c.radar == "lock" and target is not None:
            off = _angle(target - s.radar_direction)  # type: ignore[attr-defined]
            # past the bearing by half a sweep: the arc swept this turn holds the enemy wherever it moves
            radar = R.limit_radar_turn_rate(off + math.copysign(MAX_RADAR_TURN / 2, off))
        independent = c.aim != "rate" or c.radar == "lock"
        return Orders(speed, turn, gun, radar, power, independent)

    def _finishing(self, power: float) -> float:
        """kill_shot: the shot against an enemy with little energy left is the weakest that destroys it. A slow
        heavy bullet at a low enemy gives it time to leave the line, or to die of its own shot or of inactivity
        first, which wins the round but not by our bullet (docs/tank-experiments.md, "The finishing shot")."""
        if not self.controls.kill_shot or power <= 0.0 or not self.enemy.alive:
            return power
        return min(power, max(MIN_POWER, R.kill_power(self.enemy.energy) + KILL_MARGIN))

    def _surf_way(self, s, target: float | None, action: float, turn: float) -> float:  # noqa: ANN001
        """speed = surf: the way to drive (+1 / -1). Against the shot in the air that meets us first, the way
        its guess factor is the safer, biased by the action; with none, flip's way."""
        wave = self.surf.nearest(self.turn, s.x, s.y) if s is not None and target is not None else None
        if wave is None:
            return self.going * (1.0 if action >= 0 else -1.0)
        age = self.turn - self.enemy.turn
        return choose(self.surf, wave, self.turn, (s.x, s.y, s.direction, s.speed), turn * (90.0 / MAX_TURN),
                      self._enemy_at(age), (self.width, self.height), action / MAX_SPEED, self.controls.move == "orbit",
                      self.controls.wall_stick)

    def _aim_goal(self, s, target: float | None, aim: float, power: float) -> float | None:  # noqa: ANN001
        """The gun's goal direction for the aim action, or None while no enemy is tracked."""
        if target is None:
            return None
        if self.controls.aim == "bearing":
            return target + aim
        if self.controls.aim == "lead":
            return self._lead(s, power) + aim
        if self.controls.aim == "gf":
            self.aim_frame = (target, self.lateral, self.escape_angle(power))  # what a shot it fires is labelled in
            _, lateral, escape = self.aim_frame
            return target + lateral * guess_factor(aim) * escape
        return self._lead(s, power, (aim + MAX_AIM) / (2 * MAX_AIM))  # path: how far along the enemy's course

    def escape_angle(self, power: float) -> float:
        """The widest angle (degrees) the enemy can move, seen from us, while a bullet of `power` (1.5 when
        holding fire) flies, at the highest speed it has shown this round: 0 for a bot that never moved, so
        every guess factor hits a sitting target."""
        speed = R.calc_bullet_speed(power if power > 0 else 1.5)
        return math.degrees(math.asin(min(self.top_speed, speed) / speed))

    def _aim_quality(self, bullet: dict) -> float:
        """1 for a shot toward where a bullet of its power meets the enemy on its linear course (the bearing,
        for a still one), falling to 0 at 10 degrees off: the best guess at a hit that a shot's own turn allows,
        whichever aim form fired it."""
        if self._target(self.me) is None or "direction" not in bullet:
            return 0.0
        lead = self._lead(self.me, float(bullet.get("power", 1.5)))
        return max(0.0, 1.0 - abs(_angle(float(bullet["direction"]) - lead)) / 10.0)

    def _enemy_at(self, turns: float) -> tuple[float, float]:
        """Where the enemy is `turns` after its last scan if it keeps its heading and speed."""
        e = self.enemy
        rad = math.radians(e.direction)
        return e.x + math.cos(rad) * e.speed * turns, e.y + math.sin(rad) * e.speed * turns

    def _lead(self, s, power: float, share: float = 1.0) -> float:  # noqa: ANN001
        """The direction to where a bullet of `power` (1.5 when holding fire) fired next turn meets the enemy,
        if it keeps its heading and speed (stopped by the walls): linear targeting. With `share` < 1, to the
        point that far along the enemy's course over the bullet's flight (0: where the enemy is now)."""
        speed = R.calc_bullet_speed(power if power > 0 else 1.5)
        radius, age, flight = R.BOT_BOUNDING_CIRCLE_RADIUS, self.turn - self.enemy.turn, 0.0
        x = y = 0.0
        for _ in range(4):  # fixed-point iterations of the flight time converge fast for bullets 11-20 > 8
            x, y = self._enemy_at(age + share * (1 + flight))
            x, y = R.clamp(x, radius, self.width - radius), R.clamp(y, radius, self.height - radius)
            flight = math.hypot(x - s.x, y - s.y) / speed
        return math.degrees(math.atan2(y - s.y, x - s.x))

    def _target(self, s) -> float | None:  # noqa: ANN001
        """The direction from us to where the enemy is now (its last scan moved on at its speed), or None when
        it was never seen, is dead, or was lost LOCK_LOST_AFTER turns ago."""
        e = self.enemy
        age = self.turn - e.turn
        if e.turn < 0 or not e.alive or age > LOCK_LOST_AFTER:
            return None
        x, y = self._enemy_at(age)
        return math.degrees(math.atan2(y - s.y, x - s.x))
