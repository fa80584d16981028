"""The Tank Royale rules engine against the official game's numbers, one rule per test.

Sources (repository robocode-dev/tank-royale): server/src/main/kotlin/dev/robocode/tankroyale/server/
rules/rules.kt (constants), rules/math.kt (speed, turn limits, damage, heat), model/math.kt (geometry),
core/TurnProcessor.kt + GunEngine.kt + CollisionDetector.kt (a turn's order and its hits), score/ (scores,
ranks, placements); docs-build/docs/articles/physics.md and scoring.md.

A few tests set a bot's energy directly (`_bot(...)`) to reach a state the rules only reach slowly.
"""

from __future__ import annotations

import math

import pytest

from actor.bots.tankroyale import rules as R
from actor.bots.tankroyale.engine import Engine, Intent, Participant, Setup, Turn, _ScoreTracker, _update_ranks


def _engine(positions: dict[int, tuple[float, float, float]], seed: int = 1, **setup: object) -> Engine:
    parts = [Participant(i, f"bot{i}") for i in sorted(positions)]
    return Engine(Setup(**setup), parts, seed=seed, initial_positions=positions)  # type: ignore[arg-type]


def _bot(engine: Engine, bot_id: int):  # the engine's own record of a bot, for setting up a state
    return next(b for b in engine._bots if b.id == bot_id)


def _play(engine: Engine, intents: dict[int, Intent], turns: int) -> list[Turn]:
    out = [engine.step(intents)]
    for _ in range(turns - 1):
        out.append(engine.step({}))
    return out


def _events(turn: Turn, bot_id: int, kind: str) -> list[dict]:
    return [e for e in turn.events.get(bot_id, []) if e["type"] == kind]


def _until(engine: Engine, intents: dict[int, Intent], done, limit: int = 200) -> Turn:
    turn = engine.step(intents)
    for _ in range(limit):
        if done(turn):
            return turn
        turn = engine.step({})
    raise AssertionError("condition not reached")


# --- rules/rules.kt and rules/math.kt ----------------------------------------------------------------------------

def test_constants_are_the_official_ones():
    """rules/rules.kt: radius 18, radar 1200, turn 10/gun 20/radar 45, speed 8, accel 1/decel 2, firepower 0.1..3,
    ram 0.6, energy gain 3p, initial heat 3, inactivity 0.1, scores 50/10/1/20%/2/30%."""
    assert (R.BOT_BOUNDING_CIRCLE_RADIUS, R.RADAR_RADIUS) == (18.0, 1200.0)
    assert (R.MAX_TURN_RATE, R.MAX_GUN_TURN_RATE, R.MAX_RADAR_TURN_RATE) == (10.0, 20.0, 45.0)
    assert (R.MAX_FORWARD_SPEED, R.MAX_BACKWARD_SPEED, R.ACCELERATION, R.DECELERATION) == (8.0, -8.0, 1.0, -2.0)
    assert (R.MIN_FIREPOWER, R.MAX_FIREPOWER, R.INITIAL_GUN_HEAT, R.INITIAL_BOT_ENERGY) == (0.1, 3.0, 3.0, 100.0)
    assert (R.RAM_DAMAGE, R.BULLET_HIT_ENERGY_GAIN_FACTOR, R.INACTIVITY_DAMAGE) == (0.6, 3, 0.1)
    assert (R.SCORE_PER_SURVIVAL, R.BONUS_PER_LAST_SURVIVOR, R.SCORE_PER_BULLET_DAMAGE) == (50.0, 10.0, 1.0)
    assert (R.BONUS_PER_BULLET_KILL, R.SCORE_PER_RAM_DAMAGE, R.BONUS_PER_RAM_KILL) == (0.2, 2.0, 0.3)


@pytest.mark.parametrize("current,target,expected", [
    (0.0, 0.0, 0.0), (0.0, 0.5, 0.5), (0.0, 2.0, 1.0), (0.0, 9.0, 1.0), (0.0, -2.0, -1.0), (0.0, -9.0, -1.0),
    (4.0, 4.5, 4.5), (7.5, 9.0, 8.0), (8.0, 9.0, 8.0), (-7.5, -9.0, -8.0),
    (8.0, 7.0, 7.0), (8.0, 5.0, 6.0), (7.0, 4.0, 5.0), (-8.0, -5.0, -6.0),
    (1.0, -8.0, -0.5), (0.5, -8.0, -0.75), (-1.0, 8.0, 0.5), (-0.5, 8.0, 0.75), (2.0, -1.0, 0.0),
    (8.0, 0.0, 0.0), (8.0, -8.0, 3.0),  # official quirks: a 0 target stops at once; crossing 0 from v gives v/2 - 1
])
def test_speed_accelerates_by_1_decelerates_by_2_max_8(current, target, expected):
    """rules/math.kt calcNewBotSpeed (cases from server/src/test/kotlin/rules/mathTest.kt; the last two are what
    the official code computes, unlike classic Robocode)."""
    assert R.calc_new_bot_speed(current, target) == expected


