"""Sequence replay: a ring of steps, and a table of chunks that index into it.

Every step that arrives is written once, to the next rows of one ring
(observation, action, reward, as the bot sent them). A chunk is `seq_len`
consecutive steps of one stream (one bot of one actor) and one episode, named
by their absolute step numbers (ring row = number % capacity), plus the step
before it. A full chunk is committed and the next one starts on its last
`overlap` steps as context (masked out of the losses there, so every step is
trained on once); an episode's end, or a gap in a stream, commits the partial
chunk, padded and masked. All the full chunks one batch completes are strided
windows of the stream's recent step numbers, so ingest costs a handful of
array writes per batch, however many chunks it completes.

Stored state (R2D2): a batch may bring the actor's LSTM state at its first
step. It is kept by step number until a chunk commits, and a chunk whose first
step began a batch gets that state; any other chunk starts from zero. Actors
asked for state begin a batch wherever a chunk begins (protocol `state_every`).

Nothing is evicted eagerly. A chunk is live while the oldest step it needs is
still in the ring and its slot has not been reused; `_refresh` finds the live
ones with one vectorised pass over the table when they are next asked for (once
per training pass, as the learner drains before it trains). Sampling is
uniform over live chunks in O(batch).

Memory is allocated once, at construction, and reported by `nbytes`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from protocol import DEFAULT_LIMITS

OPPONENT_POLICIES = ("keep", "clear")
EXPORT_FORMAT = 3  # the replay file layout `export` writes and `load` reads

# What the chunk table holds about a chunk besides its steps: one int64 each, in the order of the
# replay file's c_meta columns.
CHUNK_META = np.dtype([
    ("fill", np.int64),  # steps the chunk holds, the rest is padding; 0: the slot is empty or dropped
    ("context", np.int64),  # leading steps shared with the previous chunk: context only, masked out of the losses
    ("terminal", np.int64),  # its last step ended the episode by termination (not truncation)
    ("stream", np.int64),  # the id of its stream in this process; -1 when loaded from a file
    ("has_state", np.int64),  # it carries the actor's recurrent state at its first step (that step began a batch)
    # The step before the chunk is in the ring or came with the batch; 0 for an episode's first chunk,
    # whose previous action is zero in the policy's units.
    ("prev_given", np.int64),
])

MIN_CHUNKS_HELD = 2  # the ring must hold a chunk being trained while the next one is written


def min_capacity(seq_len: int) -> int:
    """The smallest replay for a chunk length: one rule, checked at config and at construction alike."""
    return MIN_CHUNKS_HELD * seq_len


@dataclass(frozen=True)
class ChunkShape:
    """How an episode is cut into chunks: `seq_len` steps each, the first `overlap` of them shared with the
    chunk before as context. The one home of the chunks' geometry: the replay cuts by it, the learner's
    config fits it to a memory horizon, and actors asked for state begin a batch on its stride."""

    seq_len: int
    overlap: int

    def __post_init__(self) -> None:
        if self.seq_len < 1:
            raise ValueError(f"seq_len must be at least 1, got {self.seq_len}")
        if not 0 <= self.overlap < self.seq_len:
            raise ValueError(f"overlap must be in 0..seq_len-1 ({self.seq_len - 1}), got {self.overlap}: "
                             "a chunk made only of context would never be trained on")

    @property
    def stride(self) -> int:
        """Steps from one chunk's start to the next within an episode: the steps each chunk trains (the rest
        is context), and the protocol's `state_every`."""
        return self.seq_len - self.overlap

    def with_context(self, steps: int) -> ChunkShape:
        """This shape with at least `steps` steps of context: overlap raised to `steps` and seq_len by as much,
        so the stride (the steps each chunk trains) stays; a longer overlap is kept as it is."""
        grow = max(0, steps - self.overlap)
        return ChunkShape(self.seq_len + grow, self.overlap + grow)


