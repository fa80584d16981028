"""The embeddable client on its own: bounds, batching, never blocking, counting drops."""

from __future__ import annotations

import time

import numpy as np
import pytest
import zmq

from actor.client import BotClient
from actor.config import ActorConfig
from learner.networks import Actor, Arch, actor_to_blob, blob_rev
from protocol import EpisodeEnd, EpisodeStart, Experience, Heartbeat, Hello, Weights, decode, encode
from tests.procs import free_port

LOW, HIGH = np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32)


def client(ingest: str, **kw: object) -> BotClient:
    cfg = ActorConfig(ingest=ingest, weights=f"tcp://127.0.0.1:{free_port()}", actor_id="t", **kw)  # type: ignore[arg-type]
    return BotClient.connect(cfg, "bot", -np.ones(3), np.ones(3), LOW, HIGH)


def weights(version: int, state_every: int | None = None) -> Weights:
    arch = Arch(3, 2, hidden=8, fc=8, act_low=tuple(map(float, LOW)), act_high=tuple(map(float, HIGH)))
    params = actor_to_blob(Actor(arch))
    return Weights("learner", version, version, blob_rev(params), arch.to_wire(), params, 0, state_every)


def test_no_learner_means_drops_counted_and_no_waiting() -> None:
    bot = client(f"tcp://127.0.0.1:{free_port()}", flush_steps=4, queue=2)
    try:
        obs = np.zeros(3, np.float32)
        start = time.perf_counter()
        for _ in range(400):
            a = bot.act(obs)
            assert np.all(a >= LOW) and np.all(a <= HIGH)
            bot.step(obs, a, -1.0, obs, False, False)
        assert (time.perf_counter() - start) / 400 < 0.005, "a tick waited on the network"
        assert bot.link.dropped == 400 and bot.link.sent == 0
    finally:
        bot.close()