def test_bullet_speed_damage_and_gun_heat_formulas():
    """rules/math.kt: speed 20 - 3p; damage 4p + 2 max(p - 1, 0); heat 1 + p/5 (physics.md)."""
    for power, speed, damage, heat in ((0.1, 19.7, 0.4, 1.02), (1.0, 17.0, 4.0, 1.2), (2.0, 14.0, 10.0, 1.4),
                                       (3.0, 11.0, 16.0, 1.6)):
        assert R.calc_bullet_speed(power) == pytest.approx(speed)
        assert R.calc_bullet_damage(power) == pytest.approx(damage)
        assert R.calc_gun_heat(power) == pytest.approx(heat)


def test_wall_damage_is_half_speed_minus_one():
    """rules/math.kt calcWallDamage: max(|v|/2 - 1, 0) (physics.md)."""
    assert [R.calc_wall_damage(v) for v in (0.0, 1.0, 2.0, 5.0, -8.0, 12.0)] == [0.0, 0.0, 0.0, 1.5, 3.0, 3.0]


# --- movement and turning (TurnProcessor.executeBotIntent) --------------------------------------------------------

def test_bot_speeds_up_by_1_per_turn_and_moves_by_its_speed():
    """Acceleration 1 up to 8, braking 2 (rules.kt); the bot moves speed units along its direction each turn."""
    e = _engine({1: (100, 300, 0), 2: (700, 300, 180)})
    e.new_round()
    turns = _play(e, {1: Intent(target_speed=8)}, 9) + _play(e, {1: Intent(target_speed=5)}, 2)
    assert [t.bot_states[1]["speed"] for t in turns] == [1, 2, 3, 4, 5, 6, 7, 8, 8, 6, 5]
    assert turns[-1].bot_states[1]["x"] == pytest.approx(100 + 36 + 8 + 6 + 5)
    assert turns[-1].bot_states[1]["y"] == pytest.approx(300)


def test_body_turn_rate_is_10_minus_three_quarters_of_speed():
    """rules/math.kt calcMaxTurnRate 10 - 0.75|v|, with the speed of this turn (speed is set before turning)."""
    e = _engine({1: (400, 300, 90), 2: (700, 100, 180)})
    e.new_round()
    first = e.step({1: Intent(target_speed=8, turn_rate=30)})
    assert first.bot_states[1]["turnRate"] == 9.25  # new speed 1
    fast = _play(e, {}, 8)[-1]
    assert fast.bot_states[1]["speed"] == 8 and fast.bot_states[1]["turnRate"] == 4.0
    still = _engine({1: (400, 300, 90), 2: (700, 100, 180)})
    still.new_round()
    assert still.step({1: Intent(turn_rate=-30)}).bot_states[1]["turnRate"] == -10.0


def test_gun_turns_20_and_radar_45_on_top_of_the_body():
    """rules.kt MAX_GUN_TURN_RATE 20, MAX_RADAR_TURN_RATE 45; the gun rides on the body and the radar on the gun."""
    e = _engine({1: (400, 300, 10), 2: (700, 100, 180)})
    e.new_round()
    s = e.step({1: Intent(turn_rate=5, gun_turn_rate=50, radar_turn_rate=-100)}).bot_states[1]
    assert (s["turnRate"], s["gunTurnRate"], s["radarTurnRate"]) == (5, 20, -45)
    assert (s["direction"], s["gunDirection"]) == (15, 35)
    assert s["radarDirection"] == pytest.approx(10 + 5 + 20 - 45 + 360) and s["radarSweep"] == -20


@pytest.mark.parametrize("flags,gun,radar", [
    ({}, 5 + 20, 5 + 20 + 45),
    ({"adjust_gun_for_body_turn": True}, 20, 20 + 45),
    ({"adjust_radar_for_body_turn": True}, 25, 20 + 45),
    ({"adjust_radar_for_gun_turn": True}, 25, 5 + 45),
    ({"adjust_gun_for_body_turn": True, "adjust_radar_for_gun_turn": True}, 20, 5 + 45),  # official compat rule
    ({"adjust_gun_for_body_turn": True, "adjust_radar_for_gun_turn": True, "adjust_radar_for_body_turn": True},
     20, 45),
])
def test_adjust_flags_decouple_gun_and_radar(flags, gun, radar):
    """TurnProcessor.updateBotTurnRatesAndDirections: adjustGunForBodyTurn, adjustRadarForGunTurn (which, with
    adjustGunForBodyTurn, keeps the radar on the body: "orig. Robocode compatibility"), adjustRadarForBodyTurn."""
    e = _engine({1: (400, 300, 0), 2: (700, 100, 180)})
    e.new_round()
    s = e.step({1: Intent(turn_rate=5, gun_turn_rate=20, radar_turn_rate=45, **flags)}).bot_states[1]
    assert (s["gunDirection"], s["radarDirection"], s["radarSweep"]) == (gun, radar, radar)


