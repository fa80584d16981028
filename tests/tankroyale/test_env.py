"""TankRoyale-v0: a Gymnasium environment on the rules engine, with the tank's own brain for
observations and rewards (no server, no sockets)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import actor.bots.tankroyale.env  # noqa: F401 - registers TankRoyale-v0
from actor.bots.tankroyale.brain import OBSERVATION, TankControls, TankRewards
from actor.bots.tankroyale.env import ENV_ID, TankRoyaleEnv, parse_arena

ROOT = Path(__file__).resolve().parents[2]
REWARDS = TankRewards()
GUN_SIN, GUN_COS = OBSERVATION.index("sin_gun_bearing"), OBSERVATION.index("cos_gun_bearing")
SEEN, CAN_FIRE = OBSERVATION.index("enemy_seen"), OBSERVATION.index("can_fire")


# aim_and_fire speaks the first control form: a gun turn rate, a spinning radar, a body turn rate.
FIRST_FORM = {"aim": "rate", "radar": "spin", "move": "rate", "speed": "target", "repeat": 1}


def aim_and_fire(obs: np.ndarray) -> np.ndarray:
    """Stand still, turn the gun onto the last scan, fire 3 when on it and the gun is cool (FIRST_FORM)."""
    if obs[SEEN] < 0:
        return np.zeros(4, np.float32)
    off = math.degrees(math.atan2(obs[GUN_SIN], obs[GUN_COS]))
    fire = 3.0 if abs(off) < 2.0 and obs[CAN_FIRE] > 0 else 0.0
    return np.array([0.0, 0.0, max(-20.0, min(20.0, off)), fire], np.float32)


def expected_reward(events: list[dict], me: int = 1) -> float:
    """The reward the events of one turn are worth, by the reward table (TankRewards defaults; docs/tankroyale.md)."""
    r = REWARDS.turn
    for e in events:
        kind = e["type"]
        if kind == "BulletHitBotEvent" and e["victimId"] == me:
            r += REWARDS.damage_taken * e["damage"]
        elif kind == "BulletHitBotEvent" and e["bullet"]["ownerId"] == me:
            r += REWARDS.damage_dealt * e["damage"] + (REWARDS.kill if e["energy"] <= 0 else 0.0)
        elif kind == "BotHitBotEvent":
            r += 0.6 * (REWARDS.damage_dealt + REWARDS.damage_taken)
        elif kind == "BotDeathEvent" and e["victimId"] == me:
            r += REWARDS.death
        elif kind == "WonRoundEvent":
            r += REWARDS.win
    return r


@pytest.mark.filterwarnings("ignore:.*symmetric and normalized")  # the game's own units, as the tank's hello
def test_registered_and_passes_gymnasiums_checker() -> None:
    env = gym.make(ENV_ID, opponent="SpinBot", max_turns=300)
    assert isinstance(env.unwrapped, TankRoyaleEnv)
    assert env.observation_space.shape == (35,) and env.action_space.shape == (4,)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_the_actor_daemon_makes_it_by_id() -> None:
    """In a fresh interpreter that never imported the env: `--env TankRoyale-v0` must work from the daemon alone."""
    code = ("from actor.config import ActorConfig; from actor.daemon import make_env; "
            "kw = 'opponent=SittingDuck,max_turns=50,arena=1000x800'; "
            "e = make_env(ActorConfig(env='TankRoyale-v0', env_kwargs=kw)); "
            "u = e.env.unwrapped; o = e.reset(seed=3); print(u.arena, u.opponent, o.shape)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "(1000, 800) SittingDuck (35,)"


def test_bad_kwargs_are_rejected_clearly() -> None:
    with pytest.raises(ValueError, match="unknown opponent 'Nobody'"):
        TankRoyaleEnv(opponent="Nobody")
    with pytest.raises(ValueError, match="unknown opponent 'Nobody'"):
        TankRoyaleEnv(opponent="SpinBot+Nobody")
    with pytest.raises(ValueError, match="WIDTHxHEIGHT"):
        parse_arena("800-600")
    with pytest.raises(ValueError, match="400..5000"):
        parse_arena((100, 600))
    with pytest.raises(ValueError, match="max_turns"):
        TankRoyaleEnv(max_turns=0)


def test_a_roster_draws_an_opponent_per_episode_and_plays_it() -> None:
    env = TankRoyaleEnv(opponent="SittingDuck+SpinBot", max_turns=20)
    drawn = set()
    for episode in range(8):
        _, info = env.reset(seed=episode)
        start = dict(env.turn.bot_states[2])
        for _ in range(20):
            env.step(np.zeros(4, np.float32))
        moved = (env.turn.bot_states[2]["x"], env.turn.bot_states[2]["y"]) != (start["x"], start["y"])
        assert moved == (info["opponent"] == "SpinBot"), info
        drawn.add(info["opponent"])
    assert drawn == {"SittingDuck", "SpinBot"}
    assert len({TankRoyaleEnv(opponent="all").reset(seed=s)[1]["opponent"] for s in range(30)}) >= 5


def rollout(seed: int, opponent: str = "SpinBot", steps: int = 150) -> list[tuple]:
    env = TankRoyaleEnv(opponent=opponent, max_turns=steps)
    rng = np.random.default_rng(99)
    obs, _ = env.reset(seed=seed)
    out = [tuple(obs)]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(rng.uniform(env.action_space.low, env.action_space.high))
        out.append((*obs, reward, terminated, truncated, info["energy"], info["opponent_energy"]))
        if terminated or truncated:
            break
    return out


def test_deterministic_for_a_seed() -> None:
    a, b, c = rollout(5, "RandomBot"), rollout(5, "RandomBot"), rollout(6, "RandomBot")
    assert a == b
    assert a != c


def test_an_episode_ends_by_truncation_at_max_turns() -> None:
    env = TankRoyaleEnv(opponent="SittingDuck", max_turns=40, repeat=1)
    _, first = env.reset(seed=1)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated) and steps < 100:
        _, _, terminated, truncated, info = env.step(np.zeros(4, np.float32))
        steps += 1
    assert (steps, truncated, terminated, info["turn"]) == (40, True, False, first["turn"] + 40)


def test_aim_and_fire_beats_the_sitting_duck_and_the_win_pays_in_the_terminal_step() -> None:
    env = TankRoyaleEnv(opponent="SittingDuck", max_turns=3000, **FIRST_FORM)
    obs, info = env.reset(seed=11)
    assert info["opponent"] == "SittingDuck" and not info["won"]
    total, steps = 0.0, 0
    while True:
        obs, reward, terminated, truncated, info = env.step(aim_and_fire(obs))
        events = env.turn.events.get(1, [])
        assert reward == pytest.approx(expected_reward(events)), events
        total, steps = total + reward, steps + 1
        if terminated or truncated:
            break
    assert terminated and not truncated and info["won"] and info["opponent_energy"] == 0
    assert any(e["type"] == "WonRoundEvent" for e in events)
    assert reward >= REWARDS.win + REWARDS.kill + REWARDS.turn, "the win (and the kill) land in the last step"
    assert total > 10 + REWARDS.win, "100 energy of damage dealt, a kill and a win"


def test_rewards_equal_what_the_events_say_in_a_rough_fight() -> None:
    env = TankRoyaleEnv(opponent="RamFire", max_turns=600, **FIRST_FORM)
    obs, _ = env.reset(seed=2)
    seen = set()
    rng = np.random.default_rng(0)
    for _ in range(600):
        action = aim_and_fire(obs)
        action[0], action[1] = rng.uniform(-8, 8), rng.uniform(-10, 10)
        obs, reward, terminated, truncated, _ = env.step(action)
        events = env.turn.events.get(1, [])
        seen.update(e["type"] for e in events)
        assert reward == pytest.approx(expected_reward(events)), events
        if terminated or truncated:
            break
    assert {"ScannedBotEvent", "BulletHitBotEvent"} <= seen, seen


def test_the_env_and_the_networked_tank_see_and_earn_the_same() -> None:
    """The env's episode, its turns sent as our server sends them (TickEventForBot JSON) through the bot API's own
    parsing and mapping into tank.py's SaclstmTank: the tank's experience has the env's observations and rewards."""
    pytest.importorskip("robocode_tank_royale")
    from robocode_tank_royale.bot_api.events import RoundStartedEvent
    from robocode_tank_royale.bot_api.internal.json_util import from_json
    from robocode_tank_royale.bot_api.mapper.event_mapper import EventMapper

    from actor.bots.tankroyale.protocol_tr import tick_for_bot
    from protocol import EpisodeEnd, Experience
    from tests.test_tankroyale import Capture, deliver

    env = TankRoyaleEnv(opponent="RamFire", max_turns=3000, **FIRST_FORM)
    obs, _ = env.reset(seed=4)
    turns, observed, rewards, terminated, truncated = [env.turn], [obs], [], False, False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, _ = env.step(aim_and_fire(obs))
        turns.append(env.turn)
        observed.append(obs)
        rewards.append(reward)
    assert terminated and len(turns) > 20
    cap = Capture(controls=TankControls(**FIRST_FORM))
    try:
        cap.tank._internals.my_id = 1  # as game-started sets it
        cap.tank.on_round_started(RoundStartedEvent(round_number=1))
        for turn in turns:
            deliver(cap.tank, EventMapper.map_tick_event(from_json(tick_for_bot(turn, 1)), cap.tank))
        sent = [m for m in cap.messages(EpisodeEnd) if isinstance(m, Experience)]
    finally:
        cap.close()
    got_obs = np.concatenate([m.obs for m in sent])
    got_next = np.concatenate([m.next_obs for m in sent])
    got_rewards = np.concatenate([m.reward for m in sent])
    np.testing.assert_allclose(got_obs, np.array(observed[:-1]), atol=1e-6)
    np.testing.assert_allclose(got_next, np.array(observed[1:]), atol=1e-6)
    np.testing.assert_allclose(got_rewards, np.array(rewards), atol=1e-6)
    assert sent[-1].terminated[-1] and not np.concatenate([m.terminated for m in sent])[:-1].any()
