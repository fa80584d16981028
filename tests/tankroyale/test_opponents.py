"""Scripted opponents: each does what its name says, one turn at a time (views) and over whole rounds
on the rules engine; the bot-API adapter gives the same orders as the engine adapter."""

from __future__ import annotations

import math

import numpy as np
import pytest

from actor.bots.tankroyale.engine import Engine, Intent, Participant, Setup, Turn
from actor.bots.tankroyale.opponents import (
    OPPONENTS,
    Bump,
    Me,
    Scan,
    View,
    act_on_turn,
    apply_intent,
    make,
    normal,
    view_from_api,
    view_from_schema,
)

DUCK, BOT = 1, 2


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
        acts = (bot.act(view()) for _ in range(200))
        return [(i.target_speed, i.turn_rate, i.gun_turn_rate, i.firepower) for i in acts]

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


def test_walls_backs_off_a_bot_ahead_and_drives_on_from_one_behind() -> None:
    for bump_x, sign in ((440, -1), (360, 1)):  # facing east: ahead, then behind
        walls = policy("Walls")
        walls.act(view(me(direction=0)))
        i = walls.act(view(me(direction=0), bumps=(Bump(1, bump_x, 300, 90.0, False),)))
        assert math.copysign(1, i.target_speed) == sign and i.turn_rate == 0
    spin = policy("SpinBot")
    assert spin.act(view(me(direction=0), bumps=(Bump(1, 436, 305, 90.0, True),))).firepower == 3, "ahead: fire"
    assert spin.act(view(me(direction=0), bumps=(Bump(1, 364, 300, 90.0, True),))).firepower == 0


# -- whole rounds on the rules engine, against a sitting duck (id 1) ----------------------------------

def play(subject: str, turns: int = 500, seed: int = 3, target: str = "SittingDuck") -> list[Turn]:
    """A one-round game of `subject` (id 2) against `target` (id 1), both fed the engine's own dicts."""
    engine = Engine(Setup(number_of_rounds=1), [Participant(DUCK, target), Participant(BOT, subject)], seed=seed)
    policies = {DUCK: policy(target, 1), BOT: policy(subject, 2)}
    turn = engine.new_round()
    history = [turn]
    while not turn.round_ended and len(history) <= turns:
        alive = [i for i in policies if i in turn.bot_states]
        turn = engine.step({i: act_on_turn(policies[i], i, turn, (800, 600)) for i in alive})
        history.append(turn)
    return history


def kinds(turn: Turn, bot: int = BOT) -> list[str]:
    return [e["type"] for e in turn.events.get(bot, [])]


def gun_error(turn: Turn) -> float:
    """How far the bot's gun points from the duck, in degrees."""
    me, duck = turn.bot_states[BOT], turn.bot_states[DUCK]
    return abs(normal(math.degrees(math.atan2(duck["y"] - me["y"], duck["x"] - me["x"])) - me["gunDirection"]))


def distance(turn: Turn) -> float:
    me, duck = turn.bot_states[BOT], turn.bot_states[DUCK]
    return math.hypot(duck["x"] - me["x"], duck["y"] - me["y"])


def fired(history: list[Turn], bot: int = BOT) -> int:
    return sum(kinds(t, bot).count("BulletFiredEvent") for t in history)


def hits(history: list[Turn], bot: int = BOT) -> int:
    """Bullets of `bot` that hit another bot (inactivity also drains energy: energy alone proves no shot)."""
    return sum(e["type"] == "BulletHitBotEvent" and e["bullet"]["ownerId"] == bot and e["victimId"] != bot
               for t in history for e in t.events.get(bot, []))


def test_engine_sitting_duck_never_moves_nor_fires() -> None:
    history = play("SpinBot")
    keys = ("x", "y", "direction", "gunDirection", "radarDirection")
    first = [history[0].bot_states[DUCK][k] for k in keys]
    assert all([t.bot_states[DUCK][k] for k in keys] == first for t in history)
    assert fired(history, DUCK) == 0 and hits(history, BOT) > 0
    assert history[-1].round_ended and history[-1].bot_states[DUCK]["energy"] == 0, "SpinBot shot it dead"


def test_engine_spinbot_turns_every_turn_and_fires_at_what_it_scans() -> None:
    history = play("SpinBot", turns=300)
    dirs = [t.bot_states[BOT]["direction"] for t in history]
    assert all(a != b for a, b in zip(dirs[1:], dirs[2:])), "the body turns on every turn"
    assert max(t.bot_states[BOT]["speed"] for t in history) == 5
    shots = 0
    for now, nxt in zip(history, history[1:]):
        cool = now.bot_states[BOT]["gunHeat"] == 0
        scanned = "ScannedBotEvent" in kinds(now)
        assert ("BulletFiredEvent" in kinds(nxt)) == (scanned and cool), f"turn {nxt.turn_number}"
        shots += scanned and cool
    assert shots >= 2