# --- guns and bullets (GunEngine, CollisionDetector) ------------------------------------------------------------

def _fire_once(e: Engine, bot_id: int, power: float) -> Turn:
    turn = _until(e, {bot_id: Intent(firepower=power)}, lambda t: _events(t, bot_id, "BulletFiredEvent"))
    e.step({bot_id: Intent(firepower=0)})
    return turn


def test_gun_starts_at_heat_3_cools_by_rate_and_fires_only_cold():
    """rules.kt INITIAL_GUN_HEAT 3 and gunCoolingRate 0.1 per turn; GunEngine fires only at heat 0, then heat
    1 + p/5 and energy - p; the bullet leaves from where the bot stood at the start of the turn."""
    e = _engine({1: (100, 300, 0), 2: (600, 300, 90)})
    first = e.new_round()
    assert first.bot_states[1]["gunHeat"] == pytest.approx(2.9)
    heats = [first.bot_states[1]["gunHeat"]]
    turn = e.step({1: Intent(firepower=2)})
    while not _events(turn, 1, "BulletFiredEvent"):
        heats.append(turn.bot_states[1]["gunHeat"])
        turn = e.step({})
    assert heats[-1] == 0.0 and all(h > 0 for h in heats[:-1])
    assert all(a - b == pytest.approx(0.1) for a, b in zip(heats, heats[1:]))
    fired = _events(turn, 1, "BulletFiredEvent")[0]["bullet"]
    assert (fired["x"], fired["y"], fired["power"], fired["direction"], fired["ownerId"]) == (100, 300, 2, 0, 1)
    assert turn.bot_states[1]["gunHeat"] == pytest.approx(1.4) and turn.bot_states[1]["energy"] == 98
    assert turn.bullets[0]["x"] == pytest.approx(100 + 14)  # moved one tick at 20 - 3p in its first turn


def test_firepower_above_3_fires_3_but_costs_what_was_asked():
    """GunEngine.fireBullet: power = min(firepower, 3) but energy -= firepower (official); below 0.1 never fires."""
    e = _engine({1: (100, 300, 0), 2: (600, 300, 90)})
    e.new_round()
    turn = _fire_once(e, 1, 5.0)
    assert _events(turn, 1, "BulletFiredEvent")[0]["bullet"]["power"] == 3
    assert turn.bot_states[1]["energy"] == 95
    weak = _engine({1: (100, 300, 0), 2: (600, 300, 90)})
    weak.new_round()
    assert not any(_events(t, 1, "BulletFiredEvent") for t in _play(weak, {1: Intent(firepower=0.09)}, 40))


def test_gun_needs_more_energy_than_the_firepower():
    """GunEngine.checkIfGunMustFire: fires only if energy > firepower."""
    e = _engine({1: (100, 300, 0), 2: (600, 300, 90)})
    e.new_round()
    _bot(e, 1).energy = 2.0
    assert not any(_events(t, 1, "BulletFiredEvent") for t in _play(e, {1: Intent(firepower=2.0)}, 40))


def test_bullet_hit_takes_4p_plus_2p_minus_1_and_gives_3p_back():
    """rules/math.kt calcBulletDamage (16 at power 3) and BULLET_HIT_ENERGY_GAIN_FACTOR 3; the hit test is the
    line from the bullet's point to its next one against the bot's circle of radius 18 (CollisionDetector)."""
    e = _engine({1: (100, 300, 0), 2: (400, 300, 90)})
    e.new_round()
    _fire_once(e, 1, 3.0)
    turn = _until(e, {}, lambda t: _events(t, 2, "BulletHitBotEvent"))
    hit = _events(turn, 2, "BulletHitBotEvent")[0]
    assert hit == _events(turn, 1, "BulletHitBotEvent")[0]  # shooter and victim get the same event
    assert (hit["victimId"], hit["damage"], hit["energy"]) == (2, 16, 84)
    assert 400 - 18 - 11 <= hit["bullet"]["x"] < 400 - 18  # hit a turn early: its next point is inside the circle
    assert turn.bot_states[2]["energy"] == 84 and turn.bot_states[1]["energy"] == 100 - 3 + 9
    assert turn.bullets == []


def test_bullet_is_gone_at_the_wall():
    """CollisionDetector.checkAndHandleBulletWallCollisions: a bullet whose point is at or past a wall is removed
    (BulletHitWallEvent to its owner)."""
    e = _engine({1: (100, 300, 180), 2: (600, 300, 90)})
    e.new_round()
    _fire_once(e, 1, 3.0)
    turn = _until(e, {}, lambda t: _events(t, 1, "BulletHitWallEvent"))
    assert _events(turn, 1, "BulletHitWallEvent")[0]["bullet"]["x"] <= 0 and turn.bullets == []
    assert turn.observer_events[0]["type"] == "BulletHitWallEvent"


