"""Replay: chunks never cross a stream or an episode, capacity holds, the clear rule works."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learner.replay import SequenceReplay, StepBatch

D, A = 3, 1


def steps(stream: int, episode: int, t0: int, n: int) -> dict:
    """Steps whose every number encodes (stream, episode, t): obs[.., 0] = stream, 1 = episode, 2 = t."""
    t = np.arange(t0, t0 + n, dtype=np.float32)
    obs = np.stack([np.full(n, stream, np.float32), np.full(n, episode, np.float32), t], axis=1)
    nxt = obs.copy()
    nxt[:, 2] += 1
    return {"obs": obs, "action": (t % 7 / 7).reshape(-1, 1).astype(np.float32), "reward": t, "next_obs": nxt}


def feed(replay: SequenceReplay, stream: int, episode: int, t0: int, n: int, end: str = "") -> None:
    replay.add(StepBatch((f"actor{stream}", "bot"), episode, t0, **steps(stream, episode, t0, n),
                         terminated=end == "terminated", truncated=end == "truncated"))


def check_chunks(replay: SequenceReplay) -> None:
    """Every live chunk: one stream, one episode, consecutive steps, obs[t+1] is the step after obs[t]."""
    chunks = replay.chunks()
    assert len(chunks.mask) == replay.n_live
    for obs_all, mask, reward in zip(chunks.obs, chunks.mask, chunks.reward):
        trained = np.nonzero(mask)[0]
        assert len(trained) >= 1, "a committed chunk must hold a step to train on"
        last = int(trained.max())
        obs = obs_all[: last + 2]
        assert len(set(obs[:, 0])) == 1, "chunk mixes streams"
        assert len(set(obs[:, 1])) == 1, "chunk mixes episodes"
        assert np.all(np.diff(obs[:, 2]) == 1), "chunk steps are not consecutive"
        assert np.array_equal(reward[: last + 1], obs[:-1, 2]), "rewards misaligned with obs"
        assert not obs_all[last + 2:].any() and not reward[last + 1:].any(), "padding is not zero"


def check_prev(replay: SequenceReplay) -> None:
    """A chunk's previous action and reward are those of the step before its first one (zero at t=0)."""
    chunks = replay.chunks()
    t = chunks.obs[:, 0, 2]
    want = np.where(t > 0, (t - 1) % 7 / 7, 0.0)
    assert np.allclose(chunks.prev_action[:, 0], want)
    assert np.allclose(chunks.prev_reward, np.where(t > 0, t - 1, 0.0))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 40), st.sampled_from(["", "", "terminated", "truncated"])),
                min_size=1, max_size=40),
       st.integers(2, 12), st.data())
def test_chunks_never_cross_streams_or_episodes(plan: list, seq_len: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, seq_len - 1))
    # A ring much smaller than the plan overwrites steps that open and committed chunks still need.
    capacity = seq_len * data.draw(st.sampled_from([2, 3, 50]))
    replay = SequenceReplay(capacity=capacity, seq_len=seq_len, overlap=overlap, obs_dim=D, act_dim=A)
    where = {0: [0, 0], 1: [0, 0], 2: [0, 0]}  # stream -> [episode, t]
    for stream, n, end in plan:
        episode, t = where[stream]
        feed(replay, stream, episode, t, n, end)
        where[stream] = [episode + 1, 0] if end else [episode, t + n]
        check_chunks(replay)
        assert replay.transitions == int(replay.chunks().mask.sum()) <= capacity


def test_every_step_is_trained_on_once_with_overlap() -> None:
    replay = SequenceReplay(capacity=10_000, seq_len=8, overlap=3, obs_dim=D, act_dim=A)
    for t0 in range(0, 100, 10):
        feed(replay, 0, 0, t0, 10, end="truncated" if t0 == 90 else "")
    assert replay.transitions == 100
    chunks = replay.chunks()
    trained = chunks.obs[:, :8, 2][chunks.mask == 1]
    assert sorted(trained) == list(range(100))
    check_prev(replay)


def test_terminated_and_truncated_are_stored_apart() -> None:
    replay = SequenceReplay(capacity=1000, seq_len=4, overlap=0, obs_dim=D, act_dim=A)
    feed(replay, 0, 0, 0, 3, end="terminated")
    feed(replay, 1, 0, 0, 3, end="truncated")
    chunks = replay.chunks()
    by_stream = {int(obs[0, 0]): term[:3] for obs, term in zip(chunks.obs, chunks.terminated)}
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
    episodes = {int(e) for e in replay.chunks().obs[:, 0, 1]}
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
    assert {int(s) for s in replay.chunks().obs[:, 0, 0]} == {1}


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
    for episode in range(45):  # 540 steps, more than fits: the ring wraps and the oldest chunks are gone
        feed(a, episode % 3, episode, 0, 12, end="truncated")
    assert a.evicted > 0
    b = SequenceReplay(capacity=400, seq_len=8, overlap=2, obs_dim=D, act_dim=A, state_dim=4)
    assert b.load(a.export()) == a.transitions
    small = SequenceReplay(capacity=200, seq_len=8, overlap=2, obs_dim=D, act_dim=A, state_dim=4)
    assert 0 < small.load(a.export()) < a.transitions  # the newest that fit
    check_chunks(small)
    key = lambda r: sorted(tuple(np.concatenate([c.ravel() for c in chunk])) for chunk in  # noqa: E731
                           zip(*(getattr(r.chunks(), name) for name in ("obs", "action", "prev_action", "prev_reward", "mask"))))
    assert key(a) == key(b)
    feed(b, 0, 99, 0, 8, end="truncated")  # and it goes on working
    check_chunks(b)
    with pytest.raises(ValueError, match="do not fit"):
        SequenceReplay(capacity=400, seq_len=4, overlap=0, obs_dim=D, act_dim=A).load(a.export())


