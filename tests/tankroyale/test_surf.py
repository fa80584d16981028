"""speed = surf: the enemy's shots as waves, the guess factors where they found us, and the safer way.

The geometry and the choice are pure functions (actor/bots/tankroyale/surf.py); the waves' bookkeeping and
what surfing wins are played on the rules engine through TankRoyale-v0, against the game's own bullets.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from actor.bots.tankroyale import rules as R
from actor.bots.tankroyale.env import THEM, TankRoyaleEnv
from actor.bots.tankroyale.surf import BINS, Surf, Wave, choose, gf_bin, play_forward

ARENA = (800.0, 600.0)


def wave_at_us(lateral: float = 1.0, going: float = 1.0) -> Wave:
    """A power-2 shot from (400, 100) at us, due north of it at (400, 400)."""
    return Wave(400.0, 100.0, 0, R.calc_bullet_speed(2.0), 90.0, lateral, going)


def at_angle(w: Wave, off: float, dist: float = 300.0) -> tuple[float, float]:
    rad = math.radians(w.bearing + off)
    return w.x + math.cos(rad) * dist, w.y + math.sin(rad) * dist


def test_a_guess_factor_is_zero_on_the_waves_bearing_and_one_at_the_escape_angle_the_way_we_moved() -> None:
    w = wave_at_us(lateral=1.0)
    assert w.escape == pytest.approx(math.degrees(math.asin(8 / 14)))
    assert w.gf(*at_angle(w, 0.0)) == pytest.approx(0.0, abs=1e-9)
    assert w.gf(*at_angle(w, w.escape)) == pytest.approx(1.0)
    assert w.gf(*at_angle(w, -w.escape / 2)) == pytest.approx(-0.5)
    assert wave_at_us(lateral=-1.0).gf(*at_angle(w, -w.escape / 2)) == pytest.approx(0.5)  # moving the other way
    assert w.gf(*at_angle(w, 3 * w.escape)) == 1.0  # clamped
    assert w.gf_of_direction(w.bearing + w.escape) == pytest.approx(1.0)


def test_a_hit_counts_its_guess_factor_on_the_wave_it_came_with_and_ends_that_wave() -> None:
    surf = Surf()
    surf.fired(400.0, 100.0, 2.0, 0, 400.0, 400.0, 1.0)
    surf.fired(400.0, 100.0, 3.0, 5, 400.0, 400.0, 1.0)  # another shot, another speed
    w = surf.waves[0]
    hit_at = at_angle(w, w.escape / 2, dist=w.radius(20))
    surf.hit(20, *hit_at, {"power": 3.0, "direction": w.bearing})  # no wave of power 3 is where we are
    assert not surf.hits.any() and len(surf.waves) == 2
    surf.hit(20, *hit_at, {"power": 2.0, "direction": w.bearing + 0.4 * w.escape})  # the bullet's way counts
    assert int(np.argmax(surf.hits)) == gf_bin(0.4) and surf.waves == [surf.waves[0]] and surf.waves[0].speed == 11.0
    assert surf.danger(0.5) > surf.danger(0.0) > surf.danger(-0.5)


def test_a_wave_that_passed_us_counts_where_it_met_us() -> None:
    surf = Surf()
    surf.fired(400.0, 100.0, 2.0, 0, 400.0, 400.0, 1.0)
    w = surf.waves[0]
    x, y = at_angle(w, -w.escape, dist=300.0)
    surf.passed(10, x, y)  # 140 out: not there yet
    assert not surf.visits.any() and surf.waves
    surf.passed(25, x, y)  # 350 out: gone past
    assert not surf.waves and int(np.argmax(surf.visits)) == 0 and surf.visits.sum() > 0


def test_play_forward_stops_where_the_wave_meets_us_and_the_two_ways_part() -> None:
    w = wave_at_us(lateral=1.0)
    me = (400.0, 400.0, 180.0, 8.0)  # heading west at full speed: clockwise around (400, 100)... seen from it
    ends = {way: play_forward(w, 0, me, way, 0.0, (400.0, 100.0), ARENA) for way in (1.0, -1.0)}
    for x, y in ends.values():  # the wave reaches the end point on the turn it is reached, not a turn before
        t = math.ceil(math.hypot(x - w.x, y - w.y) / w.speed)
        assert w.radius(t - 1) < math.hypot(x - w.x, y - w.y) <= w.radius(t) + 8.0
    (xa, _), (xb, _) = ends[1.0], ends[-1.0]
    assert xa < 400.0 - 60 and xb > 400.0 - 30  # ahead goes on west; in reverse it stops and comes back east


def test_play_forward_is_stopped_by_the_walls() -> None:
    w = wave_at_us()
    x, y = play_forward(w, 0, (30.0, 400.0, 180.0, 8.0), 1.0, 0.0, (400.0, 100.0), ARENA)
    assert x >= R.BOT_BOUNDING_CIRCLE_RADIUS and 0 <= y <= 600


@pytest.mark.parametrize("danger_on", [True, False])
def test_the_safer_way_is_taken_and_the_bias_decides_how_much_safer(danger_on: bool) -> None:
    w = wave_at_us(lateral=-1.0, going=1.0)
    me, enemy = (400.0, 400.0, 180.0, 8.0), (400.0, 100.0)
    gf = {way: w.gf(*play_forward(w, 0, me, way, 0.0, enemy, ARENA)) for way in (1.0, -1.0)}
    assert gf_bin(gf[1.0]) != gf_bin(gf[-1.0])
    surf = Surf()
    surf.hits[gf_bin(gf[1.0] if danger_on else gf[-1.0])] = 5.0
    surf.hits += 0.1
    safer = -1.0 if danger_on else 1.0
    assert choose(surf, w, 0, me, 0.0, enemy, ARENA, 0.0) == safer
    assert choose(surf, w, 0, me, 0.0, enemy, ARENA, -1.0) == -1.0  # always turn back
    assert choose(surf, w, 0, me, 0.0, enemy, ARENA, 1.0) == 1.0  # never
    empty = Surf()  # nothing counted: the two ways tie, the bias's sign decides
    assert choose(empty, w, 0, me, 0.0, enemy, ARENA, 0.0) == 1.0
    assert choose(empty, w, 0, me, 0.0, enemy, ARENA, -0.1) == -1.0


def test_every_enemy_shot_becomes_a_wave_from_where_it_was_fired() -> None:
    """On the engine: each bullet the opponent fires is a wave of its speed, from within a turn's travel of the
    bullet's start, seen on the turn its energy drop shows."""
    env = TankRoyaleEnv(opponent="Oscillator", aim="gf", move="orbit", speed="surf", observe="duel", react=True,
                        repeat=1, max_turns=800)
    env.reset(seed=3)
    fired = matched = 0
    for _ in range(600):
        shots = [e["bullet"] for e in env.turn.events.get(THEM, []) if e.get("type") == "BulletFiredEvent"]
        _, _, terminated, truncated, _ = env.step(np.array([0, 0, 0, 0], np.float32))  # we never fire
        if terminated or truncated:
            break
        for b in shots:  # fired on the turn before: the drop shows now
            fired += 1
            matched += any(abs(w.speed - R.calc_bullet_speed(b["power"])) < 1e-9
                           and math.hypot(w.x - b["x"], w.y - b["y"]) <= 16.0 for w in env.brain.surf.waves)
    assert fired >= 10 and matched >= fired - 1, (fired, matched)
    assert env.brain.surf.hits.sum() > 0 and env.brain.surf.visits.sum() > 0