def test_bullets_that_cross_destroy_each_other():
    """CollisionDetector: two bullet lines that intersect: BulletHitBulletEvent to both owners, one to observers,
    no damage."""
    e = _engine({1: (100, 100, 45), 2: (300, 100, 135)})
    e.new_round()
    turn = _until(e, {1: Intent(firepower=1), 2: Intent(firepower=1)}, lambda t: _events(t, 1, "BulletFiredEvent"))
    assert _events(turn, 2, "BulletFiredEvent")
    e.step({1: Intent(firepower=0), 2: Intent(firepower=0)})
    turn = _until(e, {}, lambda t: _events(t, 1, "BulletHitBulletEvent"))
    mine, theirs = _events(turn, 1, "BulletHitBulletEvent")[0], _events(turn, 2, "BulletHitBulletEvent")[0]
    assert mine["bullet"] == theirs["hitBullet"] and mine["hitBullet"] == theirs["bullet"]
    assert [ev["type"] for ev in turn.observer_events] == ["BulletHitBulletEvent"]
    assert turn.bullets == [] and turn.bot_states[1]["energy"] == turn.bot_states[2]["energy"] == 99


def test_fire_assist_aims_at_last_turns_scan_when_gun_and_radar_agree():
    """GunEngine.fireBullet: with fireAssist (on by default) and gun direction == radar direction, the bullet
    goes to where the radar saw a bot last turn; without it, along the gun."""
    for assist in (True, False):
        e = _engine({1: (100, 100, 0), 2: (100 + 200 * math.cos(math.radians(95)),
                                          100 + 200 * math.sin(math.radians(95)), 0)})
        e.new_round()
        _play(e, {1: Intent(gun_turn_rate=20, fire_assist=assist)}, 5)  # gun (radar riding on it) at 100°
        turn = _until(e, {1: Intent(gun_turn_rate=0.001, firepower=1)}, lambda t: _events(t, 1, "BulletFiredEvent"))
        direction = _events(turn, 1, "BulletFiredEvent")[0]["bullet"]["direction"]
        assert direction == (pytest.approx(95.0) if assist else pytest.approx(100.0, abs=0.1))


# --- bots against walls and bots (CollisionDetector) -----------------------------------------------------------

def test_bot_hitting_a_wall_is_stopped_kept_inside_and_damaged():
    """checkAndHandleBotWallCollisions: damage max(|v|/2 - 1, 0) (3 at speed 8), speed 0, circle kept inside;
    no event nor damage on the turn after one (official)."""
    e = _engine({1: (60, 300, 180), 2: (600, 300, 90)})
    e.new_round()
    turns = _play(e, {1: Intent(target_speed=8)}, 12)
    hits = [i for i, t in enumerate(turns) if _events(t, 1, "BotHitWallEvent")]
    assert hits[:2] == [8, 10]  # turn 10 at speed 8, then every other turn while pushing on
    hit = turns[8].bot_states[1]
    assert (hit["x"], hit["speed"], hit["energy"]) == (18, 0, 100 - 3.0)  # 8/2 - 1
    assert _events(turns[8], 1, "BotHitWallEvent")[0]["victimId"] == 1
    assert turns[9].bot_states[1]["x"] == 18 and not _events(turns[9], 1, "BotHitWallEvent")


def test_bot_driving_into_another_rams_it():
    """handleBotHitBot: 0.6 damage to each, the rammer (moving toward the other) is stopped and both go back to
    last turn's place; ram score 2 per damage point (rules.kt SCORE_PER_RAM_DAMAGE)."""
    e = _engine({1: (100, 300, 0), 2: (160, 300, 90)})
    e.new_round()
    turn = _until(e, {1: Intent(target_speed=8)}, lambda t: _events(t, 1, "BotHitBotEvent"))
    mine, theirs = _events(turn, 1, "BotHitBotEvent")[0], _events(turn, 2, "BotHitBotEvent")[0]
    assert (mine["botId"], mine["victimId"], mine["rammed"], mine["energy"], mine["x"]) == (1, 2, True, 99.4, 160)
    assert (theirs["botId"], theirs["victimId"], theirs["rammed"]) == (2, 1, False)
    me = turn.bot_states[1]
    assert me["speed"] == 0 and me["x"] == 100 + 21 and me["energy"] == pytest.approx(99.4)
    assert [r["ramDamage"] for r in e.round_results() if r["id"] == 1] == [1]  # 2 x 0.6, rounded