class StepBatch(NamedTuple):
    """Consecutive steps of one episode of one stream, as one experience batch brought them; its last
    step may end the episode. A named tuple rather than a frozen dataclass: one is built for every
    batch ingested, and a tuple builds in a quarter of the time."""

    key: tuple[str, str]  # the stream: (actor process, bot)
    episode: int
    t0: int  # the episode step of obs[0]
    obs: np.ndarray  # (n, obs_dim)
    action: np.ndarray  # (n, act_dim), in the bot's units
    reward: np.ndarray  # (n,)
    next_obs: np.ndarray  # (n, obs_dim)
    terminated: bool  # the last step ended the episode (no bootstrap past it)
    truncated: bool  # the episode was cut off after the last step
    prev_action: np.ndarray | None = None  # the action before obs[0], when the batch brought it
    prev_reward: float | None = None  # and the reward before it
    state: tuple[np.ndarray, np.ndarray] | None = None  # (h0, c0): the actor's recurrent state at obs[0]
    target: np.ndarray | None = None  # (n, act_dim), the bot's units: a supervised target per action part, NaN: none

    def piece(self, s: int, e: int) -> StepBatch:
        """Steps s..e-1 as a batch of their own: the episode's end goes with the last piece, what
        came before the batch with the first."""
        first, last = s == 0, e == len(self.reward)
        return StepBatch(self.key, self.episode, self.t0 + s, self.obs[s:e], self.action[s:e], self.reward[s:e],
                         self.next_obs[s:e], self.terminated and last, self.truncated and last,
                         self.prev_action if first else None, self.prev_reward if first else None,
                         self.state if first else None, None if self.target is None else self.target[s:e])


@dataclass(frozen=True)
class _Chunks:
    """The chunk table: slot i of every array is one chunk, which names its steps by their absolute
    numbers (ring row = number % capacity)."""

    steps: np.ndarray  # (C, L + 1) int64: the step before the chunk (-1: none in the ring), then its steps
    meta: np.ndarray  # (C,) CHUNK_META
    rows: np.ndarray  # (C, 6) int64: meta's memory as plain rows: the replay file's c_meta, one write per row template
    next_obs: np.ndarray  # (C, obs_dim): the observation after the last step
    prev_action: np.ndarray  # (C, act_dim) and
    prev_reward: np.ndarray  # (C,): what came before a segment's first chunk when its batch brought it
    state: np.ndarray | None  # (C, 2, state_dim): h0, c0 at the chunk's first step, if a batch brought it; None without state

    @staticmethod
    def allocate(slots: int, seq_len: int, obs_dim: int, act_dim: int, state_dim: int) -> _Chunks:
        meta = np.zeros(slots, CHUNK_META)
        return _Chunks(steps=np.full((slots, seq_len + 1), -1, np.int64), meta=meta,
                       rows=meta.view(np.int64).reshape(slots, -1),
                       next_obs=np.zeros((slots, obs_dim), np.float32),
                       prev_action=np.zeros((slots, act_dim), np.float32), prev_reward=np.zeros(slots, np.float32),
                       state=np.zeros((slots, 2, state_dim), np.float32) if state_dim else None)

    @property
    def nbytes(self) -> int:
        held = (self.steps, self.meta, self.next_obs, self.prev_action, self.prev_reward, self.state)
        return sum(a.nbytes for a in held if a is not None)


@dataclass
class _OpenChunk:
    """A stream's open chunk: the segment's recent step numbers it is cut from, and where it starts."""

    hist: np.ndarray  # step numbers of the segment's recent steps, hist[:h]; hist[start - 1] is the step before the open chunk
    windows: np.ndarray  # every (seq_len + 1)-long window of hist: a view, made once
    next_obs: np.ndarray  # the latest batch's next observations
    h: int = 0
    start: int = 1
    context: int = 0  # leading steps of the open chunk that are context only (shared with the previous chunk)
    first: bool = True  # the open chunk is the segment's first
    # A segment's first chunk, when the segment starts off the stride (mid-episode, after a gap): the steps it
    # holds, so that every later chunk starts at an episode step that is a multiple of the stride. 0: seq_len.
    cut: int = 0


@dataclass
class _SegmentStart:
    """What a segment's first batch brought, for the segment's first chunk only."""

    prev_action: np.ndarray  # the action before the segment (zero when the batch did not bring it)
    prev_reward: float = 0.0
    prev_given: bool = False  # the batch brought the action and reward before it


@dataclass
class _Stream:
    """One stream (one bot of one actor): where it stands in its episode, its open chunk, and what
    its current segment began with."""

    sid: int
    full: np.ndarray  # the meta row of a full chunk of this stream, as int64 (see _Chunks.rows)
    open: _OpenChunk
    segment: _SegmentStart
    # The actor's (h0, c0) at the first step of each batch of the segment not yet behind a committed chunk,
    # by step number: any chunk that starts where a batch started gets its state (R2D2's stored state).
    states: dict[int, np.ndarray] = field(default_factory=dict)
    episode: int = -1
    next_t: int = 0
    opponent: str | None = None
    ended: bool = True


