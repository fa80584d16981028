"""Scripted opponents: each does what its name says, one turn at a time (views) and over whole rounds
on the rules engine; the bot-API adapter gives the same orders as the engine adapter."""

from __future__ import annotations

import math

import numpy as np
import pytest

from actor.bots.tankroyale.engine import Intent
from actor.bots.tankroyale.opponents import (
    OPPONENTS,
    Bump,
    Me,
    Scan,
    View,
    apply_intent,
    make,
    normal,
    view_from_api,
    view_from_schema,
)


def me(x: float = 400, y: float = 300, direction: float = 0, gun: float = 0, radar: float = 0, speed: float = 0,
       gun_heat: float = 0, energy: float = 100) -> Me:
    return Me(x, y, energy, direction, gun, radar, speed, gun_heat)


def view(m: Me | None = None, scans: tuple[Scan, ...] = (), turn: int = 10, **kw: object) -> View:
    return View(turn, m or me(), 800, 600, scans, **kw)  # type: ignore[arg-type]


def scan_at(x: float, y: float, energy: float = 100, bot_id: int = 1) -> Scan:
    return Scan(bot_id, x, y, energy, 0.0, 0.0)


def policy(name: str, seed: int = 0):  # noqa: ANN201
    p = make(name)
    p.reset(np.random.default_rng(seed))
    return p


# -- one turn at a time -----------------------------------------------------------------------------

def test_the_roster_and_unknown_names() -> None:
    assert {"SittingDuck", "SpinBot", "Walls", "RamFire", "Tracker", "RandomBot", "HeadOnBot"} <= set(OPPONENTS)
    with pytest.raises(ValueError, match="unknown opponent 'Nobody'"):
        make("Nobody")


def test_sitting_duck_gives_no_orders_whatever_it_sees() -> None:
    duck = policy("SittingDuck")
    for v in (view(), view(scans=(scan_at(500, 300),)), view(me(gun_heat=0), hit_by_bullet=True)):
        i = duck.act(v)
        assert (i.target_speed, i.turn_rate, i.gun_turn_rate, i.radar_turn_rate, i.firepower) == (0, 0, 0, 0, 0)


def test_spinbot_circles_right_and_fires_hard_only_at_a_scan() -> None:
    spin = policy("SpinBot")
    quiet, seen = spin.act(view()), spin.act(view(scans=(scan_at(600, 300),)))
    assert quiet.turn_rate < 0 and seen.turn_rate < 0 and quiet.target_speed == 5
    assert quiet.firepower == 0 and seen.firepower == 3
    assert spin.act(view(me(gun_heat=0.5), scans=(scan_at(600, 300),))).firepower == 0, "a hot gun cannot fire"


@pytest.mark.parametrize("target, sign", [((500, 400), 1), ((500, 200), -1)], ids=["left", "right"])
def test_tracker_turns_its_gun_toward_the_scanned_bot(target: tuple[float, float], sign: int) -> None:
    tracker = policy("Tracker")
    i = tracker.act(view(me(gun=0), scans=(scan_at(*target),)))
    assert math.copysign(1, i.gun_turn_rate) == sign and abs(i.gun_turn_rate) == 20  # 45 degrees off: full rate
    far = tracker.act(view(me(direction=math.degrees(math.atan2(100, 100))), scans=(scan_at(*target),)))
    assert far.target_speed == 0 or far.target_speed is None or far.target_speed >= 0
    on = tracker.act(view(me(x=400, y=300, gun=0), scans=(scan_at(520, 300),)))
    assert on.firepower == 3 and abs(on.gun_turn_rate) < 1e-9, "close and aligned: fires straight ahead"


def test_tracker_follows_a_far_bot_and_backs_off_a_near_one() -> None:
    tracker = policy("Tracker")
    assert tracker.act(view(me(direction=0), scans=(scan_at(700, 300),))).target_speed > 0
    assert tracker.act(view(me(direction=0), scans=(scan_at(460, 300),))).target_speed < 0


def test_head_on_bot_keeps_aiming_at_the_last_scan() -> None:
    bot = policy("HeadOnBot")
    first = bot.act(view(me(gun=0), scans=(scan_at(400, 600),)))  # straight up: 90 degrees left
    later = bot.act(view(me(gun=20)))  # no scan now: still turns toward where it was
    assert first.gun_turn_rate == 20 and later.gun_turn_rate == 20 and later.radar_turn_rate == 45
    aimed = bot.act(view(me(gun=90)))
    assert aimed.firepower == 2.0 and abs(aimed.gun_turn_rate) < 1e-9, "on target, 300 away: fires at power 2"
    assert bot.act(view(me(gun=90, gun_heat=1))).firepower == 0


def test_ramfire_faces_a_scanned_bot_then_drives_into_it() -> None:
    ram = policy("RamFire")
    search = ram.act(view())
    assert search.turn_rate != 0 and search.target_speed == 0, "turns to sweep its radar while nothing is seen"
    turning = ram.act(view(me(direction=0), scans=(scan_at(400, 500),)))  # 90 degrees to the left
    assert turning.turn_rate == 10 and turning.target_speed == 0 and turning.rescan
    driving = ram.act(view(me(direction=90)))
    assert driving.target_speed == 8 and driving.turn_rate == 0