def test_all_collisions_of_a_turn_are_found_before_any_is_applied():
    """CollisionDetector (detect, then apply): a bot that touches two others in one turn rams both, even though
    handling the first collision moves it back."""
    e = _engine({1: (100, 300, 0), 2: (150, 320, 90), 3: (150, 280, 90)})
    e.new_round()
    turn = _until(e, {1: Intent(target_speed=8)}, lambda t: _events(t, 1, "BotHitBotEvent"))
    assert [(ev["victimId"], ev["rammed"]) for ev in _events(turn, 1, "BotHitBotEvent")] == [(2, True), (3, True)]
    assert turn.bot_states[1]["energy"] == pytest.approx(100 - 2 * 0.6)
    assert [r["ramDamage"] for r in e.round_results() if r["id"] == 1] == [2]  # 2 x 2 x 0.6


# --- radar (TurnProcessor.checkAndHandleScans) -----------------------------------------------------------------

def _at(x: float, y: float, bearing: float, distance: float) -> tuple[float, float, float]:
    return (x + distance * math.cos(math.radians(bearing)), y + distance * math.sin(math.radians(bearing)), 0.0)


def test_radar_scans_the_arc_it_swept_this_turn():
    """The scan arc runs from the radar's last direction to its new one; a bot whose circle touches it is scanned
    (ScannedBotEvent: scannedByBotId, scannedBotId, energy, x, y, direction, speed)."""
    e = _engine({1: (100, 300, 0), 2: _at(100, 300, 30, 300), 3: _at(100, 300, 80, 200)})
    e.new_round()
    first, second = _play(e, {1: Intent(radar_turn_rate=45)}, 2)
    scan = _events(first, 1, "ScannedBotEvent")
    assert [s["scannedBotId"] for s in scan] == [2]
    assert scan[0] == {"type": "ScannedBotEvent", "turnNumber": 2, "scannedByBotId": 1, "scannedBotId": 2,
                       "energy": 100.0, "x": first.bot_states[2]["x"], "y": first.bot_states[2]["y"],
                       "direction": 0.0, "speed": 0.0}
    assert [s["scannedBotId"] for s in _events(second, 1, "ScannedBotEvent")] == [3]


def test_radar_reaches_1200_plus_the_bots_radius():
    """rules.kt RADAR_RADIUS 1200: a bot is scanned while its circle (radius 18) is within 1218 in the arc."""
    e = _engine({1: (100, 500, 0), 2: _at(100, 500, 20, 1210), 3: _at(100, 500, 35, 1225)},
                arena_width=2000, arena_height=1400)
    e.new_round()
    assert [s["scannedBotId"] for s in _events(e.step({1: Intent(radar_turn_rate=45)}), 1, "ScannedBotEvent")] == [2]


def test_still_bot_scans_only_when_rescanning():
    """isScanningOrMoving: no scan without movement unless rescan; a zero sweep scans along one line."""
    e = _engine({1: (100, 300, 0), 2: (400, 300, 0), 3: _at(100, 300, 30, 300)})
    e.new_round()
    assert not _events(e.step({}), 1, "ScannedBotEvent")
    assert [s["scannedBotId"] for s in _events(e.step({1: Intent(rescan=True)}), 1, "ScannedBotEvent")] == [2]


# --- energy, inactivity, death and rounds ------------------------------------------------------------------------

def test_inactivity_costs_0_1_per_turn_after_max_inactivity_turns():
    """TurnProcessor: when no bot was hit by a bullet for more than maxInactivityTurns, every bot loses 0.1."""
    e = _engine({1: (100, 300, 0), 2: (600, 300, 90)}, max_inactivity_turns=10)
    turns = [e.new_round()] + _play(e, {}, 12)
    assert [t.bot_states[1]["energy"] for t in turns] == pytest.approx([100.0] * 11 + [99.9, 99.8])


def test_zero_energy_disables_but_does_not_kill():
    """model/IBot.kt: energy 0 (within 1e-6) is alive but disabled: it cannot move or fire; dead only below 0.
    A round where every bot left is disabled and no bullet flies ends as a draw (TurnProcessor.isRoundOver)."""
    e = _engine({1: (100, 300, 0), 2: (600, 300, 90)})
    e.new_round()
    _bot(e, 2).energy = 0.0
    turns = _play(e, {2: Intent(target_speed=8, turn_rate=10, firepower=1)}, 40)
    assert all(t.bot_states[2]["x"] == 600 and t.bot_states[2]["direction"] == 90 for t in turns)
    assert not any(_events(t, 2, "BulletFiredEvent") or t.observer_events for t in turns)
    assert turns[-1].bot_states[1]["enemyCount"] == 1 and not turns[-1].round_ended
    _bot(e, 1).energy = 0.0
    draw = e.step({})
    assert draw.round_ended and not draw.observer_events