@dataclass
class SampledBatch:
    """B chunks as numpy arrays (see learner.sac.Batch for the meaning of each)."""

    obs: np.ndarray
    action: np.ndarray
    prev_action: np.ndarray
    prev_reward: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    mask: np.ndarray
    h0: np.ndarray | None = None
    c0: np.ndarray | None = None
    target: np.ndarray | None = None  # (B, L, act_dim) in the policy's units, 0 where target_mask is 0
    target_mask: np.ndarray | None = None  # (B, L, act_dim): 1 where a step's action part has a target and counts


class SequenceReplay:
    """Bounded storage of steps and chunks; `add` takes one experience batch of one stream."""

    def __init__(self, capacity: int, seq_len: int, overlap: int, obs_dim: int, act_dim: int,
                 state_dim: int = 0, opponent_policy: str = "keep", seed: int = 0, targets: bool = False) -> None:
        self.shape = ChunkShape(seq_len, overlap)
        if capacity < min_capacity(seq_len):
            raise ValueError(f"capacity ({capacity} transitions) must hold at least {MIN_CHUNKS_HELD} chunks "
                             f"({min_capacity(seq_len)})")
        if opponent_policy not in OPPONENT_POLICIES:
            raise ValueError(f"opponent_policy must be one of {OPPONENT_POLICIES}, got {opponent_policy!r}")
        self.seq_len, self.overlap, self.stride, self.policy = seq_len, overlap, self.shape.stride, opponent_policy
        self.obs_dim, self.act_dim, self.state_dim = obs_dim, act_dim, state_dim
        N, L = capacity, seq_len
        self._n = N
        # Most steps one add writes at once (bigger batches are split): a quarter of the ring at most,
        # and the protocol's default max_steps, which also bounds each stream's history buffer.
        self._piece = max(1, min(N // 4, DEFAULT_LIMITS.max_steps))
        # Chunks per step is 1/stride plus one per episode end: twice the first term holds everything
        # while episodes are at least that long; shorter ones reuse slots sooner.
        C = self.slots = min(N, 2 * math.ceil(N / self.stride) + 1)
        self.s_obs = np.zeros((N, obs_dim), np.float32)
        self.s_action = np.zeros((N, act_dim), np.float32)
        self.s_reward = np.zeros(N, np.float32)
        # Action targets (protocol `target`), kept only when the learner trains on them: NaN where a step has none.
        self.s_target = np.full((N, act_dim), np.nan, np.float32) if targets else None
        self._head = 0  # number of the next step; steps below head - capacity are gone
        self._chunks = _Chunks.allocate(C, L, obs_dim, act_dim, state_dim)
        self._next_slot = 0
        # Rows by (context, fill): the loss mask (1 on context..fill-1), the steps that exist (< fill), the last one.
        steps, upto = np.arange(L), np.arange(L + 1)[:, None]
        self._masks = ((steps >= upto[:, :, None]) & (steps < upto[None, :, :])).astype(np.float32)
        self._valid = (steps < upto).astype(np.float32)
        self._last = (steps == upto - 1).astype(np.float32)
        self._streams: dict[tuple[str, str], _Stream] = {}
        self._live = np.zeros(0, np.int64)  # live slots as of the last refresh
        self._transitions = 0
        self._dirty = False
        self.committed = 0  # trainable steps ever committed: live + evicted + dropped_by_clear
        self.dropped_by_clear = 0
        self._rng = np.random.default_rng(seed)

    @property
    def nbytes(self) -> int:
        fixed = sum(a.nbytes for name, a in vars(self).items() if isinstance(a, np.ndarray) and name != "_live")
        return fixed + self._chunks.nbytes + 8 * self.slots  # the live list is rebuilt as it goes, at most one int64 per slot

    @property
    def capacity(self) -> int:
        return self._n

    @property
    def n_live(self) -> int:
        self._refresh()
        return len(self._live)

    @property
    def transitions(self) -> int:
        """Trainable steps in live chunks."""
        self._refresh()
        return self._transitions

    @property
    def with_state(self) -> float:
        """The share of live chunks that start from the actor's stored state (0 without use_stored_state)."""
        self._refresh()
        return float(self._chunks.meta["has_state"][self._live].mean()) if len(self._live) else 0.0

    @property
    def evicted(self) -> int:
        """Trainable steps lost to the ring or the chunk table coming round again."""
        self._refresh()
        return self.committed - self._transitions - self.dropped_by_clear

    # -- writing ---------------------------------------------------------------------------

    def _stream(self, key: tuple[str, str]) -> _Stream:
        stream = self._streams.get(key)
        if stream is None:
            L, sid = self.seq_len, len(self._streams)
            hist = np.zeros(L + self._piece + 3, np.int64)
            full = np.zeros(1, CHUNK_META)
            full["fill"], full["context"], full["stream"], full["prev_given"] = L, self.overlap, sid, 1
            stream = self._streams[key] = _Stream(
                sid=sid, full=full.view(np.int64),
                open=_OpenChunk(hist=hist, windows=np.lib.stride_tricks.sliding_window_view(hist, L + 1),
                                next_obs=np.zeros((0, self.obs_dim), np.float32)),
                segment=_SegmentStart(prev_action=np.zeros(self.act_dim, np.float32)))
        return stream

    def episode_start(self, key: tuple[str, str], opponent: str) -> bool:
        """Note a new opponent; under `clear`, a changed opponent drops the stream's data. True if it did."""
        stream = self._stream(key)
        changed = stream.opponent is not None and opponent != stream.opponent
        stream.opponent = opponent
        if changed and self.policy == "clear":
            self._clear(stream)
            return True
        return False

    def add(self, batch: StepBatch) -> None:
        """Append consecutive steps of one episode; the batch's last step may end the episode.
        A batch that does not continue the stream starts a new segment."""
        n, piece = len(batch.reward), self._piece
        if n > piece:  # a batch bigger than a piece goes in as consecutive pieces
            for s in range(0, n, piece):
                self.add(batch.piece(s, min(n, s + piece)))
            return
        stream = self._streams.get(batch.key) or self._stream(batch.key)
        if stream.ended or batch.episode != stream.episode or batch.t0 != stream.next_t:
            self._commit_open(stream, False)
            self._begin(stream, batch)
        self._write(batch.obs, batch.action, batch.reward, batch.target)
        state = batch.state
        if state is not None and self.state_dim and state[0].shape == state[1].shape == (self.state_dim,):
            stream.states[self._head - n] = np.stack(state)
        chunk = stream.open
        h = chunk.h
        chunk.hist[h:h + n] = np.arange(self._head - n, self._head)  # the new steps' numbers
        chunk.h, chunk.next_obs = h + n, batch.next_obs
        ended = batch.terminated or batch.truncated
        self._commit_full(stream, ended)
        stream.episode, stream.next_t = batch.episode, batch.t0 + n
        if ended:
            self._commit_open(stream, batch.terminated)
            stream.ended = True

    def _write(self, obs: np.ndarray, action: np.ndarray, reward: np.ndarray, target: np.ndarray | None = None) -> None:
        """Put n steps on the next ring rows, contiguous: a lap's last few rows may go unused."""
        N, n = self._n, len(reward)
        r = self._head % N
        if r + n > N:
            self._head += N - r
            r = 0
        self._head += n
        self._dirty = True  # steps went: chunks that needed them are no longer live
        self.s_obs[r:r + n], self.s_action[r:r + n], self.s_reward[r:r + n] = obs, action, reward
        if self.s_target is not None:
            self.s_target[r:r + n] = np.nan if target is None else target

    def _begin(self, stream: _Stream, batch: StepBatch) -> None:
        """A new segment: an empty open chunk with no step before it, and what the batch brought."""
        chunk, seg = stream.open, stream.segment
        chunk.hist[0] = -1  # no step before the segment's first chunk in the ring
        chunk.h, chunk.start, chunk.context, chunk.first = 1, 1, 0, True
        stream.ended = False
        stream.states.clear()  # what the last segment left, if its open chunk was not committed
        off = batch.t0 % self.stride
        chunk.cut = self.seq_len - off if off else 0
        mid_episode = batch.t0 > 0
        seg.prev_given = batch.prev_action is not None and mid_episode
        seg.prev_action[:] = batch.prev_action if seg.prev_given else 0.0
        seg.prev_reward = float(batch.prev_reward) if (batch.prev_reward is not None and mid_episode) else 0.0

    def _commit_full(self, stream: _Stream, ended: bool) -> None:
        """Commit every full chunk the latest batch completed, and open the next one on the last
        `overlap` steps. A full chunk that ends the episode is left to `_commit_open`.

        Chunk j starts `stride * j` steps after the open one, so the chunks' step numbers are
        one strided slice of the stream's windows."""
        L, o, stride = self.seq_len, self.overlap, self.stride
        chunk, table = stream.open, self._chunks
        if chunk.cut:
            if chunk.h - chunk.start < chunk.cut + ended:
                return
            self._commit_cut(stream)
        start, total = chunk.start, chunk.h
        room = total - start - L - ended
        if room < 0:
            return
        m = room // stride + 1
        end = start + stride * m  # the next open chunk's start
        a = self._claim(m)
        sl = slice(a, a + m)
        table.steps[sl] = chunk.windows[start - 1:end - 1:stride]
        table.rows[sl] = stream.full
        e = start + L - 1 - (total - len(chunk.next_obs))  # first chunk's last step in the batch
        table.next_obs[sl] = chunk.next_obs[e:e + stride * m:stride]
        if chunk.first:
            self._first_of_segment(stream, a)
        self.committed += m * stride + o - chunk.context
        self._dirty = True
        kept = total - end + 1
        chunk.hist[:kept] = chunk.hist[end - 1:total]
        chunk.h, chunk.start, chunk.context, chunk.first = kept, 1, o, False
        if stream.states:
            self._store_states(stream, a, m)
            self._forget_states(stream)

    def _commit_cut(self, stream: _Stream) -> None:
        """Commit a segment's shortened first chunk (see `_OpenChunk.cut`) and open the next one on its last
        `overlap` steps, on the stride: the actor begins a batch there, and its stored state with it."""
        chunk, table = stream.open, self._chunks
        start, total, cut = chunk.start, chunk.h, chunk.cut
        a = self._claim(1)
        table.steps[a, :cut + 1] = chunk.hist[start - 1:start + cut]
        table.steps[a, cut + 1:] = chunk.hist[start + cut - 1]  # padding: any step of the chunk will do
        table.rows[a] = stream.full
        table.meta["fill"][a] = cut
        # Its last step is in the latest batch: before that batch the segment held fewer than `cut` steps.
        table.next_obs[a] = chunk.next_obs[start + cut - 1 - (total - len(chunk.next_obs))]
        self._first_of_segment(stream, a)
        self.committed += cut
        self._dirty = True
        reopen = start + cut - self.overlap
        kept = total - reopen + 1
        chunk.hist[:kept] = chunk.hist[reopen - 1:total]
        chunk.h, chunk.start, chunk.context, chunk.first, chunk.cut = kept, 1, self.overlap, False, 0
        if stream.states:
            self._store_states(stream, a, 1)
            self._forget_states(stream)

    def _forget_states(self, stream: _Stream) -> None:
        behind = int(stream.open.hist[0])  # the step before the open chunk: no chunk will start at or before it
        for step in [s for s in stream.states if s <= behind]:
            del stream.states[step]

    def _commit_open(self, stream: _Stream, terminal: bool) -> None:
        """Commit the open (partial, or episode-ending) chunk, if it holds a step not trained on before."""
        chunk, table = stream.open, self._chunks
        start, total, context = chunk.start, chunk.h, chunk.context
        fill = total - start
        chunk.h = 0
        if stream.ended or fill <= context:
            return
        a = self._claim(1)
        table.steps[a, :fill + 1] = chunk.hist[start - 1:total]
        table.steps[a, fill + 1:] = chunk.hist[total - 1]  # padding: any step of the chunk will do
        table.rows[a] = stream.full
        table.meta["fill"][a], table.meta["terminal"][a] = fill, terminal
        table.next_obs[a] = chunk.next_obs[-1]
        if chunk.first:
            self._first_of_segment(stream, a)
        if stream.states:
            self._store_states(stream, a, 1)
            stream.states.clear()  # the segment is over
        self.committed += fill - context
        self._dirty = True

    def _first_of_segment(self, stream: _Stream, slot: int) -> None:
        """What only a segment's first chunk carries: no context, and what came with the batch."""
        table, seg = self._chunks, stream.segment
        meta = table.meta
        meta["context"][slot], meta["prev_given"][slot] = stream.open.context, seg.prev_given
        table.prev_action[slot], table.prev_reward[slot] = seg.prev_action, seg.prev_reward

    def _store_states(self, stream: _Stream, a: int, m: int) -> None:
        """Give chunks a..a+m-1 the actor's state at their first step where a batch started there."""
        table = self._chunks
        assert table.state is not None  # states are only kept when the replay holds them
        for slot, first in zip(range(a, a + m), table.steps[a:a + m, 1].tolist()):
            state = stream.states.get(first)
            if state is not None:
                table.state[slot] = state
                table.meta["has_state"][slot] = 1

    def _claim(self, m: int) -> int:
        """The first of m consecutive chunk slots, the oldest in turn (what they held is gone).
        A run that would pass the end of the table starts again at slot 0."""
        a = self._next_slot if self._next_slot + m <= self.slots else 0
        self._next_slot = a + m
        return a

    def _clear(self, stream: _Stream) -> None:
        self._refresh()
        meta = self._chunks.meta
        doomed = self._live[meta["stream"][self._live] == stream.sid]
        self.dropped_by_clear += _trainable(meta.take(doomed))
        meta["fill"][doomed] = 0
        self._dirty = True
        stream.open.h = 0
        stream.states.clear()
        stream.ended = True

    # -- reading ---------------------------------------------------------------------------

    def _refresh(self) -> None:
        """Find the live chunks: filled, and the oldest step each needs still in the ring."""
        if not self._dirty:
            return
        table = self._chunks
        filled = table.meta["fill"] > 0
        self._live = np.flatnonzero(filled & (_oldest(table.steps) >= self._head - self._n))
        self._transitions = _trainable(table.meta.take(self._live))
        self._dirty = False

    def sample(self, batch_size: int, scale: Callable[[np.ndarray], np.ndarray] | None = None) -> SampledBatch:
        """B chunks uniformly at random (with replacement) from the live ones; `scale` maps the
        stored actions to the policy's [-1, 1] (see protocol.scaling.ActionScale)."""
        self._refresh()
        if len(self._live) == 0:
            raise ValueError("replay is empty: nothing to sample")
        return self._gather(self._live[self._rng.integers(0, len(self._live), batch_size)], scale)

    def chunks(self) -> SampledBatch:
        """Every live chunk, in slot order (for tests and inspection)."""
        self._refresh()
        return self._gather(self._live, None)

    def _gather(self, slots: np.ndarray, scale: Callable[[np.ndarray], np.ndarray] | None) -> SampledBatch:
        """Chunks as padded arrays: steps past a chunk's fill are zeros (and masked)."""
        B, L, N, table = len(slots), self.seq_len, self._n, self._chunks
        steps = table.steps[slots]
        meta = table.meta.take(slots)  # take: fancy indexing copies structured rows several times slower
        rows, fill = steps[:, 1:] % N, meta["fill"]
        valid = self._valid[fill]
        obs = np.zeros((B, L + 1, self.obs_dim), np.float32)
        obs[:, :L] = self.s_obs[rows] * valid[..., None]
        obs[np.arange(B), fill] = table.next_obs[slots]
        in_ring, prev_row = steps[:, 0] >= 0, steps[:, 0] % N
        action = self.s_action[rows]
        prev_action = np.where(in_ring[:, None], self.s_action[prev_row], table.prev_action[slots])
        if scale is not None:
            action, prev_action = scale(action), scale(prev_action)
        prev_action *= meta["prev_given"][:, None]  # an episode's first action follows a zero, as the actor acts
        mask = self._masks[meta["context"], fill]
        target = target_mask = None
        if self.s_target is not None:  # NaN (no target) stays NaN through scale, and is masked out
            raw = self.s_target[rows]
            labelled = np.isfinite(raw) & (mask > 0)[..., None]
            target = np.where(labelled, raw if scale is None else scale(raw), 0.0).astype(np.float32)
            target_mask = labelled.astype(np.float32)
        has = meta["has_state"]
        # A chunk without a stored state starts from zero, as it would without stored state at all.
        state = table.state[slots] * has.astype(np.float32)[:, None, None] if table.state is not None and has.any() else None
        return SampledBatch(
            obs=obs, action=action * valid[..., None], prev_action=prev_action,
            prev_reward=np.where(in_ring, self.s_reward[prev_row], table.prev_reward[slots]),
            reward=self.s_reward[rows] * valid, terminated=self._last[fill] * meta["terminal"][:, None].astype(np.float32),
            mask=mask,
            h0=None if state is None else state[:, 0], c0=None if state is None else state[:, 1],
            target=target, target_mask=target_mask,
        )

    # -- persistence -----------------------------------------------------------------------

    def export(self) -> dict[str, np.ndarray]:
        """The ring's window and the live chunks as plain arrays (for --save-replay), step
        numbers counted from the window's start. Open chunks are not kept."""
        self._refresh()
        N, table = self._n, self._chunks
        lo = max(0, self._head - N)
        rows = np.arange(lo, self._head) % N
        live = self._live
        out: dict[str, np.ndarray] = {"format": np.array([EXPORT_FORMAT], np.int64),
               "obs": self.s_obs[rows], "action": self.s_action[rows], "reward": self.s_reward[rows],
               "c_steps": _renumber(table.steps[live], lo), "c_meta": table.rows[live],
               "c_next_obs": table.next_obs[live], "c_prev_action": table.prev_action[live],
               "c_prev_reward": table.prev_reward[live]}
        if table.state is not None:
            out["c_state"] = table.state[live]
        if self.s_target is not None:  # NaN is "no label", but a checkpoint file holds finite floats only
            target = self.s_target[rows]
            labelled = np.isfinite(target)
            out["target"], out["target_set"] = np.where(labelled, target, 0.0).astype(target.dtype), labelled.astype(np.uint8)
        return out

    def load(self, arrays: dict[str, np.ndarray]) -> int:
        """Put an export back (its newest steps and chunks when they do not all fit); returns transitions restored."""
        if "format" not in arrays or int(arrays["format"][0]) != EXPORT_FORMAT:
            raise ValueError(f"replay file layout is not format {EXPORT_FORMAT} (written by another saclstm version)")
        table = self._chunks
        if (arrays["obs"].shape[1:] != self.s_obs.shape[1:] or arrays["action"].shape[1:] != self.s_action.shape[1:]
                or arrays["c_steps"].shape[1:] != table.steps.shape[1:]):
            raise ValueError(f"replay file steps {arrays['obs'].shape[1:]}/{arrays['action'].shape[1:]} and chunks of "
                             f"{arrays['c_steps'].shape[1:]} do not fit this replay ({self.obs_dim}, {self.act_dim}, {self.seq_len})")
        m = len(arrays["reward"])
        drop = max(0, m - self._n)
        k = m - drop
        self.s_obs[:k], self.s_action[:k], self.s_reward[:k] = arrays["obs"][drop:], arrays["action"][drop:], arrays["reward"][drop:]
        if self.s_target is not None:  # a file without targets (or of another width): its steps have none
            fits = "target" in arrays and arrays["target"].shape == arrays["action"].shape
            self.s_target[:k] = arrays["target"][drop:] if fits else np.nan
            if fits and "target_set" in arrays and arrays["target_set"].shape == arrays["target"].shape:
                self.s_target[:k][arrays["target_set"][drop:] == 0] = np.nan  # the steps no label reached
        self._head = k
        keep = np.flatnonzero(_oldest(arrays["c_steps"]) >= drop)[-self.slots:]
        count = len(keep)
        table.steps[:count] = _renumber(arrays["c_steps"][keep], drop)
        table.rows[:count], table.next_obs[:count] = arrays["c_meta"][keep], arrays["c_next_obs"][keep]
        table.prev_action[:count], table.prev_reward[:count] = arrays["c_prev_action"][keep], arrays["c_prev_reward"][keep]
        if table.state is not None and "c_state" in arrays and arrays["c_state"].shape[1:] == table.state.shape[1:]:
            table.state[:count] = arrays["c_state"][keep]
        else:
            table.meta["has_state"][:count] = 0
        table.meta["stream"][:count] = -1  # old streams' ids mean nothing to this process
        table.meta["fill"][count:] = 0
        self._next_slot = count % self.slots
        self._dirty = True
        self._refresh()
        self.committed = self._transitions
        return self._transitions


def _oldest(steps: np.ndarray) -> np.ndarray:
    """The oldest step each chunk needs: the one before it when that is in the ring, else its first."""
    return np.where(steps[:, 0] >= 0, steps[:, 0], steps[:, 1])


def _trainable(meta: np.ndarray) -> int:
    """Steps the chunks (CHUNK_META rows) train on: past their context, up to their fill."""
    return int((meta["fill"] - meta["context"]).sum())


def _renumber(steps: np.ndarray, by: int) -> np.ndarray:
    """Step numbers counted `by` lower; -1 (no step) stays -1."""
    return np.where(steps >= 0, steps - by, -1)