def test_engine_walls_runs_along_the_walls_gun_inward() -> None:
    history = play("Walls", turns=600)
    first_wall = next(i for i, t in enumerate(history) if "BotHitWallEvent" in kinds(t))
    walls_visited = set()
    for t in history[first_wall:]:
        s = t.bot_states[BOT]
        gaps = {"west": s["x"], "east": 800 - s["x"], "south": s["y"], "north": 600 - s["y"]}
        nearest = min(gaps, key=gaps.get)
        assert gaps[nearest] <= 18.5, f"turn {t.turn_number}: left the walls at {s['x']:.0f},{s['y']:.0f}"
        walls_visited.add(nearest)
        if abs(s["speed"]) > 1:  # driving: along a wall, gun pointing into the arena
            assert s["direction"] % 90 == pytest.approx(0, abs=0.5) or s["direction"] % 90 == pytest.approx(90, abs=0.5)
            assert normal(s["gunDirection"] - s["direction"]) == pytest.approx(90, abs=0.5)
    assert walls_visited == {"west", "east", "south", "north"}


def test_engine_ramfire_closes_in_and_rams() -> None:
    history = play("RamFire")
    start = distance(history[0])
    rams = [t for t in history if any(e["type"] == "BotHitBotEvent" and e["rammed"] for e in t.events.get(BOT, []))]
    assert start > 150 and rams, "drove into the duck"
    assert min(distance(t) for t in history) < 40  # two bots of radius 18 touching
    assert hits(history) > 0


def test_engine_tracker_follows_and_keeps_its_gun_on_the_target() -> None:
    history = play("Tracker")
    seen = next(i for i, t in enumerate(history) if "ScannedBotEvent" in kinds(t))
    settled = history[seen + 15:]
    assert settled and sum(gun_error(t) < 3 for t in settled) >= 0.9 * len(settled)
    assert distance(history[0]) > 200 and 100 <= distance(history[-1]) <= 160, "closed to its range"
    assert hits(history) > 0


def test_engine_trackfire_sits_still_and_tracks() -> None:
    history = play("TrackFire")
    start = (history[0].bot_states[BOT]["x"], history[0].bot_states[BOT]["y"])
    assert all((t.bot_states[BOT]["x"], t.bot_states[BOT]["y"]) == start for t in history)
    assert gun_error(history[-1]) < 3 and hits(history) > 0


def test_engine_head_on_bot_hits_a_still_target() -> None:
    history = play("HeadOnBot")
    assert hits(history) > 0 and gun_error(history[-1]) < 3


def test_engine_random_bot_wanders() -> None:
    history = play("RandomBot", turns=300)
    xs = [t.bot_states[BOT]["x"] for t in history]
    ys = [t.bot_states[BOT]["y"] for t in history]
    assert max(xs) - min(xs) > 50 or max(ys) - min(ys) > 50


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


def test_as_bot_processes_on_a_server_they_play_the_same_battle_as_in_process(procs) -> None:  # noqa: ANN001
    """`python -m actor.bots.tankroyale.opponents NAME` on the official bot API, against our server (real
    processes, real sockets): every observer tick equals the in-process game of the same seed."""
    pytest.importorskip("robocode_tank_royale")
    from actor.bots.tankroyale.controller import Controller
    from actor.bots.tankroyale.server import run_server

    setup = Setup(number_of_rounds=1, turn_timeout_us=5_000_000, ready_timeout_us=20_000_000)  # no turn is skipped
    names = ["RamFire", "Tracker"]  # ids 1 and 2: rams, rescans, a locked radar, independent gun and radar
    ticks: list[dict] = []
    with run_server(port=0, seed=3, setup=setup) as server:
        for name in names:
            procs.start(name, "actor.bots.tankroyale.opponents", name, "--server", server.url)
        with Controller(server.url) as ctl:
            game = ctl.play(setup, names, timeout=120, on_tick=lambda m: ticks.append(
                {b["id"]: (b["x"], b["y"], b["direction"], b["gunDirection"], b["energy"]) for b in m["botStates"]}))
        assert server.stats["skipped_turns"] == 0
    local = [{i: (s["x"], s["y"], s["direction"], s["gunDirection"], s["energy"]) for i, s in t.bot_states.items()}
             for t in play("Tracker", turns=5000, seed=3, target="RamFire")]
    assert len(ticks) > 50 and ticks == local
    assert {r["name"] for r in game.results} == set(names)


def test_apply_intent_leaves_unset_orders_alone() -> None:
    pytest.importorskip("robocode_tank_royale")
    from actor.bots.tankroyale.opponents import bot

    b = bot("SittingDuck", "ws://127.0.0.1:9")
    b.target_speed = 4.0
    apply_intent(b, Intent(turn_rate=-3.0))
    assert b.target_speed == 4.0 and b.turn_rate == -3.0


def test_normal_angles() -> None:
    assert normal(190) == -170 and normal(-190) == 170 and normal(360) == 0