def test_death_is_told_to_every_bot_and_ends_the_round():
    """checkAndHandleDefeatedBots: BotDeathEvent to every bot of the turn (the victim's API turns it into a
    DeathEvent); one bot left ends the round, WonRoundEvent to the winner; the game ends after numberOfRounds.
    The killing shot scores only the energy the victim had left (CollisionDetector.applyBulletHitResults: capped),
    the kill bonus is 20% of that (rules.kt BONUS_PER_BULLET_KILL)."""
    e = _engine({1: (100, 300, 0), 2: (400, 300, 90)}, number_of_rounds=1)
    e.new_round()
    _bot(e, 2).energy = 10.0
    _fire_once(e, 1, 3.0)
    turn = _until(e, {}, lambda t: t.round_ended)
    hit = _events(turn, 2, "BulletHitBotEvent")[0]
    assert (hit["damage"], hit["energy"]) == (16, -6)
    assert _events(turn, 1, "BotDeathEvent") == _events(turn, 2, "BotDeathEvent") == [
        {"type": "BotDeathEvent", "turnNumber": turn.turn_number, "victimId": 2}]
    assert _events(turn, 1, "WonRoundEvent") and not _events(turn, 2, "WonRoundEvent")
    assert turn.bot_states[2]["energy"] == 0 and turn.bot_states[1]["enemyCount"] == 0 and turn.game_ended
    with pytest.raises(RuntimeError):
        e.new_round()
    winner, loser = e.round_results()
    assert (winner["id"], winner["rank"], loser["rank"]) == (1, 1, 2)
    assert (winner["survival"], winner["lastSurvivorBonus"], winner["bulletDamage"]) == (50, 10, 10)
    assert (winner["bulletKillBonus"], winner["totalScore"]) == (2, 72)


def test_ram_kill_bonus_is_30_percent_of_all_damage_dealt_to_the_victim():
    """ScoreTracker.calculateScore: ram kill bonus 0.3 x (bullet damage + 0.6 per ram) dealt to the killed bot."""
    e = _engine({1: (100, 300, 0), 2: (250, 300, 90)}, number_of_rounds=1)
    e.new_round()
    _fire_once(e, 1, 3.0)
    _until(e, {}, lambda t: _events(t, 2, "BulletHitBotEvent"))
    _bot(e, 2).energy = 0.3
    turn = _until(e, {1: Intent(target_speed=8)}, lambda t: t.round_ended)
    assert _events(turn, 1, "BotHitBotEvent")[0]["rammed"]
    me = e.round_results()[0]
    assert (me["id"], me["ramDamage"], me["ramKillBonus"], me["bulletKillBonus"]) == (1, 1, 5, 0)  # 0.3 x 16.6


def test_survival_is_50_per_death_and_the_last_survivor_gets_10_per_opponent():
    """score/ScoreTracker.registerDeaths (latest, "Classic" scoring; scoring.md): every bot alive scores 50 per bot
    that died, deaths of one turn counted one by one; the one bot left gets 10 per opponent; a draw (the last bots
    dying together) gives no last survivor bonus (ScoringCompatibilityTest)."""
    tracker = _ScoreTracker([1, 2, 3])
    tracker.deaths([2, 3])
    scores = {s["id"]: s for s in tracker.scores()}
    assert (scores[1]["survival"], scores[1]["lastSurvivorBonus"], scores[2]["survival"]) == (100, 20, 0)
    tracker = _ScoreTracker([1, 2, 3])
    tracker.deaths([3])
    tracker.deaths([3])  # a death counts once
    tracker.deaths([1, 2])
    scores = {s["id"]: s for s in tracker.scores()}
    assert [scores[i]["survival"] for i in (1, 2, 3)] == [50, 50, 0]
    assert [scores[i]["lastSurvivorBonus"] for i in (1, 2, 3)] == [0, 0, 0]


def test_ranks_are_shared_by_equal_totals():
    """score/RankDecorator: shared placement (1, 1, 3); kept as official: leaders with a total of exactly 0 get 0."""
    scores = [{"bulletDamage": t, "bulletKillBonus": 0.0, "ramDamage": 0.0, "ramKillBonus": 0.0, "survival": 0.0,
               "lastSurvivorBonus": 0.0} for t in (100.0, 100.0, 50.0, 0.0)]
    _update_ranks(scores)
    assert [s["rank"] for s in scores] == [1, 1, 3, 4]
    zeros = scores[3:]
    _update_ranks(zeros)
    assert zeros[0]["rank"] == 0


# --- whole games -----------------------------------------------------------------------------------------------

def _scripted(turn: Turn) -> dict[int, Intent]:
    """Spinning guns (radar riding on them, so fire assist aims), weaving bodies, heavy fire."""
    out = {}
    for bot_id in turn.bot_states:
        phase = math.sin(turn.turn_number / (7.0 + bot_id) + bot_id)
        out[bot_id] = Intent(target_speed=8.0 if phase > 0 else -8.0, turn_rate=6.0 * phase,
                             gun_turn_rate=20.0 if bot_id % 2 else -20.0, firepower=3.0)
    return out


def _play_game(engine: Engine) -> tuple[list[Turn], list[list[dict]]]:
    turns: list[Turn] = []
    per_round = []
    while not engine.game_ended:
        turn = engine.new_round()
        turns.append(turn)
        while not turn.round_ended:
            turn = engine.step(_scripted(turn))
            turns.append(turn)
        per_round.append(engine.round_results())
    return turns, per_round


