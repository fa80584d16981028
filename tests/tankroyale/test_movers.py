"""The opponents that beat the controls (opponents/movers.py) and their guns (opponents/guns.py), on the engine.

Each does what its docstring says: the Dodger's dodge follows a drop in our energy, the Oscillator's and
StopAndGo's periods hold, the Orbiter reverses at random and holds its distance, and each gun hits the
mover it models. The registry takes a new opponent by its definition alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import ClassVar

import numpy as np
import pytest

from actor.bots.tankroyale import rules as R
from actor.bots.tankroyale.engine import Engine, Intent, Participant, Setup, Turn
from actor.bots.tankroyale.opponents import (
    OPPONENTS,
    REGISTRY,
    Policy,
    View,
    act_on_turn,
    direction_to,
    distance_to,
    independent,
    lock_radar,
    make,
    pool,
)
from actor.bots.tankroyale.opponents.guns import GuessFactorGun, PatternGun, Track, intercept, on_target
from actor.bots.tankroyale.opponents.movers import Dodger, Mover, ShotWatch, Wanderer
from tests.tankroyale.test_opponents import scan_at, view

US, THEM = 1, 2
MOVERS = ("Oscillator", "Dodger", "Orbiter", "StopAndGo", "Pulse", "Surfer", "Reverser", "Profiler", "Wanderer",
          "Matcher")


def duel(us: Policy, them: Policy, turns: int, seed: int = 3, arena: tuple[int, int] = (800, 600),
         on_turn: Callable[[Turn], None] | None = None, centred: bool = False) -> list[Turn]:
    """One round of `us` (id 1) against `them` (id 2), both already reset; every turn kept. `centred`: we
    start in the middle of the arena (the engine's initial-position option), so walls do not decide a test."""
    start = {US: (arena[0] / 2, arena[1] / 2, None)} if centred else None
    engine = Engine(Setup(arena_width=arena[0], arena_height=arena[1], number_of_rounds=1),
                    [Participant(US, "us"), Participant(THEM, "them")], seed=seed, initial_positions=start)
    turn = engine.new_round()
    history = [turn]
    policies = {US: us, THEM: them}
    while not turn.round_ended and len(history) <= turns:
        turn = engine.step({i: act_on_turn(p, i, turn, (float(arena[0]), float(arena[1]))) for i, p in policies.items()
                            if i in turn.bot_states})
        history.append(turn)
        if on_turn is not None:
            on_turn(turn)
    return history


def lateral_signs(history: list[Turn]) -> list[int]:
    """Per turn, the sign of THEM's speed across the line from US to it (0 while it barely moves across)."""
    out = []
    for t in history:
        if US not in t.bot_states or THEM not in t.bot_states:
            break
        a, b = t.bot_states[US], t.bot_states[THEM]
        bearing = math.atan2(b["y"] - a["y"], b["x"] - a["x"])
        across = b["speed"] * math.sin(math.radians(b["direction"]) - bearing)
        out.append(0 if abs(across) < 1.0 else (1 if across > 0 else -1))
    return out


def flips(signs: list[int]) -> list[int]:
    """The turns at which the lateral sign changed (ignoring the turns it was near 0)."""
    turns, last = [], 0
    for k, s in enumerate(signs):
        if s and last and s != last:
            turns.append(k)
        last = s or last
    return turns


class Target(Policy):
    """A test target (not registered: no name of its own): stands still, or drives as `drive` says."""

    drive: ClassVar[tuple[float, float]] = (0.0, 0.0)  # target speed, turn rate

    def act(self, view: View) -> Intent:
        i = independent()
        i.target_speed, i.turn_rate = self.drive
        return i


class Shooter(Target):
    """Stands still with its gun turned away from the mover and fires power 1 on the given turns: its energy
    drops by a shot's cost then, and no bullet of it can hit."""

    def __init__(self, at: set[int]) -> None:
        self.at = at

    def act(self, view: View) -> Intent:
        i = independent()
        if view.scans:
            i.radar_turn_rate = lock_radar(view.me, direction_to(view.me, view.scans[0].x, view.scans[0].y))
            away = direction_to(view.me, view.scans[0].x, view.scans[0].y) + 180.0
            i.gun_turn_rate = R.limit_gun_turn_rate(R.normalize_relative_degrees(away - view.me.gun_direction))
        else:
            i.radar_turn_rate = R.MAX_RADAR_TURN_RATE
        i.firepower = 1.0 if view.turn in self.at and view.me.gun_heat == 0 else 0.0
        return i


def reset(p: Policy, seed: int = 0) -> Policy:
    p.reset(np.random.default_rng(seed))
    return p


# -- the registry -----------------------------------------------------------------------------------

def test_a_new_opponent_joins_the_registry_by_being_defined() -> None:
    try:
        class Newcomer(Target):
            name = "Newcomer"
            pool = "held_out"

        assert OPPONENTS["Newcomer"] is Newcomer and "Newcomer" in pool("held_out")
        assert isinstance(make("Newcomer"), Newcomer)
        with pytest.raises(TypeError, match="two opponents are named 'Newcomer'"):
            class Impostor(Target):
                name = "Newcomer"
        with pytest.raises(TypeError, match="pool 'sometimes'"):
            class Odd(Target):
                name = "Odd"
                pool = "sometimes"
    finally:
        REGISTRY.pop("Newcomer", None)
        REGISTRY.pop("Odd", None)
    assert "Target" not in OPPONENTS and "Mover" not in OPPONENTS  # bases without a name do not play


def test_the_pools() -> None:
    assert pool("training") == ("SittingDuck", "SpinBot", "Walls", "RamFire", "Tracker", "TrackFire", "Oscillator",
                                "Dodger", "Orbiter", "StopAndGo")
    assert {"Pulse", "Surfer", "Reverser", "Crazy", "Corners"} <= set(pool("held_out"))
    assert set(pool("baseline")) == {"HeadOnBot", "RandomBot"}
    with pytest.raises(ValueError, match="pool 'x'"):
        pool("x")


# -- what each mover does -----------------------------------------------------------------------------

def test_shot_watch_counts_a_shots_cost_and_nothing_it_can_explain() -> None:
    w = ShotWatch()
    assert not w.fired(view(), scan_at(500, 300, energy=100))  # the first sight sets the level
    assert w.fired(view(), scan_at(500, 300, energy=98))  # a power-2 shot
    assert not w.fired(view(bullet_hit=True), scan_at(500, 300, energy=88))  # our bullet hit it
    assert not w.fired(view(hit_by_bullet=True), scan_at(500, 300, energy=87))  # its bullet hit us
    assert not w.fired(view(), scan_at(500, 300, energy=80))  # more than a shot costs
    assert not w.fired(view(), scan_at(500, 300, energy=80))  # no change


@pytest.mark.parametrize("reaction", ["reverse", "stop"])
def test_the_dodger_dodges_on_the_turn_it_sees_our_energy_drop(reaction: str) -> None:
    shots = {40, 80, 120, 160}
    dodger = reset(Dodger(), seed=5)
    dodger.p_reverse, dodger.p_stop = (1.0, 0.0) if reaction == "reverse" else (0.0, 1.0)
    signs, stopped, drops, energy = [], [], [], []

    def watch(turn: Turn) -> None:
        signs.append(dodger.sign)
        stopped.append(dodger.speed == 0.0)
        events = turn.events.get(US, [])
        drops.append(any(e.get("type") == "BulletFiredEvent" for e in events))
        energy.append(turn.bot_states[US]["energy"])

    duel(reset(Shooter(shots)), dodger, 300, on_turn=watch)
    # a shot on a turn the shooter was also hit reads as one large drop, not a shot's cost: left out
    fired_at = [k for k, d in enumerate(drops) if d and abs(energy[k - 2] - energy[k] - 1.0) < 1e-6]
    assert len(fired_at) >= 3
    for k in fired_at:  # the dodger sees the lower energy in the next turn's scan and acts then
        if reaction == "reverse":
            assert signs[k + 1] != signs[k], f"no reversal after the shot at turn index {k}"
        else:
            assert stopped[k + 1] and all(stopped[k + 1:k + 8]), f"no stop after the shot at turn index {k}"
    quiet = [k for k in range(1, len(signs)) if signs[k] != signs[k - 1] and k - 1 not in fired_at]
    assert len(quiet) <= 2, f"reversals with no shot to explain them: {quiet}"  # at most the walls'


def test_the_oscillator_reverses_with_its_period_however_its_enemy_moves() -> None:
    for seed in (1, 2):
        osc = reset(make("Oscillator"), seed=seed)
        history = duel(reset(make("SittingDuck")), osc, 400, seed=seed)
        turns = flips(lateral_signs(history))
        gaps = np.diff(turns)
        assert len(gaps) >= 8 and all(abs(g - osc.period) <= 1 for g in gaps), (osc.period, gaps.tolist())


def test_stop_and_go_drives_and_stops_with_its_period() -> None:
    sag = reset(make("StopAndGo"), seed=4)
    history = duel(reset(make("SittingDuck")), sag, 300)
    still = [abs(t.bot_states[THEM]["speed"]) < 0.5 for t in history if THEM in t.bot_states]
    starts = [k for k in range(1, len(still)) if still[k] and not still[k - 1]]
    assert len(starts) >= 5 and all(abs(g - (sag.go + sag.stop)) <= 1 for g in np.diff(starts)), np.diff(starts)


@pytest.mark.parametrize("seed", [4, 7])
def test_pulse_slows_to_a_crawl_with_its_period_and_keeps_its_way(seed: int) -> None:
    pulse = reset(make("Pulse"), seed=seed)
    history = duel(reset(make("SittingDuck")), pulse, 600, seed=seed, centred=True)
    speeds = [t.bot_states[THEM]["speed"] for t in history if THEM in t.bot_states]
    slow = [abs(v) <= pulse.CRAWL + 0.01 for v in speeds]
    starts = [k for k in range(10, len(slow)) if slow[k] and not slow[k - 1]]  # past its start from a standstill
    assert len(starts) >= 4 and all(abs(g - (pulse.fast + pulse.slow)) <= 1 for g in np.diff(starts)), \
        (pulse.fast, pulse.slow, np.diff(starts).tolist())
    assert min(abs(v) for v in speeds[20:]) >= pulse.CRAWL - 0.01  # it crawls, never stops


def test_the_orbiter_reverses_at_random_and_holds_its_distance() -> None:
    gaps: list[int] = []
    for seed in range(4):
        orb = reset(make("Orbiter"), seed=seed)
        history = duel(reset(make("SittingDuck")), orb, 1000, seed=seed, centred=True)
        gaps += np.diff(flips(lateral_signs(history))).tolist()
        d = [math.hypot(t.bot_states[US]["x"] - t.bot_states[THEM]["x"],
                        t.bot_states[US]["y"] - t.bot_states[THEM]["y"]) for t in history[100:] if US in t.bot_states]
        assert abs(float(np.median(d)) - orb.distance) < 60, (np.median(d), orb.distance)
    assert len(gaps) >= 20 and len(set(gaps)) >= 10 and min(gaps) >= 6, gaps  # irregular: no period to learn


def radial_share(history: list[Turn]) -> float:
    """THEM's mean |cos| of the angle between its heading and the line from US to it, over the turns it moves:
    0 for a bot that only ever moves sideways to us, about 0.64 for one whose heading is random."""
    out = []
    for t in history[30:]:
        if US not in t.bot_states or THEM not in t.bot_states:
            break
        a, b = t.bot_states[US], t.bot_states[THEM]
        if abs(b["speed"]) > 1.0:
            bearing = math.degrees(math.atan2(b["y"] - a["y"], b["x"] - a["x"]))
            out.append(abs(math.cos(math.radians(b["direction"] - bearing))))
    return float(np.mean(out))


def test_the_wanderer_drives_to_points_not_round_us_and_never_into_a_wall() -> None:
    wanderer, orbiter, legs = [], [], []
    for seed in range(3):
        w = reset(make("Wanderer"), seed=seed)
        history = duel(reset(make("SittingDuck")), w, 1000, seed=seed, centred=True)
        wanderer.append(radial_share(history))
        legs.append(w.legs)
        assert not any(e.get("type") == "BotHitWallEvent" for t in history for e in t.events.get(THEM, []))
        orbiter.append(radial_share(duel(reset(make("SittingDuck")), reset(make("Orbiter"), seed=seed), 1000,
                                         seed=seed, centred=True)))
    assert np.mean(wanderer) >= 0.3 and np.mean(wanderer) >= np.mean(orbiter) + 0.2, (wanderer, orbiter)
    assert min(legs) >= 5, legs  # a new point every 40 turns or sooner: it arrives, or gives up on one


def test_the_wanderer_leaves_for_a_new_point_on_our_shot() -> None:
    shots = {40, 80, 120, 160}
    w = reset(make("Wanderer"), seed=2)
    assert isinstance(w, Wanderer)
    w.p_leave, w.LEG = 1.0, 10_000  # always on a shot, never for want of arriving
    points, drops, energy = [], [], []

    def watch(turn: Turn) -> None:
        points.append(w.point)
        drops.append(any(e.get("type") == "BulletFiredEvent" for e in turn.events.get(US, [])))
        energy.append(turn.bot_states[US]["energy"])

    duel(reset(Shooter(shots)), w, 200, on_turn=watch, centred=True)
    fired_at = [k for k, d in enumerate(drops) if d and abs(energy[k - 2] - energy[k] - 1.0) < 1e-6]
    assert len(fired_at) >= 3
    for k in fired_at:  # it sees the lower energy in the next turn's scan and picks then
        assert points[k + 1] != points[k], f"the same point after the shot at turn index {k}"


@pytest.mark.parametrize("name", MOVERS)
def test_every_mover_beats_a_tank_standing_still_and_never_stalls(name: str) -> None:
    """Against SittingDuck each mover moves for most of the round (walls never pin it) and destroys it."""
    history = duel(reset(make("SittingDuck")), reset(make(name), seed=1), 1500)
    moving = [abs(t.bot_states[THEM]["speed"]) > 0.5 for t in history if THEM in t.bot_states]
    assert US not in history[-1].bot_states or history[-1].bot_states[US]["energy"] <= 0
    assert np.mean(moving) > 0.6 or name == "StopAndGo"


# -- the guns -------------------------------------------------------------------------------------

class Gunner(Policy):
    """Stands still, radar locked, aiming with one gun and firing power 2 when it is on the target."""

    def __init__(self, kind: str) -> None:
        self.kind, self.gf, self.pattern = kind, GuessFactorGun(), PatternGun()

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.track = Track()
        self.gf.new_round()
        self.pattern.new_round()

    def act(self, view: View) -> Intent:
        me, i = view.me, independent()
        s = self.track.see(view)
        if s is None:
            i.radar_turn_rate = R.MAX_RADAR_TURN_RATE
            return i
        bearing, dist = direction_to(me, s.x, s.y), distance_to(me, s.x, s.y)
        i.radar_turn_rate = lock_radar(me, bearing)
        if self.kind == "gf":
            self.gf.see(me, s, self.track, 2.0, view.turn)
            goal = self.gf.aim(me, s, self.track, 2.0)
        elif self.kind == "pattern":
            self.pattern.see(s, self.track, view.turn)
            goal = self.pattern.aim(me, s, self.track, 2.0, (view.arena_width, view.arena_height))
        elif self.kind == "head-on":
            goal = bearing
        else:
            goal = intercept(me, s, 2.0, self.track.turn_rate if self.kind == "circular" else 0.0,
                             (view.arena_width, view.arena_height))
        i.gun_turn_rate = R.limit_gun_turn_rate(R.normalize_relative_degrees(goal - me.gun_direction))
        i.firepower = 2.0 if me.gun_heat == 0 and on_target(me, goal, dist) else 0.0
        return i


class Circler(Target):
    drive = (8.0, 3.0)  # a circle of radius ~150


class Swinger(Target):
    """Sideways to its enemy, full ahead then full reverse every 14 turns: a habit no straight line predicts."""

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self.count = 0

    def act(self, view: View) -> Intent:
        i = independent()
        self.count += 1
        i.target_speed = 8.0 if self.count // 14 % 2 == 0 else -8.0
        if view.scans:  # body square to the enemy
            off = R.normalize_relative_degrees(direction_to(view.me, view.scans[0].x, view.scans[0].y) + 90.0
                                               - view.me.direction)
            off = R.normalize_relative_degrees(off + 180.0) if abs(off) > 90 else off
            i.turn_rate = R.limit_turn_rate(off, view.me.speed)
        i.radar_turn_rate = R.MAX_RADAR_TURN_RATE
        return i


def hit_rate(gunner: Gunner, target: Policy, rounds: int = 1, turns: int = 400) -> float:
    shots = hits = 0
    for k in range(rounds):
        for t in duel(reset(gunner, k), reset(target, k), turns, seed=11 + k):
            for e in t.events.get(US, []):
                shots += e.get("type") == "BulletFiredEvent"
                hits += e.get("type") == "BulletHitBotEvent" and (e.get("bullet") or {}).get("ownerId") == US
    return hits / max(shots, 1)


def test_circular_aim_hits_a_circling_bot_that_linear_and_head_on_aim_miss() -> None:
    circular, linear, head_on = (hit_rate(Gunner(k), Circler(), rounds=3) for k in ("circular", "linear", "head-on"))
    assert circular >= 0.6 and circular > linear + 0.25 and circular > head_on + 0.3, (circular, linear, head_on)


def test_guess_factor_statistics_learn_a_habit_that_head_on_aim_misses() -> None:
    gf = Gunner("gf")
    hit_rate(gf, Swinger(), rounds=4)  # four rounds of waves to learn from
    learned, head_on, linear = hit_rate(gf, Swinger(), 2), hit_rate(Gunner("head-on"), Swinger(), 2), \
        hit_rate(Gunner("linear"), Swinger(), 2)
    assert learned >= max(head_on, linear) + 0.15, (learned, head_on, linear)


def test_pattern_matching_hits_a_habit_that_straight_line_aims_miss() -> None:
    """Against a period (the Swinger's 14 turns, the Oscillator's drawn 10-24), the moves that followed the
    round's most similar moment predict where it goes; head-on, linear and circular aim do not."""
    for target in (Swinger(), make("Oscillator")):
        pattern = hit_rate(Gunner("pattern"), target, rounds=3)
        others = {k: hit_rate(Gunner(k), target, rounds=3) for k in ("head-on", "linear", "circular")}
        assert pattern >= max(others.values()) + 0.15, (type(target).__name__, pattern, others)


def test_the_movers_are_movers() -> None:
    assert all(issubclass(OPPONENTS[n], Mover) for n in MOVERS)


def test_tank_train_plays_the_training_pool_by_default() -> None:
    """The pool an opponent declares is where it plays: tank-train's default opponents, in code and in the
    shipped config, are the training pool, the movers among them."""
    from deploy.tank.train import TANK_TOML, BattleConfig
    from protocol.config import read_toml

    assert BattleConfig().opponents == pool("training")
    assert tuple(read_toml(str(TANK_TOML), "battle")["opponents"]) == pool("training")
