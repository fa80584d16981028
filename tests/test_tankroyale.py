"""The Tank Royale tank, driven by the bot API's own event and state classes (no game server here:
it runs on Java and is not installable in this environment)."""

from __future__ import annotations

import time

import numpy as np
import pytest
import zmq

pytest.importorskip("robocode_tank_royale")

from robocode_tank_royale.bot_api import BotState  # noqa: E402
from robocode_tank_royale.bot_api.events import (  # noqa: E402
    BulletHitBotEvent,
    DeathEvent,
    HitByBulletEvent,
    RoundEndedEvent,
    RoundStartedEvent,
    ScannedBotEvent,
    TickEvent,
    WonRoundEvent,
)

from actor.bots.tankroyale.brain import ACT_HIGH, ACT_LOW, OBS_DIM, TankBrain, TankRewards  # noqa: E402
from actor.bots.tankroyale.tank import SaclstmTank, spec  # noqa: E402
from actor.client import BotClient  # noqa: E402
from actor.config import ActorConfig  # noqa: E402
from protocol import EpisodeEnd, EpisodeStart, Experience, Heartbeat, Hello, decode  # noqa: E402
from tests.procs import free_port  # noqa: E402


def state(x: float = 400, y: float = 300, energy: float = 100, direction: float = 0, gun: float = 0,
          speed: float = 0, gun_heat: float = 0) -> BotState:
    return BotState(False, energy, x, y, direction, gun, 0.0, 45.0, speed, 0.0, 0.0, 0.0, gun_heat, 1,
                    None, None, None, None, None, None, None, False)


def tick(turn: int, s: BotState) -> TickEvent:
    return TickEvent(turn_number=turn, round_number=1, bot_state=s, bullet_states=[], events=[])


def deliver(tank: SaclstmTank, event: TickEvent) -> None:
    """What the bot API does on a tick from the server: store it, then call the handler."""
    tank._internals.set_tick_event(event)
    tank.on_tick(event)


@pytest.mark.parametrize("s", [
    state(x=0, y=0), state(x=800, y=600), state(x=18, y=582, speed=-8), state(energy=0), state(energy=250),
    state(direction=359.9, gun=-720, gun_heat=3.0, speed=8),
], ids=["corner", "far corner", "wall, reversing", "zero energy", "overcharged", "odd angles"])
def test_observations_are_finite_and_bounded(s: BotState) -> None:
    brain = TankBrain(arena=(800, 600))
    obs = brain.observe(s, 0)  # no enemy seen yet
    assert obs.shape == (OBS_DIM,) and np.isfinite(obs).all() and np.abs(obs).max() <= 1.0
    brain.scanned(2, s.x + 0.001, s.y, 0.0, 90.0, -8.0, 0)  # enemy on top of us, no energy
    brain.bot_died(2, by_us=False)  # and dead
    obs = brain.observe(s, 5000)
    assert np.isfinite(obs).all() and np.abs(obs).max() <= 1.0


def test_actions_map_into_the_legal_ranges() -> None:
    rng = np.random.default_rng(0)
    for action in [*rng.uniform(-50, 50, (200, 4)), ACT_LOW, ACT_HIGH, np.zeros(4), np.array([0, 0, 0, 0.05])]:
        speed, turn, gun, power = TankBrain.commands(action)
        assert -8 <= speed <= 8 and -10 <= turn <= 10 and -20 <= gun <= 20
        assert power == 0 or 0.1 <= power <= 3
    assert TankBrain.commands(np.array([0, 0, 0, 0.05]))[3] == 0, "below the smallest shot means hold fire"


class Capture:
    """A real client whose PUSH socket ends in this process's PULL socket."""

    def __init__(self, eval_mode: bool = False) -> None:
        self.ctx = zmq.Context()
        self.pull = self.ctx.socket(zmq.PULL)
        port = self.pull.bind_to_random_port("tcp://127.0.0.1")
        cfg = ActorConfig(ingest=f"tcp://127.0.0.1:{port}", weights=f"tcp://127.0.0.1:{free_port()}",
                          actor_id="tank", eval_mode=eval_mode, flush_steps=1000, flush_ms=60_000, close_linger_s=2)
        self.client = BotClient.connect(cfg, "tank", *spec())
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # until connected: sends before that drop, by design
            self.client.link.housekeeping()
            if self.pull.poll(20) and isinstance(decode(self.pull.recv()), Hello):
                break
        self.tank = SaclstmTank(self.client, TankRewards(), live=False)

    def messages(self, until: type, timeout: float = 5.0) -> list:
        got: list = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not any(isinstance(m, until) for m in got):
            if self.pull.poll(50):
                msg = decode(self.pull.recv())
                if not isinstance(msg, (Hello, Heartbeat)):
                    got.append(msg)
        return got

    def close(self) -> None:
        self.client.close()
        self.pull.close(0)
        self.ctx.term()