def test_full_game_plays_every_round_and_results_add_up():
    """A scripted 3-bot, 4-round game: every round ends, firstPlaces sum to the rounds, and the game's results are
    the rounds' sums (survival, last survivor bonus) with ranks following the totals (score/*)."""
    parts = [Participant(i, f"bot{i}") for i in (1, 2, 3)]
    engine = Engine(Setup(number_of_rounds=4), parts, seed=3)
    turns, per_round = _play_game(engine)
    assert [t.round_number for t in turns if t.round_ended] == [1, 2, 3, 4]
    results = engine.results()
    assert sum(r["firstPlaces"] for r in results) == 4
    assert sum(r["firstPlaces"] + r["secondPlaces"] + r["thirdPlaces"] for r in results) == 12
    for row in results:
        rounds = [r for rs in per_round for r in rs if r["id"] == row["id"]]
        assert row["survival"] == sum(r["survival"] for r in rounds)
        assert row["lastSurvivorBonus"] == sum(r["lastSurvivorBonus"] for r in rounds)
        parts_sum = sum(row[k] for k in ("survival", "lastSurvivorBonus", "bulletDamage", "bulletKillBonus",
                                         "ramDamage", "ramKillBonus"))
        assert abs(row["totalScore"] - parts_sum) <= 3
    totals = [r["totalScore"] for r in results]
    assert totals == sorted(totals, reverse=True) and results[0]["rank"] == 1
    assert sum(len(_events(t, b, "WonRoundEvent")) for t in turns for b in t.events) == 4
    kinds = {e["type"] for t in turns for e in t.observer_events}
    assert {"BulletFiredEvent", "BulletHitBotEvent", "ScannedBotEvent", "BotDeathEvent"} <= kinds


def test_same_seed_same_game_other_seed_other_start():
    """Determinism: one random.Random(seed) per engine; same seed and intents give identical turns."""
    parts = [Participant(i, f"bot{i}") for i in (1, 2)]
    a, _ = _play_game(Engine(Setup(number_of_rounds=2), parts, seed=11))
    b, _ = _play_game(Engine(Setup(number_of_rounds=2), parts, seed=11))
    assert a == b
    other = Engine(Setup(number_of_rounds=2), parts, seed=12).new_round()
    assert other.bot_states != a[0].bot_states