def play(speed: str, action: float, rounds: int) -> tuple[float, float]:
    """(destroyed, damage taken a round): our tank's form with one constant action against the Surfer, whose
    guess-factor gun learns where we go across the rounds."""
    env = TankRoyaleEnv(opponent="Surfer", aim="gf", move="orbit", speed=speed, observe="duel", react=True,
                        repeat=30, max_turns=1500)
    destroyed = taken = 0.0
    for k in range(rounds):
        env.reset(seed=100 + k)
        while True:
            _, _, terminated, truncated, info = env.step(np.array([action, 0, 0, 2], np.float32))
            if terminated or truncated:
                break
        destroyed += info["won"] and info["tally"]["destroyed"] > 0
        taken += info["tally"]["taken"]
    return destroyed / rounds, taken / rounds


def test_surfing_beats_a_guess_factor_gun_that_turning_back_on_every_shot_does_not() -> None:
    """Turning back on every shot (flip's -8) is a habit the Surfer's gun learns; surfing (bias 0) takes the way
    its bullets found us at less, and the same head-on gun then wins."""
    surfed, surf_taken = play("surf", 0.0, 12)
    flipped, flip_taken = play("flip", -8.0, 12)
    assert surfed >= flipped + 0.3, (surfed, flipped)
    assert surf_taken < 0.8 * flip_taken, (surf_taken, flip_taken)


@pytest.mark.parametrize(("action", "against"), [(-8.0, -1.0), (8.0, 1.0)])
def test_at_the_ends_of_the_action_the_surf_form_is_a_reflex(action: float, against: float) -> None:
    """What wins against straight-line guns stays reachable: at -8 the tank turns back against the way it went
    when the shot in the air was fired, whatever the counts say, and at +8 it never does."""
    env = TankRoyaleEnv(opponent="Oscillator", aim="gf", move="orbit", speed="surf", observe="duel", react=True,
                        repeat=30, max_turns=900)
    env.reset(seed=5)
    env.brain.surf.hits[:] = np.random.default_rng(0).random(BINS)  # counts that favour one way or the other
    checked = 0
    for _ in range(200):
        _, _, terminated, truncated, _ = env.step(np.array([action, 0, 0, 2], np.float32))
        if terminated or truncated:
            break
        me = env.brain.me
        wave = env.brain.surf.nearest(env.brain.turn, me.x, me.y)
        if wave is not None:
            orders = env.brain.orders(np.array([action, 0, 0, 2], np.float32))
            assert math.copysign(1.0, orders.target_speed) == against * wave.going
            checked += 1
    assert checked >= 10


