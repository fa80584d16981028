"""Sequence replay: a ring of steps, and chunks that index into it.

Every step that arrives is written once, to the next rows of one ring
(observation, action, reward). A chunk is `seq_len` ring rows of one stream
(one bot of one actor) and one episode, in order, plus a little metadata; a
full chunk is committed and the next one starts with its last `overlap` steps
as context (masked out of the losses there, so every step is trained on once).
An episode's end, or a gap in a stream, commits the partial chunk, padded and
masked. Overlap therefore costs a few indices, not a second copy of the data,
and ingest does a handful of array writes per message however many chunks it
touches.

A chunk lives until its oldest ring row is overwritten (a heap keyed by that
row's absolute step number finds them) or its chunk slot is reused; both count
as evicted. Sampling is uniform over live chunks in O(batch), so its cost does
not grow with the buffer.

Memory is allocated once, at construction, and reported by `nbytes`.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

OPPONENT_POLICIES = ("keep", "clear")
EXPORT_FORMAT = 2  # the replay file layout `export` writes and `load` reads


@dataclass
class _Stream:
    """Where one stream stands in its episode, and the steps its open chunk may still need."""

    sid: int
    hist: np.ndarray  # absolute step numbers of this segment's recent steps, hist[:h]
    windows: np.ndarray  # every seq_len-long window of hist (a view, made once)
    prev_action: np.ndarray  # the action before the segment, when the message brought it
    state: np.ndarray
    h: int = 0
    start: int = 0  # hist position of the open chunk's first step: 0 opens a segment, 1 when hist[0] is the step before
    context: int = 0  # leading steps of the open chunk that are context only (shared with the previous chunk)
    prev_reward: float = 0.0
    version: int = 0
    next_obs: np.ndarray | None = None  # the latest batch's next observations
    episode: int = -1
    next_t: int = 0
    opponent: str | None = None
    has_state: bool = False
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
    versions: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


class SequenceReplay:
    """Bounded storage of steps and chunks; `add` takes one experience batch of one stream."""

    def __init__(self, capacity: int, seq_len: int, overlap: int, obs_dim: int, act_dim: int,
                 state_dim: int = 0, opponent_policy: str = "keep", seed: int = 0) -> None:
        if seq_len < 1:
            raise ValueError(f"seq_len must be at least 1, got {seq_len}")
        if not 0 <= overlap < seq_len:
            raise ValueError(f"overlap must be in 0..seq_len-1 ({seq_len - 1}), got {overlap}: "
                             "a chunk made only of context would never be trained on")
        if capacity < seq_len:
            raise ValueError(f"capacity ({capacity} transitions) must hold at least one chunk of seq_len {seq_len}")
        if opponent_policy not in OPPONENT_POLICIES:
            raise ValueError(f"opponent_policy must be one of {OPPONENT_POLICIES}, got {opponent_policy!r}")
        self.seq_len, self.overlap, self.policy = seq_len, overlap, opponent_policy
        self.obs_dim, self.act_dim, self.state_dim = obs_dim, act_dim, state_dim
        N, L = capacity, seq_len
        # Chunks per step is 1/(seq_len - overlap) plus one per episode end: twice the first term
        # holds everything while episodes are at least that long; shorter ones evict chunks sooner.
        C = self.slots = min(N, 2 * math.ceil(N / (L - overlap)) + 1)
        self._n = N
        self._piece = max(1, N // 4)  # most steps one add writes at once (bigger batches are split)
        self._ramp = np.arange(self._piece + 2, dtype=np.int64)
        self.s_obs = np.zeros((N, obs_dim), np.float32)
        self.s_action = np.zeros((N, act_dim), np.float32)
        self.s_reward = np.zeros(N, np.float32)
        self._head = 0  # absolute number of the next ring row; row = number % capacity
        self.c_idx = np.zeros((C, L), np.int64)  # absolute step numbers; ring row = number % capacity
        self.c_next_obs = np.zeros((C, obs_dim), np.float32)  # the observation after the last step
        self.c_fill = np.zeros(C, np.int32)
        self.c_context = np.zeros(C, np.int32)
        self.c_terminal = np.zeros(C, np.float32)
        self.c_version = np.zeros(C, np.int64)
        self.c_stream = np.full(C, -1, np.int64)
        self.c_key = np.zeros(C, np.int64)
        self.c_prev = np.full(C, -1, np.int64)  # absolute number of the step before, -1 if it came with the message
        self.c_prev_action = np.zeros((C, act_dim), np.float32)
        self.c_prev_reward = np.zeros(C, np.float32)
        self.c_has_state = np.zeros(C, bool)
        self.c_state = np.zeros((C, 2, state_dim), np.float32) if state_dim else None
        # Rows by (context, fill): the loss mask (1 on context..fill-1), the steps that exist (< fill), the last one.
        steps, upto = np.arange(L), np.arange(L + 1)[:, None]
        self._masks = ((steps >= upto[:, :, None]) & (steps < upto[None, :, :])).astype(np.float32)
        self._valid = (steps < upto).astype(np.float32)
        self._last = (steps == upto - 1).astype(np.float32)
        self._streams: dict[tuple[str, str], _Stream] = {}
        self._heap: list[tuple[int, int]] = []  # (key, slot) of committed chunks
        self._slot_ids = np.arange(C, dtype=np.int64)
        self._live = np.zeros(C, np.int64)  # live slot ids, first n_live valid
        self._pos = np.full(C, -1, np.int64)  # slot -> index in _live, -1 when free
        self.n_live = 0
        self._next_slot = 0
        self.transitions = 0  # trainable steps in live chunks
        self.dropped_by_clear = 0
        self.evicted = 0
        self._rng = np.random.default_rng(seed)

    @property
    def nbytes(self) -> int:
        arrays = [value for value in vars(self).values() if isinstance(value, np.ndarray)]
        return sum(a.nbytes for a in arrays)

    @property
    def capacity(self) -> int:
        return self._n

    # -- writing ---------------------------------------------------------------------------

    def _stream(self, key: tuple[str, str]) -> _Stream:
        stream = self._streams.get(key)
        if stream is None:
            hist = np.zeros(self.seq_len + self._piece + 2, np.int64)
            stream = self._streams[key] = _Stream(
                sid=len(self._streams), hist=hist, windows=np.lib.stride_tricks.sliding_window_view(hist, self.seq_len),
                prev_action=np.zeros(self.act_dim, np.float32), state=np.zeros((2, self.state_dim), np.float32))
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

    def add(self, key: tuple[str, str], episode: int, t0: int, version: int, obs: np.ndarray, action: np.ndarray,
            reward: np.ndarray, next_obs: np.ndarray, terminated: bool, truncated: bool,
            prev_action: np.ndarray | None = None, state: tuple[np.ndarray, np.ndarray] | None = None,
            prev_reward: float | None = None) -> None:
        """Append consecutive steps of one episode (actions already in [-1, 1]); the batch's
        last step may end the episode. A batch that does not continue the stream starts a new segment."""
        n, piece = len(reward), self._piece
        if n > piece:  # a batch bigger than a quarter of the ring goes in as consecutive pieces
            for s in range(0, n, piece):
                e = min(n, s + piece)
                self.add(key, episode, t0 + s, version, obs[s:e], action[s:e], reward[s:e], next_obs[s:e],
                         terminated and e == n, truncated and e == n, prev_action if s == 0 else None,
                         state if s == 0 else None, prev_reward if s == 0 else None)
            return
        stream = self._stream(key)
        if stream.ended or episode != stream.episode or t0 != stream.next_t:
            self._commit_open(stream, False)
            self._begin(stream, t0, prev_action, state, prev_reward)
        self._write(obs, action, reward)
        h = stream.h
        stream.hist[h:h + n] = self._ramp[:n]
        stream.hist[h:h + n] += self._head - n
        stream.h, stream.version, stream.next_obs = h + n, version, next_obs
        ended = terminated or truncated
        self._commit_full(stream, ended)
        stream.episode, stream.next_t = episode, t0 + n
        if ended:
            self._commit_open(stream, terminated)
            stream.ended = True

    def _write(self, obs: np.ndarray, action: np.ndarray, reward: np.ndarray) -> None:
        """Put n steps on the next ring rows, contiguous (a lap's last few rows may go unused);
        chunks that needed the overwritten rows go."""
        N, n = self._n, len(reward)
        r = self._head % N
        if r + n > N:
            self._head += N - r
            r = 0
        self._head += n
        self._evict_older_than(self._head - N)
        self.s_obs[r:r + n], self.s_action[r:r + n], self.s_reward[r:r + n] = obs, action, reward

    def _evict_older_than(self, oldest: int) -> None:
        heap = self._heap
        while heap and heap[0][0] < oldest:
            key, slot = heapq.heappop(heap)
            if self._pos[slot] >= 0 and self.c_key[slot] == key:
                self.evicted += int(self.c_fill[slot] - self.c_context[slot])
                self._release(slot)

    def _begin(self, stream: _Stream, t0: int, prev_action: np.ndarray | None,
               state: tuple[np.ndarray, np.ndarray] | None, prev_reward: float | None) -> None:
        stream.h = stream.start = stream.context = 0
        stream.ended = False
        stream.prev_action[:] = prev_action if (prev_action is not None and t0 > 0) else 0.0
        stream.prev_reward = float(prev_reward) if (prev_reward is not None and t0 > 0) else 0.0
        stream.has_state = state is not None and self.state_dim > 0 and state[0].shape == (self.state_dim,)
        if stream.has_state and state is not None:
            stream.state[0], stream.state[1] = state

    def _commit_full(self, stream: _Stream, ended: bool) -> None:
        """Commit, in one go, every full chunk the latest batch completed, and open the next one
        on the last `overlap` steps. A full chunk that ends the episode is left to `_commit_open`.

        Chunk j starts `stride * j` steps after the open one, so every per-chunk array is a
        strided view of the stream's history: no per-chunk Python work but the heap."""
        L, o, stride, N = self.seq_len, self.overlap, self.seq_len - self.overlap, self._n
        start, total, hist = stream.start, stream.h, stream.hist
        room = total - start - L - ended
        if room < 0:
            return
        m = room // stride + 1
        end = start + stride * m  # the next open chunk's start
        first = start == 0  # the segment's first chunk has no step before it in the ring
        skip = int(first)  # chunks whose step before them is in hist
        prev = hist[start - 1 + stride * skip:end - 1:stride]
        keys = np.empty(m, np.int64)
        keys[skip:] = prev
        if first:
            keys[0] = hist[0]
        stale = int(np.searchsorted(keys, self._head - N))  # keys grow along the stream
        if stale:  # steps overwritten while the chunks were open: only the newer ones can go in
            self.evicted += (L - stream.context) + (stale - 1) * stride
        if stale < m:
            n = len(stream.next_obs)  # type: ignore[arg-type]
            e = start + L - 1 - (total - n)  # the first chunk's last step, within the latest batch
            lo = start + stride * stale
            self._put(stream, prev[max(0, stale - skip):], keys[stale:], stream.context if stale == 0 else o,
                      first and stale == 0, stream.windows[lo:end:stride],
                      stream.next_obs[e + stride * stale:e + stride * m:stride])  # type: ignore[index]
        kept = total - end + 1
        hist[:kept] = hist[end - 1:total]
        stream.h, stream.start, stream.context, stream.has_state = kept, 1, o, False

    def _commit_open(self, stream: _Stream, terminal: bool) -> None:
        """Commit the open (partial, or episode-ending) chunk, if it holds a step not trained on before."""
        start, total, hist = stream.start, stream.h, stream.hist
        fill, context = total - start, stream.context
        stream.h = stream.start = stream.context = 0
        if stream.ended or fill <= context:
            return
        if hist[0] < self._head - self._n:  # hist[0] is the oldest step the chunk needs
            self.evicted += fill - context
            return
        assert stream.next_obs is not None
        rows = np.zeros((1, self.seq_len), np.int64)
        rows[0, :fill] = hist[start:total]
        self._put(stream, hist[:start], hist[:1], context, start == 0, rows, stream.next_obs[-1:], fill, terminal)

    def _put(self, stream: _Stream, prev: np.ndarray, keys: np.ndarray, first_context: int, first_of_segment: bool,
             steps: np.ndarray, next_obs: np.ndarray, fill: int | None = None, terminal: bool = False) -> None:
        """Write chunks (oldest first) into consecutive slots and make them live. `steps` are absolute
        step numbers, `keys` the oldest step each chunk needs, `prev` the step before each chunk, less
        the first chunk's when the segment starts with it."""
        m = len(keys)
        a = self._claim(m)
        sl, N = slice(a, a + m), self._n
        fill = self.seq_len if fill is None else fill
        self.c_idx[sl] = steps
        self.c_next_obs[sl] = next_obs
        self.c_fill[sl], self.c_context[sl], self.c_terminal[sl] = fill, self.overlap, terminal
        self.c_context[a] = first_context
        self.c_version[sl], self.c_stream[sl], self.c_key[sl] = stream.version, stream.sid, keys
        self.c_has_state[sl] = False
        if first_of_segment:
            self.c_prev[a], self.c_prev_action[a], self.c_prev_reward[a] = -1, stream.prev_action, stream.prev_reward
            self.c_has_state[a] = stream.has_state
            if self.c_state is not None and stream.has_state:
                self.c_state[a] = stream.state
        self.c_prev[a + first_of_segment:a + m] = prev
        for key, slot in zip(keys.tolist(), range(a, a + m)):
            heapq.heappush(self._heap, (key, slot))
        n_live = self.n_live
        self._pos[sl] = self._slot_ids[n_live:n_live + m]
        self._live[n_live:n_live + m] = self._slot_ids[sl]
        self.n_live = n_live + m
        self.transitions += m * fill - (m - 1) * self.overlap - first_context

    def _claim(self, m: int) -> int:
        """The first of m consecutive chunk slots, the oldest in turn; chunks still in them are
        evicted. A run that would pass the end of the table starts again at slot 0."""
        a = self._next_slot if self._next_slot + m <= self.slots else 0
        self._next_slot = (a + m) % self.slots
        busy = self._pos[a:a + m] >= 0
        if busy.any():
            for slot in np.flatnonzero(busy).tolist():
                self.evicted += int(self.c_fill[a + slot] - self.c_context[a + slot])
                self._release(a + slot)
        return a

    def _release(self, slot: int) -> None:
        """Swap-remove a slot from the live list: O(1)."""
        i, last = self._pos[slot], self._live[self.n_live - 1]
        self._live[i], self._pos[last] = last, i
        self._pos[slot] = -1
        self.n_live -= 1
        self.transitions -= int(self.c_fill[slot] - self.c_context[slot])

    def _clear(self, stream: _Stream) -> None:
        live = self._live[:self.n_live]
        for slot in live[self.c_stream[live] == stream.sid]:
            self.dropped_by_clear += int(self.c_fill[slot] - self.c_context[slot])
            self._release(int(slot))
        stream.h = stream.start = stream.context = 0
        stream.ended = True

    # -- reading ---------------------------------------------------------------------------

    def sample(self, batch_size: int) -> SampledBatch:
        """B chunks uniformly at random (with replacement) from the live ones."""
        if self.n_live == 0:
            raise ValueError("replay is empty: nothing to sample")
        return self._gather(self._live[self._rng.integers(0, self.n_live, batch_size)])

    def chunks(self) -> SampledBatch:
        """Every live chunk, in slot order (for tests and inspection)."""
        return self._gather(np.sort(self._live[:self.n_live]))

    def _gather(self, slots: np.ndarray) -> SampledBatch:
        """Chunks as padded arrays: steps past a chunk's fill are zeros (and masked)."""
        B, L = len(slots), self.seq_len
        idx, fill = self.c_idx[slots] % self._n, self.c_fill[slots]
        valid = self._valid[fill]
        obs = np.zeros((B, L + 1, self.obs_dim), np.float32)
        obs[:, :L] = self.s_obs[idx] * valid[..., None]
        obs[np.arange(B), fill] = self.c_next_obs[slots]
        prev = self.c_prev[slots]
        in_ring, prev_row = prev >= 0, prev % self._n
        has = self.c_has_state[slots]
        state = self.c_state[slots] if self.c_state is not None and B and has.all() else None
        return SampledBatch(
            obs=obs, action=self.s_action[idx] * valid[..., None],
            prev_action=np.where(in_ring[:, None], self.s_action[prev_row], self.c_prev_action[slots]),
            prev_reward=np.where(in_ring, self.s_reward[prev_row], self.c_prev_reward[slots]),
            reward=self.s_reward[idx] * valid, terminated=self._last[fill] * self.c_terminal[slots, None],
            mask=self._masks[self.c_context[slots], fill],
            h0=None if state is None else state[:, 0], c0=None if state is None else state[:, 1],
            versions=self.c_version[slots],
        )

    # -- persistence -----------------------------------------------------------------------

    _CHUNK_ARRAYS = ("c_next_obs", "c_fill", "c_context", "c_terminal", "c_version", "c_prev_action", "c_prev_reward",
                     "c_has_state")

    def export(self) -> dict[str, np.ndarray]:
        """The ring's live window and the live chunks, oldest first, as plain arrays (for --save-replay).
        Steps are renumbered from the window's start. Open chunks are not kept."""
        N = self.capacity
        lo = max(0, self._head - N)
        rows = np.arange(lo, self._head) % N
        live = self._live[:self.n_live]
        live = live[np.argsort(self.c_key[live], kind="stable")]
        prev = self.c_prev[live]
        out = {"format": np.array([EXPORT_FORMAT], np.int64),
               "obs": self.s_obs[rows], "action": self.s_action[rows], "reward": self.s_reward[rows],
               "c_idx": self.c_idx[live] - lo, "c_key": self.c_key[live] - lo, "c_prev": np.where(prev >= 0, prev - lo, -1)}
        out.update({name: getattr(self, name)[live] for name in self._CHUNK_ARRAYS})
        if self.c_state is not None:
            out["c_state"] = self.c_state[live]
        return out

    def load(self, arrays: dict[str, np.ndarray]) -> int:
        """Put an export back (its newest steps and chunks when they do not all fit); returns transitions restored."""
        if "format" not in arrays or int(arrays["format"][0]) != EXPORT_FORMAT:
            raise ValueError(f"replay file layout is not format {EXPORT_FORMAT} (written by an older saclstm)")
        if (arrays["obs"].shape[1:] != self.s_obs.shape[1:] or arrays["action"].shape[1:] != self.s_action.shape[1:]
                or arrays["c_idx"].shape[1:] != self.c_idx.shape[1:]):
            raise ValueError(f"replay file steps {arrays['obs'].shape[1:]}/{arrays['action'].shape[1:]} and chunks of "
                             f"{arrays['c_idx'].shape[1:]} do not fit this replay ({self.obs_dim}, {self.act_dim}, {self.seq_len})")
        m = len(arrays["reward"])
        drop = max(0, m - self.capacity)
        k = m - drop
        self.s_obs[:k], self.s_action[:k], self.s_reward[:k] = arrays["obs"][drop:], arrays["action"][drop:], arrays["reward"][drop:]
        self._head = k
        keep = np.flatnonzero(arrays["c_key"] >= drop)[-self.slots:]
        count = len(keep)
        self.c_idx[:count] = arrays["c_idx"][keep] - drop
        self.c_key[:count] = arrays["c_key"][keep] - drop
        prev = arrays["c_prev"][keep]
        self.c_prev[:count] = np.where(prev >= 0, prev - drop, -1)
        for name in self._CHUNK_ARRAYS:
            getattr(self, name)[:count] = arrays[name][keep]
        if self.c_state is not None and "c_state" in arrays and arrays["c_state"].shape[1:] == self.c_state.shape[1:]:
            self.c_state[:count] = arrays["c_state"][keep]
        else:
            self.c_has_state[:count] = False
        self.c_stream[:count] = -1  # old streams' ids mean nothing to this process
        self._live[:count] = np.arange(count)
        self._pos[:] = -1
        self._pos[:count] = np.arange(count)
        self.n_live, self._next_slot = count, count % self.slots
        self._heap = [(int(key), slot) for slot, key in enumerate(self.c_key[:count])]
        heapq.heapify(self._heap)
        self.transitions = int((self.c_fill[:count] - self.c_context[:count]).sum())
        return self.transitions