def test_start_positions_are_inside_and_apart():
    """ModelUpdater.randomBotPosition: one bot per 50x50 cell, its circle inside the cell, random direction."""
    parts = [Participant(i, f"bot{i}") for i in range(1, 10)]
    for seed in range(40):
        states = Engine(Setup(), parts, seed=seed).new_round().bot_states
        points = [(s["x"], s["y"]) for s in states.values()]
        assert all(18 <= x % 50 <= 32 and 18 <= y % 50 <= 32 for x, y in points)  # circle inside its cell
        assert len({(x // 50, y // 50) for x, y in points}) == len(points)  # one bot per cell
        assert all(math.dist(p, q) >= 36 for i, p in enumerate(points) for q in points[i + 1:])
        assert all(s["direction"] == s["gunDirection"] == s["radarDirection"] for s in states.values())


def test_engine_refuses_misuse():
    """Clear errors: stepping a finished round, unknown intent ids, an arena too small, a bad setup."""
    e = _engine({1: (100, 300, 0), 2: (600, 300, 90)})
    with pytest.raises(RuntimeError):
        e.step({})
    e.new_round()
    with pytest.raises(ValueError):
        e.step({7: Intent()})
    with pytest.raises(ValueError):
        Engine(Setup(arena_width=400, arena_height=400), [Participant(i, "x") for i in range(1, 66)])
    with pytest.raises(ValueError):
        Setup(gun_cooling_rate=5.0)


# --- schema ----------------------------------------------------------------------------------------------------

def test_intent_from_schema_reads_camel_case_and_refuses_bad_values():
    """`bot-intent` wire keys are camelCase; null/absent keeps the standing order (model/BotIntent.update)."""
    intent = Intent.from_schema({"type": "BotIntent", "targetSpeed": 5, "turnRate": -3.5, "rescan": True,
                                 "firepower": None, "bodyColor": "#fff"})
    assert intent == Intent(target_speed=5.0, turn_rate=-3.5, rescan=True)
    for bad in ({"firepower": "3"}, {"firepower": float("nan")}, {"rescan": 1}, {"targetSpeed": True}, [1]):
        with pytest.raises(ValueError):
            Intent.from_schema(bad)  # type: ignore[arg-type]
    e = _engine({1: (100, 300, 0), 2: (600, 300, 90)})
    e.new_round()
    e.step({1: Intent(target_speed=3)})
    assert _play(e, {1: Intent(turn_rate=1)}, 3)[-1].bot_states[1]["speed"] == 3


def test_setup_to_schema_is_the_game_setup_map():
    """The official `game-setup` schema's camelCase fields."""
    msg = Setup().to_schema()
    assert (msg["gameType"], msg["arenaWidth"], msg["arenaHeight"], msg["numberOfRounds"]) == ("classic", 800, 600, 10)
    assert (msg["gunCoolingRate"], msg["maxInactivityTurns"], msg["turnTimeout"]) == (0.1, 450, 30_000)
    assert msg["isArenaWidthLocked"] is False and msg["defaultTurnsPerSecond"] == 30


def test_scans_agree_with_the_official_sector_test():
    """The engine's scan (with its cheap misses) says what model/math.kt isCircleIntersectingCircleSector (or the
    line test for a zero sweep) says, over random scanners, targets and sweeps."""
    rng = __import__("random").Random(5)
    for case in range(400):
        x, y, heading = rng.uniform(1300, 1700), rng.uniform(1300, 1700), rng.uniform(0, 360)
        sweep = rng.choice([0.0, rng.uniform(-75, 75)])
        bearing = heading + max(-45.0, min(45.0, sweep)) * rng.uniform(-0.3, 1.3) + rng.uniform(-8, 8)
        target = _at(x, y, bearing, rng.uniform(36, 1240))
        e = _engine({1: (x, y, heading), 2: target}, seed=case, arena_width=3000, arena_height=3000)
        e.new_round()
        turn = e.step({1: Intent(radar_turn_rate=sweep, rescan=True, adjust_radar_for_gun_turn=True,
                                 adjust_radar_for_body_turn=True, adjust_gun_for_body_turn=True)})
        s, t = turn.bot_states[1], turn.bot_states[2]
        assert s["radarSweep"] == max(-45.0, min(45.0, sweep))
        end = s["radarDirection"]
        start, end = ((end - s["radarSweep"]) % 360, end) if s["radarSweep"] >= 0 else (end, (end - s["radarSweep"]) % 360)
        if start == end:
            a = math.radians(start)
            expected = R.is_line_intersecting_circle(s["x"], s["y"], s["x"] + math.cos(a) * 1200,
                                                     s["y"] + math.sin(a) * 1200, t["x"], t["y"], 18.0)
        else:
            expected = R.is_circle_intersecting_sector(t["x"], t["y"], 18.0, s["x"], s["y"], 1200.0, start, end)
        assert bool(_events(turn, 1, "ScannedBotEvent")) == expected, case


def test_a_bad_intent_is_refused_whole_and_changes_nothing():
    """step() checks every intent before applying any: a non-finite number is a ValueError and no order changes."""
    e = _engine({1: (100, 300, 0), 2: (600, 300, 90)})
    e.new_round()
    with pytest.raises(ValueError):
        e.step({1: Intent(target_speed=8), 2: Intent(turn_rate=float("nan"))})
    assert e.turn_number == 1 and e.step({}).bot_states[1]["speed"] == 0


def test_turns_read_as_the_official_schema_and_bot_api_events():
    """Every tick, event, game setup and results row goes through the official Python bot API's own JSON reader
    (robocode_tank_royale, schema classes refuse missing fields) and event mapper, which turns a victim's
    BulletHitBotEvent into HitByBulletEvent and its BotDeathEvent into DeathEvent."""
    from types import SimpleNamespace

    from robocode_tank_royale.bot_api import events as api
    from robocode_tank_royale.bot_api.internal.json_util import from_json
    from robocode_tank_royale.bot_api.mapper.event_mapper import EventMapper

    parts = [Participant(i, f"bot{i}") for i in (1, 2, 3)]
    engine = Engine(Setup(number_of_rounds=1), parts, seed=4)
    turns, _ = _play_game(engine)
    seen: set[type] = set()
    for turn in turns:
        for bot_id, state in turn.bot_states.items():
            tick = from_json({"type": "TickEventForBot", "roundNumber": turn.round_number,
                              "turnNumber": turn.turn_number, "botState": state,
                              "bulletStates": [b for b in turn.bullets if b["ownerId"] == bot_id],
                              "events": turn.events[bot_id]})
            mapped = EventMapper.map_tick_event(tick, SimpleNamespace(my_id=bot_id))  # the mapper asks only my_id
            seen.update(type(e) for e in mapped.events)
        for event in turn.observer_events:
            assert type(from_json(event)).__name__ == event["type"]
    assert {api.HitByBulletEvent, api.BulletHitBotEvent, api.DeathEvent, api.BotDeathEvent, api.ScannedBotEvent,
            api.BulletFiredEvent, api.WonRoundEvent} <= seen
    from_json({"type": "GameSetup", **Setup().to_schema()})
    for row in engine.results():
        from_json({"type": "ResultsForObserver", **row})
    from_json({"type": "ResultsForBot", **engine.results_for_bot(1)})