def test_the_file_keeps_the_chunk_columns_in_their_order() -> None:
    """c_meta is int64 fill, context, terminal, stream, has_state, prev_given: files written before load."""
    replay = SequenceReplay(capacity=400, seq_len=4, overlap=1, obs_dim=D, act_dim=A, state_dim=3)
    h0 = np.zeros(3, np.float32)
    replay.add(StepBatch(("actor0", "bot"), 0, 6, **steps(0, 0, 6, 6), terminated=True, truncated=False,
                         prev_action=np.array([0.5], np.float32), prev_reward=1.0, state=(h0, h0)))
    feed(replay, 1, 0, 0, 2, end="truncated")
    meta = replay.export()["c_meta"]
    assert meta.dtype == np.int64
    assert meta.tolist() == [[4, 0, 0, 0, 1, 1], [3, 1, 1, 0, 0, 1], [2, 0, 0, 1, 0, 0]]


def test_a_file_from_the_old_layout_is_refused_by_name() -> None:
    replay = SequenceReplay(capacity=400, seq_len=8, overlap=2, obs_dim=D, act_dim=A)
    old = {"obs": np.zeros((3, 9, D), np.float32), "mask": np.zeros((3, 8), np.float32)}  # format 1: one copy per chunk
    with pytest.raises(ValueError, match="format 3"):
        replay.load(old)


def test_a_batch_bigger_than_the_ring_keeps_its_newest_steps() -> None:
    replay = SequenceReplay(capacity=40, seq_len=8, overlap=4, obs_dim=D, act_dim=A)
    feed(replay, 0, 0, 0, 100, end="terminated")
    check_chunks(replay)
    chunks = replay.chunks()
    trained = sorted(int(t) for t in chunks.obs[:, :8, 2][chunks.mask == 1])
    assert trained == list(range(trained[0], 100)) and trained[0] >= 60  # only the newest steps, all of them
    assert replay.evicted + replay.transitions == 100
    assert chunks.terminated.sum() == 1


def test_a_batch_longer_than_a_piece_goes_in_whole() -> None:
    replay = SequenceReplay(capacity=100_000, seq_len=16, overlap=8, obs_dim=D, act_dim=A)
    feed(replay, 0, 0, 0, 5000, end="truncated")  # over the 4096 steps one add writes at once
    check_chunks(replay)
    chunks = replay.chunks()
    assert sorted(int(t) for t in chunks.obs[:, :16, 2][chunks.mask == 1]) == list(range(5000))
    assert replay.transitions == 5000 and replay.evicted == 0


def test_sample_scales_actions_and_keeps_padding_zero() -> None:
    replay = SequenceReplay(capacity=1000, seq_len=8, overlap=0, obs_dim=D, act_dim=A)
    feed(replay, 0, 0, 0, 5, end="terminated")  # one partial chunk: 5 steps, 3 of padding
    batch = replay.sample(4, scale=lambda a: 2.0 * a - 1.0)
    t = np.arange(5)
    assert np.allclose(batch.action[:, :5, 0], 2.0 * (t % 7 / 7) - 1.0)
    assert not batch.action[:, 5:].any() and not batch.reward[:, 5:].any() and not batch.obs[:, 6:].any()
    assert not batch.prev_action.any()  # zero in the policy's units before an episode, as the actor has it
    assert batch.terminated[0].tolist() == [0, 0, 0, 0, 1, 0, 0, 0]
    # A segment that starts mid-episode brings its previous action (in the bot's units), scaled like the rest.
    replay.add(StepBatch(("actor1", "bot"), 0, 10, **steps(1, 0, 10, 8), terminated=False, truncated=True,
                         prev_action=np.array([0.25], np.float32), prev_reward=3.0))
    chunks = replay.chunks()
    mid = (chunks.obs[:, 0, 0] == 1) & (chunks.obs[:, 0, 2] == 10)  # the segment's first chunk
    assert mid.sum() == 1 and np.allclose(chunks.prev_action[mid], 0.25) and np.allclose(chunks.prev_reward[mid], 3.0)