def test_a_scripted_round_rewards_add_up_and_end_terminated() -> None:
    cap = Capture()
    t = cap.tank
    try:
        t.on_round_started(RoundStartedEvent(round_number=1))
        deliver(t, tick(1, state()))
        t.on_scanned_bot(ScannedBotEvent(turn_number=1, scanned_by_bot_id=1, scanned_bot_id=2, energy=50, x=600,
                                         y=300, direction=180, speed=4))
        t.on_bullet_hit(BulletHitBotEvent(turn_number=2, victim_id=2, bullet=None, damage=4.0, energy=46))
        deliver(t, tick(2, state()))
        t.on_hit_by_bullet(HitByBulletEvent(turn_number=3, bullet=None, damage=3.0, energy=97))
        deliver(t, tick(3, state(energy=97)))
        t.on_bullet_hit(BulletHitBotEvent(turn_number=4, victim_id=2, bullet=None, damage=4.0, energy=0))
        t.on_won_round(WonRoundEvent(turn_number=4))
        t.on_round_ended(RoundEndedEvent(round_number=1, turn_number=4, results=None))  # already ended: no double step
        got = cap.messages(EpisodeEnd)
        start = next(m for m in got if isinstance(m, EpisodeStart))
        assert start.opponent == ""  # first round: no opponent seen yet
        steps = [m for m in got if isinstance(m, Experience)]
        rewards = np.concatenate([m.reward for m in steps])
        assert len(rewards) == 3 and steps[-1].terminated[-1] and not steps[-1].truncated[-1]
        want = [0.4 - 0.001, -0.3 - 0.001, 0.4 + 5.0 + 5.0 - 0.001]  # dealt, taken, dealt + kill + win
        np.testing.assert_allclose(rewards, want, atol=1e-5)
        end = next(m for m in got if isinstance(m, EpisodeEnd))
        assert end.length == 3 and end.ret == pytest.approx(sum(want), abs=1e-4)
        actions = np.concatenate([m.action for m in steps])
        assert (actions >= ACT_LOW).all() and (actions <= ACT_HIGH).all()
        assert -8 <= t.target_speed <= 8 and -10 <= t.turn_rate <= 10 and -20 <= t.gun_turn_rate <= 20

        t.on_round_started(RoundStartedEvent(round_number=2))  # the next round names the opponent we met
        deliver(t, tick(1, state()))
        deliver(t, tick(2, state()))
        t.on_death(DeathEvent(turn_number=3))
        got = cap.messages(EpisodeEnd)
        assert next(m for m in got if isinstance(m, EpisodeStart)).opponent == "2"  # no name known: numeric id
        last = [m for m in got if isinstance(m, Experience)][-1]
        assert last.terminated[-1] and last.reward[-1] == pytest.approx(-5.0 - 0.001)
    finally:
        cap.close()


def test_round_end_without_death_is_a_cut_not_a_terminal() -> None:
    cap = Capture()
    try:
        cap.tank.on_round_started(RoundStartedEvent(round_number=1))
        for turn in range(1, 5):
            deliver(cap.tank, tick(turn, state()))
        cap.tank.on_round_ended(RoundEndedEvent(round_number=1, turn_number=5, results=None))
        last = [m for m in cap.messages(EpisodeEnd) if isinstance(m, Experience)][-1]
        assert last.truncated[-1] and not last.terminated.any()
    finally:
        cap.close()


def test_eval_mode_sends_no_experience_and_no_episode_start() -> None:
    cap = Capture(eval_mode=True)
    try:
        cap.tank.on_round_started(RoundStartedEvent(round_number=1))
        for turn in range(1, 4):
            deliver(cap.tank, tick(turn, state()))
        cap.tank.on_death(DeathEvent(turn_number=4))
        kinds = {type(m).__name__ for m in cap.messages(EpisodeEnd)}
        assert "EpisodeEnd" in kinds and not kinds & {"Experience", "EpisodeStart"}
    finally:
        cap.close()
