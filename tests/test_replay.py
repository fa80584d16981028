"""Replay: chunks never cross a stream or an episode, capacity holds, the clear rule works."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learner.replay import SequenceReplay

D, A = 3, 1


def steps(stream: int, episode: int, t0: int, n: int) -> dict:
    """Steps whose every number encodes (stream, episode, t): obs[.., 0] = stream, 1 = episode, 2 = t."""
    t = np.arange(t0, t0 + n, dtype=np.float32)
    obs = np.stack([np.full(n, stream, np.float32), np.full(n, episode, np.float32), t], axis=1)
    nxt = obs.copy()
    nxt[:, 2] += 1
    return {"obs": obs, "action": (t % 7 / 7).reshape(-1, 1).astype(np.float32), "reward": t, "next_obs": nxt}


def feed(replay: SequenceReplay, stream: int, episode: int, t0: int, n: int, end: str = "") -> None:
    replay.add((f"actor{stream}", "bot"), episode, t0, 1, **steps(stream, episode, t0, n),
               terminated=end == "terminated", truncated=end == "truncated")


def check_chunks(replay: SequenceReplay) -> None:
    """Every live chunk: one stream, one episode, consecutive steps, obs[t+1] is the step after obs[t]."""
    for slot in replay._live[:replay.n_live]:
        trained = np.nonzero(replay.mask[slot])[0]
        assert len(trained) >= 1, "a committed chunk must hold a step to train on"
        last = int(trained.max())
        obs = replay.obs[slot, : last + 2]
        assert len(set(obs[:, 0])) == 1, "chunk mixes streams"
        assert len(set(obs[:, 1])) == 1, "chunk mixes episodes"
        assert np.all(np.diff(obs[:, 2]) == 1), "chunk steps are not consecutive"
        assert np.array_equal(replay.reward[slot, : last + 1], obs[:-1, 2]), "rewards misaligned with obs"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 40), st.sampled_from(["", "", "terminated", "truncated"])),
                min_size=1, max_size=40),
       st.integers(2, 12), st.data())
def test_chunks_never_cross_streams_or_episodes(plan: list, seq_len: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, seq_len - 1))
    replay = SequenceReplay(capacity=seq_len * 50, seq_len=seq_len, overlap=overlap, obs_dim=D, act_dim=A)
    where = {0: [0, 0], 1: [0, 0], 2: [0, 0]}  # stream -> [episode, t]
    for stream, n, end in plan:
        episode, t = where[stream]
        feed(replay, stream, episode, t, n, end)
        where[stream] = [episode + 1, 0] if end else [episode, t + n]
        check_chunks(replay)
    assert replay.transitions == int(replay.mask[replay._live[:replay.n_live]].sum())


def test_every_step_is_trained_on_once_with_overlap() -> None:
    replay = SequenceReplay(capacity=10_000, seq_len=8, overlap=3, obs_dim=D, act_dim=A)
    for t0 in range(0, 100, 10):
        feed(replay, 0, 0, t0, 10, end="truncated" if t0 == 90 else "")
    assert replay.transitions == 100
    trained = []
    for slot in replay._live[:replay.n_live]:
        trained += list(replay.obs[slot, :8, 2][replay.mask[slot] == 1])
    assert sorted(trained) == list(range(100))


def test_terminated_and_truncated_are_stored_apart() -> None:
    replay = SequenceReplay(capacity=1000, seq_len=4, overlap=0, obs_dim=D, act_dim=A)
    feed(replay, 0, 0, 0, 3, end="terminated")
    feed(replay, 1, 0, 0, 3, end="truncated")
    by_stream = {int(replay.obs[s, 0, 0]): replay.terminated[s, :3] for s in replay._live[:replay.n_live]}
    assert list(by_stream[0]) == [0, 0, 1]
    assert list(by_stream[1]) == [0, 0, 0]


def test_gap_in_a_stream_starts_a_new_segment() -> None:
    replay = SequenceReplay(capacity=1000, seq_len=8, overlap=0, obs_dim=D, act_dim=A)
    feed(replay, 0, 0, 0, 5)
    feed(replay, 0, 0, 9, 5)  # steps 5..8 were lost
    feed(replay, 0, 0, 14, 1, end="truncated")
    check_chunks(replay)
    assert replay.transitions == 11


def test_capacity_bounds_memory_and_evicts_oldest() -> None:
    replay = SequenceReplay(capacity=80, seq_len=8, overlap=0, obs_dim=D, act_dim=A)
    nbytes = replay.nbytes
    for episode in range(50):
        feed(replay, 0, episode, 0, 8, end="truncated")
    assert replay.n_live == 10 and replay.transitions == 80
    assert replay.nbytes == nbytes
    episodes = {int(replay.obs[s, 0, 1]) for s in replay._live[:replay.n_live]}
    assert episodes == set(range(40, 50))
    assert replay.evicted == 40 * 8


def test_clear_policy_drops_only_that_bots_data_on_a_new_opponent() -> None:
    replay = SequenceReplay(capacity=1000, seq_len=4, overlap=0, obs_dim=D, act_dim=A, opponent_policy="clear")
    for stream in (0, 1):
        replay.episode_start((f"actor{stream}", "bot"), "SpinBot")
        feed(replay, stream, 0, 0, 8, end="terminated")
    assert not replay.episode_start(("actor0", "bot"), "SpinBot")  # same opponent: kept
    assert replay.transitions == 16
    assert replay.episode_start(("actor0", "bot"), "Walls")
    assert replay.transitions == 8 and replay.dropped_by_clear == 8
    assert {int(replay.obs[s, 0, 0]) for s in replay._live[:replay.n_live]} == {1}


def test_keep_policy_keeps_data_on_a_new_opponent() -> None:
    replay = SequenceReplay(capacity=1000, seq_len=4, overlap=0, obs_dim=D, act_dim=A)
    replay.episode_start(("actor0", "bot"), "SpinBot")
    feed(replay, 0, 0, 0, 8, end="terminated")
    assert not replay.episode_start(("actor0", "bot"), "Walls")
    assert replay.transitions == 8


def test_sample_is_uniform_over_chunks_and_shaped() -> None:
    replay = SequenceReplay(capacity=1000, seq_len=4, overlap=0, obs_dim=D, act_dim=A, seed=3)
    for episode in range(10):
        feed(replay, 0, episode, 0, 4, end="truncated")
    batch = replay.sample(20_000)
    assert batch.obs.shape == (20_000, 5, D) and batch.action.shape == (20_000, 4, A)
    counts = np.bincount(batch.obs[:, 0, 1].astype(int), minlength=10)
    assert counts.min() > 1700 and counts.max() < 2300


def test_bad_arguments_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="overlap"):
        SequenceReplay(100, 8, 8, D, A)
    with pytest.raises(ValueError, match="opponent_policy"):
        SequenceReplay(100, 8, 0, D, A, opponent_policy="forget")
    with pytest.raises(ValueError, match="empty"):
        SequenceReplay(100, 8, 0, D, A).sample(4)


def test_export_and_load_keep_every_trainable_step() -> None:
    a = SequenceReplay(capacity=400, seq_len=8, overlap=2, obs_dim=D, act_dim=A, state_dim=4)
    for episode in range(30):  # more than fits: the ring wraps
        feed(a, episode % 3, episode, 0, 12, end="truncated")
    b = SequenceReplay(capacity=400, seq_len=8, overlap=2, obs_dim=D, act_dim=A, state_dim=4)
    assert b.load(a.export()) == a.transitions
    key = lambda r: sorted(tuple(r.obs[s].ravel()) for s in r._live[:r.n_live])  # noqa: E731
    assert key(a) == key(b)
    feed(b, 0, 99, 0, 8, end="truncated")  # and it goes on working
    check_chunks(b)
    with pytest.raises(ValueError, match="do not fit"):
        SequenceReplay(capacity=400, seq_len=4, overlap=0, obs_dim=D, act_dim=A).load(a.export())
