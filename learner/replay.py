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
    """The open chunk of one stream and where that stream stands in its episode."""

    sid: int
    idx: np.ndarray  # ring rows of the open chunk's steps
    prev_action: np.ndarray  # the action before the chunk, when it is not in the ring
    state: np.ndarray
    episode: int = -1
    next_t: int = 0
    fill: int = 0  # steps in the open chunk
    context: int = 0  # leading steps that are context only (shared with the previous chunk)
    key: int = 0  # absolute step number of the oldest row the chunk needs
    prev_row: int = -1  # ring row of the step before the chunk, -1 when it came with the message
    prev_reward: float = 0.0
    version: int = 0
    next_obs: tuple[np.ndarray, int] | None = None  # where the observation after the last step is
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
        self._n, self._rows = N, np.arange(N, dtype=np.int32)
        self.s_obs = np.zeros((N, obs_dim), np.float32)
        self.s_action = np.zeros((N, act_dim), np.float32)
        self.s_reward = np.zeros(N, np.float32)
        self._head = 0  # absolute number of the next ring row; row = number % capacity
        self.c_idx = np.zeros((C, L), np.int32)
        self.c_next_obs = np.zeros((C, obs_dim), np.float32)  # the observation after the last step
        self.c_fill = np.zeros(C, np.int32)
        self.c_context = np.zeros(C, np.int32)
        self.c_terminal = np.zeros(C, np.float32)
        self.c_version = np.zeros(C, np.int64)
        self.c_stream = np.full(C, -1, np.int64)
        self.c_key = np.zeros(C, np.int64)
        self.c_prev_row = np.full(C, -1, np.int32)
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
        return len(self._rows)

    # -- writing ---------------------------------------------------------------------------

    def _stream(self, key: tuple[str, str]) -> _Stream:
        stream = self._streams.get(key)
        if stream is None:
            stream = self._streams[key] = _Stream(
                sid=len(self._streams), idx=np.zeros(self.seq_len, np.int32),
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
        n, piece = len(reward), max(1, self._n // 4)
        if n > piece:  # a batch bigger than a quarter of the ring goes in as consecutive pieces
            for s in range(0, n, piece):
                e = min(n, s + piece)
                self.add(key, episode, t0 + s, version, obs[s:e], action[s:e], reward[s:e], next_obs[s:e],
                         terminated and e == n, truncated and e == n, prev_action if s == 0 else None,
                         state if s == 0 else None, prev_reward if s == 0 else None)
            return
        stream = self._stream(key)
        if stream.ended or episode != stream.episode or t0 != stream.next_t:
            self._commit(stream, False)
            self._begin(stream, t0, prev_action, state, prev_reward)
        r = self._write(obs, action, reward)
        first, L, i = self._head - n, self.seq_len, 0
        while i < n:
            f = stream.fill
            if f == 0 and stream.prev_row < 0:
                stream.key = first + i
            k = min(L - f, n - i)
            stream.idx[f:f + k] = self._rows[r + i:r + i + k]
            stream.version = max(stream.version, version) if f else version
            stream.fill = f + k
            i += k
            stream.next_obs = (next_obs, i - 1)
            if stream.fill == L and (i < n or not (terminated or truncated)):
                if self._commit(stream, False):
                    self._continue(stream)
                else:  # its oldest steps were overwritten while it was open: start afresh
                    self._begin(stream, 0, None, None, None)
        stream.episode, stream.next_t = episode, t0 + n
        if terminated or truncated:
            self._commit(stream, terminated)
            stream.ended = True

    def _write(self, obs: np.ndarray, action: np.ndarray, reward: np.ndarray) -> int:
        """Put n steps on the next ring rows, contiguous (a lap's last few rows may go unused);
        chunks that needed the overwritten rows go. Returns the first row."""
        N, n = self._n, len(reward)
        r = self._head % N
        if r + n > N:
            self._head += N - r
            r = 0
        self._head += n
        self._evict_older_than(self._head - N)
        self.s_obs[r:r + n], self.s_action[r:r + n], self.s_reward[r:r + n] = obs, action, reward
        return r

    def _evict_older_than(self, oldest: int) -> None:
        heap = self._heap
        while heap and heap[0][0] < oldest:
            key, slot = heapq.heappop(heap)
            if self._pos[slot] >= 0 and self.c_key[slot] == key:
                self.evicted += int(self.c_fill[slot] - self.c_context[slot])
                self._release(slot)

    def _begin(self, stream: _Stream, t0: int, prev_action: np.ndarray | None,
               state: tuple[np.ndarray, np.ndarray] | None, prev_reward: float | None) -> None:
        stream.fill = stream.context = 0
        stream.ended = False
        stream.prev_row = -1
        stream.prev_action[:] = prev_action if (prev_action is not None and t0 > 0) else 0.0
        stream.prev_reward = float(prev_reward) if (prev_reward is not None and t0 > 0) else 0.0
        stream.has_state = state is not None and self.state_dim > 0 and state[0].shape == (self.state_dim,)
        if stream.has_state and state is not None:
            stream.state[0], stream.state[1] = state

    def _continue(self, stream: _Stream) -> None:
        """Start the next chunk with the last `overlap` steps of the full one as context."""
        L, o, N = self.seq_len, self.overlap, self._n
        prev = int(stream.idx[L - o - 1])
        oldest = self._head - N  # the commit just checked that this row is still in the ring
        stream.key, stream.prev_row = oldest + (prev - oldest) % N, prev
        if o:
            stream.idx[:o] = stream.idx[L - o:]
        stream.fill = stream.context = o
        stream.has_state = False

    def _commit(self, stream: _Stream, terminal: bool) -> bool:
        """Make the open chunk live, if it holds any step not trained on before. False if its data is gone."""
        fill, context = stream.fill, stream.context
        stream.fill = stream.context = 0
        if stream.ended or fill <= context:
            return True
        if stream.key < self._head - self._n:
            self.evicted += fill - context
            return False
        slot = self._claim_slot()
        self.c_idx[slot] = stream.idx
        assert stream.next_obs is not None
        arr, j = stream.next_obs
        self.c_next_obs[slot] = arr[j]
        self.c_fill[slot], self.c_context[slot], self.c_terminal[slot] = fill, context, terminal
        self.c_version[slot], self.c_stream[slot], self.c_key[slot] = stream.version, stream.sid, stream.key
        self.c_prev_row[slot] = stream.prev_row
        if stream.prev_row < 0:
            self.c_prev_action[slot], self.c_prev_reward[slot] = stream.prev_action, stream.prev_reward
        self.c_has_state[slot] = stream.has_state
        if self.c_state is not None and stream.has_state:
            self.c_state[slot] = stream.state
        heapq.heappush(self._heap, (stream.key, slot))
        self._pos[slot] = self.n_live
        self._live[self.n_live] = slot
        self.n_live += 1
        self.transitions += fill - context
        return True

    def _claim_slot(self) -> int:
        slot = self._next_slot
        self._next_slot = (slot + 1) % self.slots
        if self._pos[slot] >= 0:
            self.evicted += int(self.c_fill[slot] - self.c_context[slot])
            self._release(slot)
        return slot

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
        stream.fill = stream.context = 0
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
        idx, fill = self.c_idx[slots], self.c_fill[slots]
        valid = self._valid[fill]
        obs = np.zeros((B, L + 1, self.obs_dim), np.float32)
        obs[:, :L] = self.s_obs[idx] * valid[..., None]
        obs[np.arange(B), fill] = self.c_next_obs[slots]
        prev_row = self.c_prev_row[slots]
        in_ring = prev_row >= 0
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
        Ring rows are renumbered from the window's start. Open chunks are not kept."""
        N = self.capacity
        lo = max(0, self._head - N)
        rows = np.arange(lo, self._head) % N
        live = self._live[:self.n_live]
        live = live[np.argsort(self.c_key[live], kind="stable")]
        prev = self.c_prev_row[live]
        out = {"format": np.array([EXPORT_FORMAT], np.int64),
               "obs": self.s_obs[rows], "action": self.s_action[rows], "reward": self.s_reward[rows],
               "c_idx": ((self.c_idx[live].astype(np.int64) - lo) % N), "c_key": self.c_key[live] - lo,
               "c_prev_row": np.where(prev >= 0, (prev.astype(np.int64) - lo) % N, -1)}
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
        prev = arrays["c_prev_row"][keep]
        self.c_prev_row[:count] = np.where(prev >= 0, prev - drop, -1)
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
