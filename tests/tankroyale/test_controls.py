"""The action's forms (TankControls) against the rules engine: what each order does in the game.

The default form aims the gun at an offset from the enemy's bearing, locks the radar on the enemy and
steers the body at an offset from broadside; the first form (aim=rate, radar=spin, move=rate) gives
turn rates. These are played on the engine through TankRoyale-v0, so the game's own turn limits,
gun-on-body and radar-on-gun rules decide what happens.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from actor.bots.tankroyale.brain import OBSERVATION, TankRewards
from actor.bots.tankroyale.env import ME, THEM, TankRoyaleEnv

AGE = OBSERVATION.index("scan_age")


def bearing_to_them(env: TankRoyaleEnv) -> tuple[float, float]:
    """(direction from us to the opponent, our gun's offset from it) in degrees, from the engine's state."""
    me, them = env.turn.bot_states[ME], env.turn.bot_states[THEM]
    bearing = math.degrees(math.atan2(them["y"] - me["y"], them["x"] - me["x"]))
    return bearing, (me["gunDirection"] - bearing + 180) % 360 - 180


def test_bearing_aim_holds_the_gun_on_a_still_target_at_the_offset_asked() -> None:
    env = TankRoyaleEnv(opponent="SittingDuck", still=True, max_turns=200, aim="bearing")
    env.reset(seed=3)
    for offset in (0.0, 12.0, -25.0):
        for _ in range(30):  # found by the radar, then at most 180 / 20 turns of gun travel
            env.step(np.array([0, 0, offset, 0], np.float32))
        assert bearing_to_them(env)[1] == pytest.approx(offset, abs=0.5)


def test_path_aim_points_every_action_at_a_still_target() -> None:
    env = TankRoyaleEnv(opponent="SittingDuck", still=True, max_turns=200, aim="path")
    env.reset(seed=3)
    for aim in (0.0, 30.0, -30.0):
        for _ in range(30):
            env.step(np.array([0, 0, aim, 0], np.float32))
        assert bearing_to_them(env)[1] == pytest.approx(0.0, abs=0.5)


def test_path_aim_spans_the_enemy_now_to_where_a_bullet_meets_it() -> None:
    env = TankRoyaleEnv(opponent="Walls", max_turns=400, aim="path")
    env.reset(seed=1)  # Walls crossing our line of fire at full speed at turn 97
    for _ in range(12):
        env.step(np.array([0, 0, 0, 0], np.float32))
    brain, me = env.brain, env.brain.me
    assert abs(brain.enemy.speed) == 8.0
    target = brain._target(me)
    goals = {aim: brain._aim_goal(me, target, aim, 1.5) for aim in (-30.0, 0.0, 30.0)}
    assert goals[-30.0] == pytest.approx(target, abs=1e-6)  # where the enemy is now
    assert goals[30.0] == pytest.approx(brain._lead(me, 1.5), abs=1e-6)  # linear targeting's point
    lead = (goals[30.0] - target + 180) % 360 - 180
    assert abs(lead) > 5, "a bullet's flight leads a crossing target"
    half = (goals[0.0] - target + 180) % 360 - 180
    assert 0.3 * abs(lead) < abs(half) < 0.7 * abs(lead) and half * lead > 0


def test_a_locked_radar_sees_the_enemy_every_turn_a_spinning_one_does_not() -> None:
    ages = {}
    for radar in ("lock", "spin"):
        env = TankRoyaleEnv(opponent="Walls", radar=radar, max_turns=400, repeat=1)
        env.reset(seed=5)
        seen = []
        for _ in range(200):
            obs, _, terminated, truncated, _ = env.step(np.array([8, 0, 0, 0], np.float32))
            seen.append((obs[AGE] + 1) * 50)  # turns since the last scan
            if terminated or truncated:
                break
        ages[radar] = seen[20:]  # after the first sweep found it
    assert max(ages["lock"]) == 0, "a locked radar rescans the moving enemy every turn"
    assert max(ages["spin"]) >= 4, "a spinning radar's scan is up to 8 turns old"


def test_move_bearing_zero_drives_broadside_to_the_enemy() -> None:
    env = TankRoyaleEnv(opponent="SittingDuck", max_turns=200)
    env.reset(seed=7)
    for _ in range(40):
        env.step(np.array([0, 0, 0, 0], np.float32))  # standing: the body turns freely
    bearing, _ = bearing_to_them(env)
    heading = env.turn.bot_states[ME]["direction"]
    assert abs((heading - bearing - 90 + 180) % 360 - 180) < 1.0
    env.step(np.array([0, 10, 0, 0], np.float32))  # +10: 90 degrees past broadside, i.e. facing away
    assert env.brain.orders(np.array([0, 10, 0, 0], np.float32)).turn_rate == pytest.approx(10.0)


def test_the_first_form_turns_the_gun_at_the_rate_asked_and_carries_it_on_the_body() -> None:
    env = TankRoyaleEnv(opponent="SittingDuck", aim="rate", radar="spin", move="rate", max_turns=50, repeat=1)
    env.reset(seed=1)
    before = env.turn.bot_states[ME]["gunDirection"]
    env.step(np.array([0, 5, 10, 0], np.float32))
    assert (env.turn.bot_states[ME]["gunDirection"] - before) % 360 == pytest.approx(15.0)  # 10 + the body's 5


def test_speed_ahead_drives_at_full_speed_unless_asked_to_slow_or_reverse() -> None:
    brain = TankRoyaleEnv(opponent="SittingDuck").brain
    speeds = [brain.orders(np.array([a, 0, 0, 0], np.float32)).target_speed for a in (0, 5, -2, -4, -8)]
    assert speeds == [8, 8, 4, 0, -8]
    env = TankRoyaleEnv(opponent="SittingDuck", max_turns=100)
    env.reset(seed=2)
    for _ in range(3):
        env.step(np.zeros(4, np.float32))  # 3 decisions of 8 turns each: up to speed and cruising
    assert env.turn.bot_states[ME]["speed"] == pytest.approx(8.0)


def test_the_fired_reward_charges_each_shot_its_power() -> None:
    from actor.bots.tankroyale.brain import TankRewards

    costs = {}
    for fired in (0.0, -0.1):
        env = TankRoyaleEnv(opponent="SittingDuck", still=True, max_turns=60, repeat=30,  # guns start hot: 30 turns
                            rewards=TankRewards(fired=fired))
        env.reset(seed=3)
        total = 0.0
        for _ in range(2):
            _, reward, *_, info = env.step(np.array([0, 0, 0, 2.0], np.float32))
            total += reward
        costs[fired] = (total, info["tally"]["shots"])
    (free, shots), (charged, same) = costs[0.0], costs[-0.1]
    assert shots == same >= 1 and charged == pytest.approx(free - 0.1 * 2.0 * shots)


def test_the_aim_reward_pays_shots_along_the_bearing_and_not_shots_off_it() -> None:
    from actor.bots.tankroyale.brain import TankRewards

    def paid(aim_offset: float, weight: float) -> tuple[float, int]:
        env = TankRoyaleEnv(opponent="SittingDuck", still=True, max_turns=60, repeat=30, aim="bearing",
                            rewards=TankRewards(aim=weight))
        env.reset(seed=3)
        total = 0.0
        for _ in range(2):
            _, reward, *_, info = env.step(np.array([0, 0, aim_offset, 1.0], np.float32))
            total += reward
        return total, info["tally"]["shots"]

    (on_free, shots), (on_paid, _) = paid(0.0, 0.0), paid(0.0, 1.0)
    (off_free, _), (off_paid, _) = paid(20.0, 0.0), paid(20.0, 1.0)
    assert shots >= 1 and on_paid == pytest.approx(on_free + shots, abs=0.2 * shots)
    assert off_paid == pytest.approx(off_free)


def test_the_hindsight_reward_grades_each_shot_when_its_wave_reaches_the_enemy() -> None:
    """Every shot is paid once, on the turn its wave reaches the enemy (not the turn it leaves): about its
    damage (4 at power 1) for a shot along the bearing of a still target, 0 for one 20 degrees off it."""
    from actor.bots.tankroyale.brain import TankRewards

    only = TankRewards(damage_dealt=0.0, damage_taken=0.0, kill=0.0, death=0.0, win=0.0, turn=0.0, hindsight=1.0)

    def play(offset: float) -> tuple[list[int], list[tuple[int, float]]]:
        env = TankRoyaleEnv(opponent="SittingDuck", still=True, max_turns=400, repeat=1, aim="bearing", rewards=only)
        env.reset(seed=3)
        fired, paid, shots = [], [], 0
        for _ in range(200):
            _, reward, terminated, truncated, info = env.step(np.array([0, 0, offset, 1.0], np.float32))
            if info["tally"]["shots"] > shots:
                fired.append(info["turn"])
                shots = info["tally"]["shots"]
            if reward:
                paid.append((info["turn"], reward))
            if terminated or truncated:
                break
        return fired, paid

    fired, paid = play(0.0)
    assert len(fired) >= 8 and len(paid) >= len(fired) - 2  # every shot but those still in flight at the end
    assert all(r == pytest.approx(4.0, abs=0.4) for _, r in paid)
    assert paid[0][0] - fired[0] >= 5  # a bullet's flight after the shot, at 17 units a turn
    fired, paid = play(20.0)
    assert len(fired) >= 8 and paid == []


def test_the_aim_reward_pays_a_shot_at_a_crossing_target_for_leading_it() -> None:
    """On Walls crossing at full speed a shot along the bearing misses; the reward pays the linear lead."""
    env = TankRoyaleEnv(opponent="Walls", max_turns=400, aim="path", rewards=TankRewards(aim=1.0))
    env.reset(seed=1)  # as above: Walls crossing our line of fire at full speed
    for _ in range(12):
        env.step(np.array([0, 0, 0, 0], np.float32))
    brain = env.brain
    lead, now = brain._lead(brain.me, 2.0), brain._target(brain.me)
    assert abs((lead - now + 180) % 360 - 180) > 5
    assert brain._aim_quality({"direction": lead, "power": 2.0}) == pytest.approx(1.0)
    assert brain._aim_quality({"direction": now, "power": 2.0}) == 0.0


# -- the guess-factor aim and the orbit move ---------------------------------------------------------------

def test_gf_aim_points_every_factor_at_a_target_that_never_moved() -> None:
    """The escape angle is the enemy's shown speed's: a bot that never moved cannot escape, so every guess
    factor is head-on (what made the path form reach SittingDuck from the first round)."""
    env = TankRoyaleEnv(opponent="SittingDuck", still=True, max_turns=200, aim="gf")
    env.reset(seed=3)
    for gf in (0.0, 30.0, -30.0):
        for _ in range(30):
            env.step(np.array([0, 0, gf, 0], np.float32))
        assert env.brain.escape_angle(2.0) == 0.0
        assert bearing_to_them(env)[1] == pytest.approx(0.0, abs=0.5)


def test_gf_aim_spans_the_escape_angle_the_way_the_enemy_moves() -> None:
    """Action a in [-30, 30] aims at guess factor (a / 30) ** 3: 0 head-on, +-30 the escape angle's edges, +1 the
    way the enemy moves around us."""
    env = TankRoyaleEnv(opponent="Walls", max_turns=400, aim="gf")
    env.reset(seed=1)  # Walls crossing our line of fire at full speed
    for _ in range(12):
        env.step(np.array([0, 0, 0, 0], np.float32))
    brain, me = env.brain, env.brain.me
    e = brain.enemy
    across = e.speed * math.sin(math.radians(e.direction) - math.atan2(e.y - me.y, e.x - me.x))
    assert abs(across) > 4 and brain.lateral == math.copysign(1.0, across)  # the way it moves around us
    target, mea = brain._target(me), brain.escape_angle(1.5)
    assert mea == pytest.approx(math.degrees(math.asin(8 / (20 - 3 * 1.5))))  # it has shown full speed
    goals = {gf: brain._aim_goal(me, target, gf, 1.5) for gf in (-30.0, 0.0, 15.0, 30.0)}
    off = {gf: (g - target + 180) % 360 - 180 for gf, g in goals.items()}
    assert off[0.0] == pytest.approx(0.0, abs=1e-6)  # 0: head-on
    assert off[30.0] == pytest.approx(brain.lateral * mea) and off[-30.0] == pytest.approx(-brain.lateral * mea)
    assert off[15.0] == pytest.approx(brain.lateral * mea / 8)  # the cube: fine about head-on
    brain.lateral = -brain.lateral  # had it been going the other way round us, +1 is the other side
    assert (brain._aim_goal(me, target, 30.0, 1.5) - target + 180) % 360 - 180 == pytest.approx(-off[30.0])
    brain.lateral = -brain.lateral
    lead = (brain._lead(me, 1.5) - target + 180) % 360 - 180  # linear targeting's point: a factor in (0, 1]
    assert 0.2 < lead * brain.lateral / mea <= 1.0


def _hit_rate_at(rule: str) -> float:
    """Hit rate of a still tank against Walls (a straight mover) firing power 2 at one guess factor rule."""
    env = TankRoyaleEnv(opponent="Walls", still=True, aim="gf", repeat=1, max_turns=600)
    shots = hits = 0
    for seed in range(4):
        env.reset(seed=seed)
        while True:
            b, gf = env.brain, {"head-on": 0.0, "reversal": -1.0}.get(rule, 0.0)
            if rule == "linear" and b.me is not None and b._target(b.me) is not None and b.top_speed > 0:
                t = b._target(b.me)
                gf = ((b._lead(b.me, 2.0) - t + 180) % 360 - 180) * b.lateral / b.escape_angle(2.0)
            aim = 30 * np.cbrt(max(-1.0, min(1.0, gf)))  # the action whose cube is that factor
            _, _, terminated, truncated, info = env.step(np.array([0, 0, aim, 2], np.float32))
            if terminated or truncated:
                break
        shots, hits = shots + info["tally"]["shots"], hits + info["tally"]["hits"]
    return hits / shots


def test_gf_aim_reaches_the_straight_line_lead_on_the_engine() -> None:
    linear, head_on, reversal = (_hit_rate_at(rule) for rule in ("linear", "head-on", "reversal"))
    assert linear > 0.5 and linear > head_on + 0.3 and reversal < 0.1, (linear, head_on, reversal)


@pytest.mark.parametrize("move", ["orbit", "bearing"])
def test_orbit_move_closes_in_ahead_and_in_reverse_alike(move: str) -> None:
    """With the turn action at -5 (45 degrees toward the enemy), orbit closes in whichever way the tank drives;
    bearing measures the offset from the heading, so driving in reverse backs off instead."""
    changes = {}
    for speed in (8.0, -8.0):
        env = TankRoyaleEnv(opponent="SittingDuck", max_turns=400, move=move, repeat=1)
        env.reset(seed=0)  # 380 apart, room to turn either way
        for _ in range(8):
            env.step(np.array([-4, 0, 0, 0], np.float32))  # find it, stopped
        me, them = env.turn.bot_states[ME], env.turn.bot_states[THEM]
        before = math.hypot(me["x"] - them["x"], me["y"] - them["y"])
        for _ in range(40):
            env.step(np.array([speed, -5, 0, 0], np.float32))
        me = env.turn.bot_states[ME]
        changes[speed] = math.hypot(me["x"] - them["x"], me["y"] - them["y"]) - before
    if move == "orbit":
        assert changes[8.0] < -100 and changes[-8.0] < -100, changes
    else:
        assert changes[8.0] < -100 and changes[-8.0] > 100, changes


# -- answering a shot: react, the duel numbers, speed = keep -------------------------------------------------

def test_react_ends_a_decision_on_the_turn_the_enemy_is_seen_to_fire() -> None:
    lengths: dict[bool, list[int]] = {}
    for react in (True, False):
        env = TankRoyaleEnv(opponent="Oscillator", aim="gf", react=react, max_turns=600)
        env.reset(seed=4)
        turn, lengths[react] = env.turn.turn_number, []
        for _ in range(40):
            _, _, terminated, truncated, info = env.step(np.array([8, 0, 0, 0], np.float32))  # we never fire
            if terminated or truncated:
                break
            lengths[react].append(info["turn"] - turn)
            if react and info["turn"] - turn < 8:  # cut short: the enemy's shot was seen on its last turn
                assert env.brain.shot_turn == info["turn"]
            turn = info["turn"]
    assert set(lengths[False]) == {8}
    assert sum(n < 8 for n in lengths[True]) >= 5, lengths[True]


def test_the_duel_numbers_show_the_enemys_shots_and_reversals() -> None:
    from actor.bots.tankroyale.brain import DUEL, OBSERVATION

    env = TankRoyaleEnv(opponent="Oscillator", observe="duel", repeat=1, max_turns=600)
    obs, _ = env.reset(seed=4)
    assert obs.shape == (len(OBSERVATION) + len(DUEL),)
    col = {name: len(OBSERVATION) + k for k, name in enumerate(DUEL)}
    shots = reversals = 0
    for _ in range(300):
        before = (env.brain.shot_turn, env.brain.reversal_turn)
        obs, _, terminated, truncated, _ = env.step(np.array([-4, 0, 0, 0], np.float32))  # stand still, never fire
        if terminated or truncated:
            break
        e, me = env.brain.enemy, env.brain.me
        across = e.speed * math.sin(math.radians(e.direction) - math.atan2(e.y - me.y, e.x - me.x))
        assert obs[col["enemy_lateral"]] == pytest.approx(across / 8, abs=1e-5)
        if env.brain.shot_turn != before[0]:  # a shot seen this turn: its age is 0, its power the energy it cost
            shots += 1
            assert obs[col["enemy_shot_age"]] == -1.0 and 0.1 <= (obs[col["enemy_shot_power"]] + 1) * 1.5 <= 3.0
        if env.brain.reversal_turn != before[1]:
            reversals += 1
            assert obs[col["enemy_reversal_age"]] == -1.0
    assert shots >= 5 and reversals >= 5


def test_the_trace_shows_the_enemys_speed_across_every_four_turns_back_to_28() -> None:
    """observe = trace: what StopAndGo did in the turns between two decisions, where one look a decision (the
    duel's enemy_lateral) aliases its period. Played with repeat 30, each observation's trace is checked
    against the enemy_lateral the engine showed turn by turn."""
    from actor.bots.tankroyale.brain import DUEL, OBSERVATION, TRACE

    env = TankRoyaleEnv(opponent="StopAndGo", observe="trace", repeat=30, max_turns=900)
    obs, _ = env.reset(seed=5)
    assert obs.shape == (len(OBSERVATION) + len(DUEL) + len(TRACE),)
    lateral, first = len(OBSERVATION) + DUEL.index("enemy_lateral"), len(OBSERVATION) + len(DUEL)
    seen: dict[int, float] = {}
    env.watch = lambda e: seen.__setitem__(e.turn.turn_number, float(e.obs[lateral]))
    checked, stopped = 0, set()
    for _ in range(25):
        obs, _, terminated, truncated, info = env.step(np.array([-4, 0, 0, 0], np.float32))  # stand, never fire
        if terminated or truncated:
            break
        now = info["turn"]
        for k in range(len(TRACE)):
            if now - 4 * k in seen:
                assert obs[first + k] == pytest.approx(seen[now - 4 * k], abs=1e-6), (now, k)
                stopped.add(abs(seen[now - 4 * k]) < 0.01)
                checked += 1
    assert checked >= 40 and stopped == {True, False}  # six decisions at least; seen both driving and stopped


@pytest.mark.parametrize("speed", ["keep", "flip", "ahead"])
def test_keep_turns_back_once_per_decision_where_ahead_reverses_for_good(speed: str) -> None:
    env = TankRoyaleEnv(opponent="SittingDuck", speed=speed, move="orbit", max_turns=400)
    env.reset(seed=0)
    env.step(np.array([8, 0, 0, 0], np.float32))
    env.step(np.array([8, 0, 0, 0], np.float32))  # going ahead at full speed
    signs = []
    for _ in range(3):  # "turn back" held three decisions
        env.step(np.array([-8, 0, 0, 0], np.float32))
        signs.append(math.copysign(1.0, env.turn.bot_states[ME]["speed"]))
    assert signs == ([-1.0, -1.0, -1.0] if speed == "ahead" else [-1.0, 1.0, -1.0])


def test_flip_is_full_speed_whatever_the_action() -> None:
    """The sign says which way and nothing else: a policy torn between the two ways never crawls."""
    env = TankRoyaleEnv(opponent="SittingDuck", speed="flip", move="orbit", max_turns=400)
    env.reset(seed=0)
    for a in (0.5, 3.0, 8.0, -0.5, -8.0, 0.0):
        env.step(np.array([a, 0, 0, 0], np.float32))
        assert abs(env.brain.orders(np.array([a, 0, 0, 0], np.float32)).target_speed) == 8.0


@pytest.mark.parametrize(("action", "turn_back_at"), [(-8.0, 0), (-4.0, 4), (-1.0, 7), (3.0, None)])
def test_time_turns_back_that_far_into_the_decision(action: float, turn_back_at: int | None) -> None:
    """speed = time: below 0 the action times a turn back within the decision (-8 at once, -4 half way), full
    speed either way; 0 and above goes on."""
    from actor.bots.tankroyale.brain import TankBrain, TankControls
    from actor.bots.tankroyale.opponents import Me

    brain = TankBrain(controls=TankControls(speed="time", repeat=8))
    brain.me = Me(400, 300, 100, 0, 0, 0, 8.0, 0)
    brain.decide()  # going ahead
    speeds = [brain.orders(np.array([action, 0, 0, 0], np.float32), held).target_speed for held in range(8)]
    expected = [8.0 if turn_back_at is None or h < turn_back_at else -8.0 for h in range(8)]
    assert speeds == expected


@pytest.mark.parametrize(("action", "odds"), [(-8.0, 1.0), (0.0, 0.5), (4.0, 0.25), (8.0, 0.0)])
def test_mix_turns_back_at_the_odds_the_action_names(action: float, odds: float) -> None:
    """speed = mix: the action is the odds of turning back, (8 - action) / 16, drawn once a decision by the
    controls (the ends are pure: -8 always, +8 never); full speed either way, held through the decision."""
    from actor.bots.tankroyale.brain import TankBrain, TankControls
    from actor.bots.tankroyale.opponents import Me

    brain = TankBrain(controls=TankControls(speed="mix", repeat=8), seed=3)
    back = 0
    for _ in range(2000):
        brain.me = Me(400, 300, 100, 0, 0, 0, 8.0, 0)
        brain.decide()
        going = brain.going
        speeds = {brain.orders(np.array([action, 0, 0, 0], np.float32), held).target_speed for held in range(8)}
        assert len(speeds) == 1 and abs(next(iter(speeds))) == 8.0
        back += next(iter(speeds)) != 8.0 * going
    assert abs(back / 2000 - odds) < 0.04


def test_mix_draws_repeat_with_the_round_seed() -> None:
    """The env seeds the draws per episode: the same seed plays the same round again, a deterministic policy's
    mixed strategy included, however many rounds came between."""
    env = TankRoyaleEnv(opponent="SittingDuck", speed="mix", move="orbit", max_turns=300)

    def round_speeds(seed: int) -> list[float]:
        env.reset(seed=seed)
        out = []
        for _ in range(30):
            env.step(np.array([0, 0, 0, 0], np.float32))
            out.append(env.turn.bot_states[ME]["speed"])
        return out
    first = round_speeds(4)
    assert round_speeds(5) != first
    assert round_speeds(4) == first


@pytest.mark.parametrize("speed", ["flip", "keep"])
def test_turn_back_is_away_from_the_way_last_ordered_even_when_blocked_or_still_slowing(speed: str) -> None:
    """The way we are going is the way we were last told to go: a tank that turned back into a wall (speed 0)
    turns back out of it, and one still slowing from its old way goes on the new one. (Read from the speed, it
    kept its old way in both: turning back again drove it into the wall for good.)"""
    from actor.bots.tankroyale.brain import TankBrain, TankControls
    from actor.bots.tankroyale.opponents import Me

    def decision(actual_speed: float, action: float) -> float:
        brain.me = Me(400, 300, 100, 0, 0, 0, actual_speed, 0)
        brain.decide()
        return brain.orders(np.array([action, 0, 0, 0], np.float32)).target_speed

    brain = TankBrain(controls=TankControls(speed=speed, repeat=8))
    assert decision(8.0, -8) == -8.0  # going ahead, turn back: full reverse
    assert decision(0.0, -8) == 8.0  # held by a wall behind it: turning back is ahead, out of it
    assert decision(-3.0, 8) == 8.0  # still moving backward as it speeds up ahead: going on is ahead
    assert decision(-3.0, -8) == -8.0  # and turning back is backward again
    assert decision(5.0, 8) == -8.0  # still slowing from ahead: going on keeps to the new way, backward


def _trajectory(fixed: str, actions: list[np.ndarray]) -> list[tuple[float, float, float]]:
    """Where our tank and its gun were after each decision, on a seeded round against a mover."""
    env = TankRoyaleEnv(opponent="Orbiter", aim="gf", move="orbit", speed="flip", repeat=8, fixed=fixed, max_turns=600)
    env.reset(seed=3)
    out = []
    for a in actions:
        env.step(a)
        me = env.turn.bot_states[ME]
        out.append((round(me["x"], 6), round(me["y"], 6), round(me["gunDirection"], 6)))
    return out


def test_fixed_parts_are_the_controls_whatever_the_policy_chose() -> None:
    """TankControls.fixed holds the body (speed, turn) at the controls' values: two policies that differ only
    there drive the same round, and one that differs in the aim still aims its own way."""
    rng = np.random.default_rng(0)
    base = [np.array([rng.uniform(-8, 8), rng.uniform(-10, 10), 0.0, 2.0], np.float32) for _ in range(30)]
    other_body = [np.array([-a[0], -a[1], a[2], a[3]], np.float32) for a in base]
    other_aim = [np.array([a[0], a[1], 25.0, a[3]], np.float32) for a in base]
    held = _trajectory("speed=-4;turn=0", base)
    assert _trajectory("speed=-4;turn=0", other_body) == held
    assert [p[2] for p in _trajectory("speed=-4;turn=0", other_aim)] != [p[2] for p in held]
    assert _trajectory("", other_body) != _trajectory("", base)  # unfixed, the body's actions drive


@pytest.mark.parametrize(("text", "reason"), [("speed=-9", "within -8..8"), ("wings=1", "not a part of the action"),
                                             ("power", "expected part=value"), ("aim=left", "not a number")])
def test_a_bad_fixed_value_fails_at_start_naming_the_key(text: str, reason: str) -> None:
    from actor.bots.tankroyale.brain import TankControls
    from protocol.config import ConfigError

    with pytest.raises(ConfigError, match=reason) as caught:
        TankControls(fixed=text)
    assert "fixed" in str(caught.value)