def test_ramfire_spares_a_weak_bot_it_rams() -> None:
    ram = policy("RamFire")
    strong = ram.act(view(me(), bumps=(Bump(1, 430, 300, 50.0, True),)))
    weak = ram.act(view(me(), bumps=(Bump(1, 430, 300, 3.0, True),)))
    assert strong.firepower == 3 and weak.firepower == 0.5


def test_random_bot_is_random_but_repeatable_for_a_seed() -> None:
    def orders(seed: int) -> list[tuple]:
        bot = policy("RandomBot", seed)
        return [(i.target_speed, i.turn_rate, i.gun_turn_rate, i.firepower) for i in (bot.act(view()) for _ in range(200))]

    a, b, c = orders(1), orders(1), orders(2)
    assert a == b and a != c
    assert len({o[:3] for o in a}) > 3 and any(o[3] > 0 for o in a)


def test_walls_squares_up_then_drives_to_the_wall() -> None:
    walls = policy("Walls")
    first = walls.act(view(me(direction=130)))
    assert first.turn_rate == -10 and first.target_speed == 0, "turns right by direction % 90 (40 degrees)"
    aligned = walls.act(view(me(direction=90)))
    assert aligned.turn_rate == 0
    assert walls.act(view(me(direction=90))).target_speed == 8


# -- the two adapters read the same things ----------------------------------------------------------

SCHEMA_EVENTS = [
    {"type": "ScannedBotEvent", "turnNumber": 7, "scannedByBotId": 2, "scannedBotId": 1, "energy": 80.0, "x": 100.0,
     "y": 200.0, "direction": 90.0, "speed": 8.0},
    {"type": "BotHitBotEvent", "turnNumber": 7, "botId": 2, "victimId": 1, "energy": 80.0, "x": 100.0, "y": 200.0,
     "rammed": True},
    {"type": "BotHitWallEvent", "turnNumber": 7, "victimId": 2},
    {"type": "BulletHitBotEvent", "turnNumber": 7, "victimId": 2, "damage": 4.0, "energy": 60.0,
     "bullet": {"bulletId": 3, "ownerId": 1, "power": 1.0, "x": 1.0, "y": 2.0, "direction": 0.0}},
    {"type": "SomethingNew", "turnNumber": 7},
]
SCHEMA_STATE = {"energy": 64.0, "x": 120.0, "y": 210.0, "direction": 10.0, "gunDirection": 20.0,
                "radarDirection": 30.0, "speed": 2.0, "gunHeat": 0.4, "turnRate": 0.0, "gunTurnRate": 0.0}


def api_objects():  # noqa: ANN201 - the bot API's classes, as its event mapper makes them
    pytest.importorskip("robocode_tank_royale")
    from robocode_tank_royale.bot_api import BotState, BulletState
    from robocode_tank_royale.bot_api.events import HitBotEvent, HitByBulletEvent, HitWallEvent, ScannedBotEvent

    state = BotState(False, 64.0, 120.0, 210.0, 10.0, 20.0, 30.0, 45.0, 2.0, 0.0, 0.0, 0.0, 0.4, 1,
                     None, None, None, None, None, None, None, False)
    bullet = BulletState(3, 1, 1.0, 1.0, 2.0, 0.0, None)
    events = [ScannedBotEvent(7, 2, 1, 80.0, 100.0, 200.0, 90.0, 8.0), HitBotEvent(7, 1, 80.0, 100.0, 200.0, True),
              HitWallEvent(7), HitByBulletEvent(7, bullet, 4.0, 60.0)]
    return state, events


def test_schema_and_bot_api_events_make_the_same_view() -> None:
    from_schema = view_from_schema(2, SCHEMA_STATE, SCHEMA_EVENTS, 7, (800, 600))
    state, events = api_objects()
    from_api = view_from_api(state, events, 7, (800, 600))
    assert from_schema == from_api
    assert from_schema.scans[0].bot_id == 1 and from_schema.bumps[0].rammed and from_schema.hit_wall
    assert from_schema.hit_by_bullet


def test_the_bot_api_bot_sets_the_policys_orders() -> None:
    pytest.importorskip("robocode_tank_royale")
    from robocode_tank_royale.bot_api.events import TickEvent

    from actor.bots.tankroyale.opponents import bot

    state, events = api_objects()
    for name in OPPONENTS:
        b = bot(name, "ws://127.0.0.1:9")  # never started: no connection is made
        ref = make(name)
        ref.reset(np.random.default_rng(0))
        tick = TickEvent(turn_number=7, round_number=1, bot_state=state, bullet_states=[], events=events)
        b._internals.set_tick_event(tick)  # what the bot API does when a tick arrives
        want = ref.act(view_from_schema(2, SCHEMA_STATE, SCHEMA_EVENTS, 7, (800, 600)))
        apply_intent(b, b.policy.act(view_from_api(state, events, 7, b.arena)))
        for field in ("target_speed", "turn_rate", "gun_turn_rate", "radar_turn_rate", "adjust_gun_for_body_turn"):
            assert getattr(b, field) == pytest.approx(getattr(want, field)), (name, field)


def test_apply_intent_leaves_unset_orders_alone() -> None:
    pytest.importorskip("robocode_tank_royale")
    from actor.bots.tankroyale.opponents import bot

    b = bot("SittingDuck", "ws://127.0.0.1:9")
    b.target_speed = 4.0
    apply_intent(b, Intent(turn_rate=-3.0))
    assert b.target_speed == 4.0 and b.turn_rate == -3.0


def test_normal_angles() -> None:
    assert normal(190) == -170 and normal(-190) == 170 and normal(360) == 0