def test_a_chunk_that_starts_where_a_batch_started_brings_that_batchs_stored_state() -> None:
    replay = SequenceReplay(capacity=1000, seq_len=4, overlap=0, obs_dim=D, act_dim=A, state_dim=3)
    h0, c0 = np.full(3, 0.5, np.float32), np.full(3, -0.5, np.float32)
    replay.add(StepBatch(("actor0", "bot"), 0, 0, **steps(0, 0, 0, 3), terminated=True, truncated=False, state=(h0, c0)))
    chunks = replay.chunks()
    assert np.array_equal(chunks.h0, [h0]) and np.array_equal(chunks.c0, [c0])
    feed(replay, 1, 0, 0, 8, end="truncated")  # two chunks without a state: they start from zero
    chunks = replay.chunks()
    assert np.array_equal(chunks.h0, [h0, np.zeros(3), np.zeros(3)]) and np.array_equal(chunks.c0[0], c0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(1, 12), st.sampled_from(["", "", "", "truncated"]),
                          st.booleans(), st.sampled_from([0, 0, 0, 1, 3])), min_size=1, max_size=30),
       st.integers(2, 8), st.data())
def test_every_chunk_gets_the_state_of_the_batch_that_began_at_its_first_step(plan: list, seq_len: int,
                                                                              data: st.DataObject) -> None:
    """R2D2's stored state for every chunk, not only a segment's first: a chunk whose first step began a
    batch that brought a state starts from it; any other chunk starts from zero. Gaps start segments
    mid-episode; every step is still trained on exactly once."""
    overlap = data.draw(st.integers(0, seq_len - 1))
    replay = SequenceReplay(capacity=4000, seq_len=seq_len, overlap=overlap, obs_dim=D, act_dim=A, state_dim=D)
    t, episode, began, fed = [0, 0], [0, 0], set(), []
    for stream, n, end, with_state, gap in plan:
        t[stream] += gap  # steps lost on the way: the next batch starts a new segment
        fed += [(stream, episode[stream], t[stream] + i) for i in range(n)]
        first = steps(stream, episode[stream], t[stream], n)["obs"][0]
        state = (first, -first) if with_state else None
        if with_state:
            began.add(tuple(first.tolist()))
        replay.add(StepBatch((f"actor{stream}", "bot"), episode[stream], t[stream], **steps(stream, episode[stream], t[stream], n),
                             terminated=False, truncated=end == "truncated", state=state))
        t[stream] += n
        if end:
            t[stream], episode[stream] = 0, episode[stream] + 1
    for stream in (0, 1):  # end both episodes: the open chunks are committed
        fed.append((stream, episode[stream], t[stream]))
        feed(replay, stream, episode[stream], t[stream], 1, end="truncated")
    check_chunks(replay)
    chunks = replay.chunks()
    trained = chunks.obs[:, :-1][chunks.mask == 1]
    assert sorted(map(tuple, trained.astype(int).tolist())) == sorted(fed)
    firsts = chunks.obs[:, 0]
    want = np.array([f if tuple(f.tolist()) in began else np.zeros(D) for f in firsts], np.float32)
    assert replay.with_state == pytest.approx(np.mean([tuple(f.tolist()) in began for f in firsts]) if len(firsts) else 0.0)
    if not want.any():
        assert chunks.h0 is None or not chunks.h0.any()
        return
    assert np.array_equal(chunks.h0, want) and np.array_equal(chunks.c0, -want)




@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 12), st.sampled_from(["", "", "", "truncated"]), st.sampled_from([0, 0, 0, 1, 5])),
                min_size=1, max_size=30),
       st.integers(2, 8), st.data())
def test_chunks_start_on_the_stride_so_an_actor_asked_for_state_gives_every_chunk_one(
        plan: list, seq_len: int, data: st.DataObject) -> None:
    """An actor asked for state (state_every = seq_len - overlap) begins a batch at every multiple of it and
    wherever it resumes after a gap. A segment that starts off the stride gets a shorter first chunk, so that
    every later chunk starts on it: every chunk then starts from a stored state."""
    overlap = data.draw(st.integers(0, seq_len - 1))
    stride = seq_len - overlap
    replay = SequenceReplay(capacity=4000, seq_len=seq_len, overlap=overlap, obs_dim=D, act_dim=A, state_dim=D)
    t, episode = 0, 0
    for n, end, gap in plan:
        t += gap
        cuts = [c for c in range(t + 1, t + n) if c % stride == 0]  # the actor flushes at multiples of state_every
        for a, b in zip([t, *cuts], [*cuts, t + n]):
            first = steps(0, episode, a, 1)["obs"][0]
            replay.add(StepBatch(("actor0", "bot"), episode, a, **steps(0, episode, a, b - a), terminated=False,
                                 truncated=bool(end) and b == t + n, state=(first, -first)))
        t += n
        if end:
            t, episode = 0, episode + 1
    check_chunks(replay)
    chunks = replay.chunks()
    if len(chunks.mask):
        assert replay.with_state == 1.0
        assert np.array_equal(chunks.h0, chunks.obs[:, 0])
