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
    DeathEvent,
    RoundEndedEvent,
    RoundStartedEvent,
    SkippedTurnEvent,
    TickEvent,
)

from actor.bots.tankroyale.brain import (  # noqa: E402
    ACT_HIGH,
    ACT_LOW,
    OBS_DIM,
    OBSERVATION,
    TankBrain,
    TankControls,
    TankRewards,
)
from actor.bots.tankroyale.tank import SaclstmTank, spec  # noqa: E402
from actor.client import BotClient  # noqa: E402
from actor.config import ActorConfig  # noqa: E402
from protocol import EpisodeEnd, Experience, Heartbeat, Hello, decode  # noqa: E402
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


@pytest.mark.parametrize("form", [TankControls(), TankControls(aim="rate", radar="spin", move="rate")],
                         ids=["bearing", "first"])
def test_actions_map_into_the_legal_ranges(form: TankControls) -> None:
    """Whatever the action, the enemy and our state, the orders are within the game's rates."""
    rng = np.random.default_rng(0)
    brain = TankBrain(controls=form)
    for i, action in enumerate([*rng.uniform(-50, 50, (200, 4)), ACT_LOW, ACT_HIGH, np.zeros(4),
                                np.array([0, 0, 0, 0.05])]):
        if i % 2:
            brain.scanned(2, *rng.uniform(0, 800, 2), 100, rng.uniform(0, 360), rng.uniform(-8, 8), i)
        brain.observe(state(*rng.uniform(0, 600, 2), direction=rng.uniform(-720, 720), gun=rng.uniform(0, 360),
                            speed=rng.uniform(-8, 8)), i)
        o = brain.orders(action)
        assert -8 <= o.target_speed <= 8 and -10 <= o.turn_rate <= 10 and -20 <= o.gun_turn_rate <= 20
        assert -45 <= o.radar_turn_rate <= 45
        assert o.firepower == 0 or 0.1 <= o.firepower <= 3
    assert TankBrain.commands(np.array([0, 0, 0, 0.05]))[3] == 0, "below the smallest shot means hold fire"


def hit(victim: int, owner: int, damage: float, energy: float, turn: int = 5) -> dict:
    return {"type": "BulletHitBotEvent", "turnNumber": turn, "victimId": victim, "bullet": {"ownerId": owner},
            "damage": damage, "energy": energy}


def death(victim: int, turn: int = 5) -> dict:
    return {"type": "BotDeathEvent", "turnNumber": turn, "victimId": victim}


WON_TURN = [hit(2, 1, 4.0, 0.0), death(2), {"type": "WonRoundEvent", "turnNumber": 5}]
LOST_TURN = [hit(1, 2, 4.0, 0.0), death(1)]


@pytest.mark.parametrize("events, want", [
    (WON_TURN, 0.4 + 5.0 + 5.0 - 0.001),  # the killing shot, the kill and the win, in the turn they happened
    (LOST_TURN, -0.4 - 5.0 - 0.001),  # the lethal hit and the death
    ([hit(2, 1, 3.0, 40.0), hit(1, 2, 1.0, 90.0)], 0.3 - 0.1 - 0.001),
    ([hit(2, 3, 3.0, 40.0)], -0.001),  # a third bot's hit on another: nothing of ours
    ([death(2)], -0.001),  # a death we did not cause is no kill
], ids=["won", "lost", "exchange", "others", "not-our-kill"])
def test_a_turns_events_give_its_reward_in_any_order(events: list[dict], want: float) -> None:
    """Rewards of one turn from its schema events, whatever order they come in (the brain sorts them as the
    bot API dispatches: critical first, then by priority), and only once per outcome."""
    for order in (events, events[::-1]):
        brain = TankBrain()
        brain.apply(list(order))
        assert brain.take_reward() == pytest.approx(want, abs=1e-9)
        assert brain.take_reward() == pytest.approx(-0.001)  # the tally was reset
    brain = TankBrain()
    brain.apply(WON_TURN)
    brain.apply([{"type": "WonRoundEvent", "turnNumber": 6}, death(2, 6)])  # told twice: counted once
    assert brain.outcome == "won" and brain.take_reward() == pytest.approx(10.4 - 0.001)


def test_scans_rams_and_walls_reach_the_observation() -> None:
    brain = TankBrain(arena=(800, 600))
    s = state()
    brain.apply([{"type": "ScannedBotEvent", "turnNumber": 3, "scannedByBotId": 1, "scannedBotId": 2, "energy": 50.0,
                  "x": 600.0, "y": 300.0, "direction": 180.0, "speed": 4.0},
                 {"type": "BotHitBotEvent", "turnNumber": 3, "botId": 1, "victimId": 2, "energy": 49.4, "x": 600.0,
                  "y": 300.0, "rammed": True},
                 {"type": "BotHitWallEvent", "turnNumber": 3, "victimId": 1}])
    obs = dict(zip(OBSERVATION, brain.observe(s, 3)))
    assert obs["enemy_seen"] == 1 and obs["sin_bearing"] == pytest.approx(0, abs=1e-6) and obs["cos_bearing"] == 1
    assert obs["hit_bot"] == 1 and obs["hit_wall"] == 1
    assert brain.take_reward() == pytest.approx(-0.001)  # a ram costs both bots 0.6: dealt and taken cancel
    obs = dict(zip(OBSERVATION, brain.observe(s, 4)))
    assert obs["hit_bot"] == -1 and obs["hit_wall"] == -1  # flags last one turn


class Capture:
    """A real client whose PUSH socket ends in this process's PULL socket."""

    def __init__(self, eval_mode: bool = False, controls: TankControls | None = None) -> None:
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
        self.tank = SaclstmTank(self.client, TankRewards(), live=False, controls=controls)

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


def sent_steps(cap: Capture) -> list[Experience]:
    return [m for m in cap.messages(EpisodeEnd) if isinstance(m, Experience)]


def test_a_skipped_turn_is_a_gap_in_the_experience_not_a_step() -> None:
    """The server played turn 4 with our old intent: no step may claim the action we chose for it."""
    cap = Capture(controls=TankControls(repeat=1))
    try:
        cap.tank.on_round_started(RoundStartedEvent(round_number=1))
        for turn in range(1, 8):
            if turn == 4:
                cap.tank.on_skipped_turn(SkippedTurnEvent(turn_number=3))
            deliver(cap.tank, tick(turn, state()))
        cap.tank.on_death(DeathEvent(turn_number=8))
        batches = sent_steps(cap)
        assert sum(b.steps for b in batches) == 6, "7 turns close 6 steps; the skipped one is not sent"
        assert [(b.t0, b.steps) for b in batches] == [(0, 2), (3, 4)], "the stream jumps over the skipped step"
        assert batches[-1].terminated[-1]
    finally:
        cap.close()


def test_repeat_holds_a_decision_and_sums_its_turns_rewards() -> None:
    cap = Capture(controls=TankControls(repeat=3))
    try:
        cap.tank.on_round_started(RoundStartedEvent(round_number=1))
        for turn in range(1, 8):  # decisions at turns 1, 4 and 7
            deliver(cap.tank, tick(turn, state()))
        cap.tank.on_round_ended(RoundEndedEvent(round_number=1, turn_number=8, results=None))
        batches = sent_steps(cap)
        rewards = np.concatenate([b.reward for b in batches])
        assert len(rewards) == 3, "two whole decisions and the one the round's end cut"
        assert rewards[:2] == pytest.approx([3 * TankRewards().turn] * 2)
        assert batches[-1].truncated[-1]
    finally:
        cap.close()