def test_observe_surf_shows_a_shot_in_the_air_and_how_dangerous_each_way_has_been() -> None:
    """observe = surf: three numbers after the duel ones; -1s with no shot in the air, and once the enemy's
    bullets have found us, the way they found us at reads as the more dangerous."""
    from actor.bots.tankroyale.brain import DUEL, OBSERVATION, SURF

    env = TankRoyaleEnv(opponent="Oscillator", aim="gf", move="orbit", speed="flip", observe="surf", react=True,
                        repeat=1, max_turns=900)
    obs, _ = env.reset(seed=5)
    first = len(OBSERVATION) + len(DUEL)
    assert obs.shape == (first + len(SURF),) and list(obs[first:]) == [-1.0, -1.0, -1.0]
    in_air = differ = 0
    for _ in range(600):
        obs, _, terminated, truncated, _ = env.step(np.array([8, 0, 0, 0], np.float32))  # never turn back
        if terminated or truncated:
            break
        me = env.brain.me
        assert (obs[first] == 1.0) == (env.brain.surf.nearest(env.brain.turn, me.x, me.y) is not None)
        in_air += obs[first] == 1.0
        differ += obs[first] == 1.0 and env.brain.surf.hits.sum() > 0 and obs[first + 1] > obs[first + 2]
    assert in_air >= 50 and differ >= 20, (in_air, differ)


def test_the_flip_form_tracks_no_waves() -> None:
    env = TankRoyaleEnv(opponent="Oscillator", aim="gf", move="orbit", speed="flip", observe="duel", react=True,
                        repeat=1, max_turns=300)
    env.reset(seed=5)
    for _ in range(200):
        _, _, terminated, truncated, _ = env.step(np.array([8, 0, 0, 0], np.float32))
        if terminated or truncated:
            break
    assert env.brain.shot_turn >= 0 and not env.brain.surf.waves and not env.brain.surf.hits.any()


def test_a_hit_by_bullet_from_the_bot_api_carries_the_bullets_power_and_direction() -> None:
    """In real battles the surf counts read a hit's guess factor from the bullet's direction and match its wave
    by the bullet's power: the bot API's HitByBulletEvent must bring both into the brain's schema map."""
    pytest.importorskip("robocode_tank_royale")
    from robocode_tank_royale.bot_api import BulletState
    from robocode_tank_royale.bot_api.events import HitByBulletEvent

    from actor.bots.tankroyale.tank import as_schema

    bullet = BulletState(3, 2, 1.5, 100.0, 200.0, 47.0, None)  # id, owner, power, x, y, direction, color
    event = as_schema(HitByBulletEvent(7, bullet, 7.0, 60.0), me=1)
    assert event is not None and event["victimId"] == 1
    assert event["bullet"] == {"ownerId": 2, "power": 1.5, "direction": 47.0}


def test_our_shot_from_the_bot_api_carries_where_it_left() -> None:
    """TankRewards.hindsight judges a shot from where it left: the bot API's BulletFiredEvent must bring the
    bullet's place into the brain's schema map, and the brain must pay it when the wave reaches the enemy."""
    pytest.importorskip("robocode_tank_royale")
    from robocode_tank_royale.bot_api import BulletState
    from robocode_tank_royale.bot_api.events import BulletFiredEvent

    from actor.bots.tankroyale.brain import TankBrain, TankRewards
    from actor.bots.tankroyale.tank import as_schema

    bullet = BulletState(3, 1, 2.0, 100.0, 200.0, 0.0, None)  # id, owner, power, x, y, direction (east), color
    event = as_schema(BulletFiredEvent(10, bullet), me=1)
    assert event is not None and event["bullet"] == {"ownerId": 1, "power": 2.0, "direction": 0.0, "x": 100.0,
                                                     "y": 200.0}
    brain = TankBrain(TankRewards(turn=0.0, hindsight=1.0), (800, 600))
    brain.my_id = 1
    brain.apply([event])
    assert len(brain.waves.shots) == 1 and brain.waves.reached(30, 400.0, 200.0) == []  # 21 turns x 14 < 300
    assert [p.nearness for p in brain.waves.reached(31, 400.0, 200.0)] == [pytest.approx(10.0)]  # 22 x 14 >= 300: dead on, power 2's damage