def connected(bot: BotClient, pull: zmq.Socket) -> None:
    """Until the PUSH socket is connected, sends drop (by design); wait for the hello to get through."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        bot.link.housekeeping()
        if pull.poll(20) and isinstance(decode(pull.recv()), Hello):
            return
    raise AssertionError("the client never connected")


def test_batches_flush_at_n_steps_and_episode_end_and_carry_the_version() -> None:
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    bot = client(f"tcp://127.0.0.1:{port}", flush_steps=8, flush_ms=60_000)
    try:
        connected(bot, pull)
        bot.link.weights._policy = __import__("actor.policy").policy.LocalPolicy(weights(7))
        bot.new_episode(opponent=42)
        obs = np.zeros(3, np.float32)
        for t in range(20):
            a = bot.act(obs)
            bot.step(obs, a, 1.0, obs, False, t == 19)
        got = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any(isinstance(m, EpisodeEnd) for m in got):
            if pull.poll(100):
                got.append(decode(pull.recv()))
        kinds = [type(m).__name__ for m in got if not isinstance(m, (Hello, Heartbeat))]
        assert kinds[:1] == ["EpisodeStart"] and kinds[-1] == "EpisodeEnd"
        assert next(m for m in got if isinstance(m, EpisodeStart)).opponent == "42"
        batches = [m for m in got if isinstance(m, Experience)]
        assert [b.steps for b in batches] == [8, 8, 4] and [b.t0 for b in batches] == [0, 8, 16]
        assert all(b.version == 7 for b in batches)
        assert all(b.h0 is None for b in batches), "a state nobody asked for was sent"
        assert batches[-1].truncated[-1] and not batches[-1].terminated.any()
        assert batches[1].prev_action is not None and np.allclose(batches[1].prev_action, batches[0].action[-1])
        assert batches[1].prev_reward == 1.0 and batches[0].prev_reward is None
        end = next(m for m in got if isinstance(m, EpisodeEnd))
        assert end.ret == 20.0 and end.length == 20
    finally:
        bot.close()
        pull.close(0)
        ctx.term()


@pytest.mark.parametrize("state_every, t0s, sizes", [
    (8, [0, 5, 8, 16], [5, 3, 8, 4]),  # chunks every flush_steps (8): batches at its multiples
    (4, [0, 4, 5, 8, 12, 16], [4, 1, 3, 4, 4, 4]),  # the learner asks, with chunks every 4 steps
])
def test_batches_keep_starting_where_chunks_start_and_bring_the_state_before_them(
        state_every: int | None, t0s: list[int], sizes: list[int]) -> None:
    """An early flush (new weights at step 5) does not shift the later batches: they still start at the
    multiples of flush_steps and of the learner's state_every, where its chunks start, and each brings the
    LSTM state the policy had there."""
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    bot = client(f"tcp://127.0.0.1:{port}", flush_steps=8, flush_ms=60_000)
    policy = __import__("actor.policy").policy
    try:
        connected(bot, pull)
        blob = decode(encode(weights(7, state_every)))  # one set of random parameters for all three policies
        bot.link.weights._policy = policy.LocalPolicy(blob)
        bot.new_episode()
        obs = np.linspace(-1, 1, 3).astype(np.float32)
        for t in range(20):
            if t == 5:
                bot.link.weights._policy = policy.LocalPolicy(blob)  # new weights, same values
            bot.step(obs, bot.act(obs), 0.5, obs, False, t == 19)
        batches: list[Experience] = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and sum(b.steps for b in batches) < 20:
            if pull.poll(100) and isinstance(m := decode(pull.recv()), Experience):
                batches.append(m)
        assert [b.t0 for b in batches] == t0s and [b.steps for b in batches] == sizes
        replay = policy.LocalPolicy(blob)  # the same weights, stepped on the same inputs
        state, prev, prev_reward = replay.initial_state(), np.zeros(2, np.float32), 0.0
        for b in batches:
            assert np.allclose(b.h0, state[0]) and np.allclose(b.c0, state[1])
            for action in b.action:
                _, _, state = replay.forward(obs, prev, prev_reward, state)
                prev, prev_reward = (action - (LOW + HIGH) / 2) / ((HIGH - LOW) / 2), 0.5
        assert np.abs(batches[-1].h0).sum() > 0, "the states compared are all zero: the test is blind"
    finally:
        bot.close()
        pull.close(0)
        ctx.term()


def test_eval_mode_sends_no_experience_and_no_episode_start() -> None:
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    bot = client(f"tcp://127.0.0.1:{port}", eval_mode=True, flush_steps=2)
    try:
        connected(bot, pull)
        bot.link.weights._policy = __import__("actor.policy").policy.LocalPolicy(weights(3))
        bot.new_episode(opponent="x")
        obs = np.ones(3, np.float32)
        first = bot.act(obs)
        bot.new_episode()
        assert np.allclose(bot.act(obs), first), "eval actions must be deterministic"
        for t in range(10):
            bot.step(obs, bot.act(obs), 1.0, obs, t == 9, False)
        kinds = set()
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and "EpisodeEnd" not in kinds:
            if pull.poll(100):
                kinds.add(type(decode(pull.recv())).__name__)
        assert "EpisodeEnd" in kinds and not kinds & {"Experience", "EpisodeStart"}
    finally:
        bot.close()
        pull.close(0)
        ctx.term()


def test_flow_control_never_holds_back_an_actor_with_nothing_in_flight() -> None:
    """After a learner restart its counters can say the actors are far ahead (what it had received but not
    trained on died with it). An actor whose every step has been received must still step, or both wait."""
    from actor.link import ActorLink
    from protocol import Progress

    cfg = ActorConfig(ingest=f"tcp://127.0.0.1:{free_port()}", weights=f"tcp://127.0.0.1:{free_port()}", actor_id="t",
                      flow="rate-limited", close_linger_s=0.0)
    link = ActorLink(cfg)
    try:
        behind = Progress("learner", 1, received=5000, grad_steps=100, utd=1.0, learning_starts=100, version=1,
                          session=1, per_sender={"t": 64})  # slack 100 + 100 + 128 - 5000 < 0
        link.sent = 64
        assert link._may_step(behind)
        link.sent = 80  # 16 steps not yet received: now it waits
        assert not link._may_step(behind)
        ahead = Progress("learner", 2, received=64, grad_steps=100, utd=1.0, learning_starts=100, version=1,
                         session=1, per_sender={"t": 64})
        assert link._may_step(ahead)
    finally:
        link.close()


def test_eval_sample_plays_sampled_actions_repeatably_for_a_seed() -> None:
    """eval_sample: the policy's own distribution (not its mean), the noise from the bot's seed (two bots of one seed
    play the same actions, another seed others)."""
    from actor.policy import LocalPolicy

    frame = weights(3)  # one network for every bot below

    def actions(seed: int, sample: bool = True) -> list[np.ndarray]:
        bot = client("tcp://127.0.0.1:9", eval_mode=True, eval_sample=sample, seed=seed)
        try:
            bot.link.weights._policy = LocalPolicy(frame)
            bot.new_episode()
            return [bot.act(np.full(3, 0.1 * t, np.float32)) for t in range(8)]
        finally:
            bot.close()
    mean = actions(1, sample=False)
    assert np.allclose(mean, actions(2, sample=False)), "without eval_sample the mean, whatever the seed"
    a, b = actions(1), actions(1)
    assert np.allclose(a, b), "one seed, one stream of actions"
    assert not np.allclose(a, mean) and not np.allclose(a, actions(2))
