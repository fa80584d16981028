"""Sequence replay: fixed-length chunks that never mix streams or episodes.

Each stream (one bot of one actor) fills its own open chunk of `seq_len`
steps. A full chunk is committed to a preallocated ring of chunk slots and
the next chunk starts with the last `overlap` steps of it as context (those
steps are masked out of the losses there, so every step is trained on once).
An episode's end, or a gap in a stream, commits the partial chunk with the
rest padded and masked. Sampling is uniform over live chunks in O(batch), so
its cost does not grow with the buffer.

Memory is allocated once, at construction, and reported by `nbytes`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

OPPONENT_POLICIES = ("keep", "clear")


@dataclass
class _Stream:
    """The open chunk of one stream and where that stream stands in its episode."""

    sid: int
    episode: int = -1
    next_t: int = 0
    fill: int = 0  # steps in the open chunk
    context: int = 0  # leading steps that are context only (copied from the previous chunk)
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
    """Bounded storage of chunks; `add` takes one experience batch of one stream."""

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
        self.slots = capacity // seq_len
        L, C = seq_len, self.slots
        self.obs = np.zeros((C, L + 1, obs_dim), np.float32)
        self.action = np.zeros((C, L, act_dim), np.float32)
        self.prev_action = np.zeros((C, act_dim), np.float32)
        self.prev_reward = np.zeros(C, np.float32)
        self.reward = np.zeros((C, L), np.float32)
        self.terminated = np.zeros((C, L), np.float32)
        self.mask = np.zeros((C, L), np.float32)
        self.version = np.zeros(C, np.int64)
        self.stream_of = np.full(C, -1, np.int64)
        self.state = np.zeros((C, 2, state_dim), np.float32) if state_dim else None
        self.has_state = np.zeros(C, bool)
        # Loss mask rows by (context, fill): 1 on steps context..fill-1, read instead of built per commit.
        steps = np.arange(L)
        self._masks = ((steps >= np.arange(L + 1)[:, None, None]) & (steps < np.arange(L + 1)[None, :, None])).astype(np.float32)
        # The open chunk of every stream lives in one more row per stream, grown on demand.
        self._open: dict[int, dict[str, np.ndarray]] = {}
        self._streams: dict[tuple[str, str], _Stream] = {}
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
        arrays = [self.obs, self.action, self.prev_action, self.prev_reward, self.reward, self.terminated, self.mask, self.version,
                  self.stream_of, self.has_state, self._live, self._pos]
        return sum(a.nbytes for a in arrays) + (self.state.nbytes if self.state is not None else 0)

    @property
    def capacity(self) -> int:
        return self.slots * self.seq_len

    # -- writing ---------------------------------------------------------------------------

    def _stream(self, key: tuple[str, str]) -> _Stream:
        stream = self._streams.get(key)
        if stream is None:
            stream = self._streams[key] = _Stream(sid=len(self._streams))
            L, (D, A) = self.seq_len, (self.obs.shape[2], self.action.shape[2])
            self._open[stream.sid] = {
                "obs": np.zeros((L + 1, D), np.float32), "action": np.zeros((L, A), np.float32),
                "prev_action": np.zeros(A, np.float32), "prev_reward": np.zeros(1, np.float32),
                "reward": np.zeros(L, np.float32),
                "terminated": np.zeros(L, np.float32), "version": np.zeros(1, np.int64),
                "state": np.zeros((2, self.state.shape[2] if self.state is not None else 0), np.float32),
            }
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
        stream = self._stream(key)
        buf = self._open[stream.sid]
        if stream.ended or episode != stream.episode or t0 != stream.next_t:
            self._commit(stream)
            self._begin(stream, buf, episode, t0, prev_action, state, prev_reward)
        n, i = len(reward), 0
        while i < n:
            k = min(self.seq_len - stream.fill, n - i)
            f = stream.fill
            buf["obs"][f:f + k], buf["action"][f:f + k] = obs[i:i + k], action[i:i + k]
            buf["reward"][f:f + k] = reward[i:i + k]
            buf["terminated"][f:f + k] = 0.0
            buf["obs"][f + k] = next_obs[i + k - 1]
            buf["version"][0] = max(int(buf["version"][0]), version) if f else version
            stream.fill += k
            i += k
            if stream.fill == self.seq_len and (i < n or not (terminated or truncated)):
                self._commit(stream)
                self._continue(stream, buf)
        if terminated:
            buf["terminated"][stream.fill - 1] = 1.0
        stream.episode, stream.next_t = episode, t0 + n
        if terminated or truncated:
            self._commit(stream)
            stream.ended = True

    def _begin(self, stream: _Stream, buf: dict[str, np.ndarray], episode: int, t0: int,
               prev_action: np.ndarray | None, state: tuple[np.ndarray, np.ndarray] | None,
               prev_reward: float | None) -> None:
        stream.fill = stream.context = 0
        stream.ended = False
        buf["prev_action"][:] = prev_action if (prev_action is not None and t0 > 0) else 0.0
        buf["prev_reward"][0] = prev_reward if (prev_reward is not None and t0 > 0) else 0.0
        stream.has_state = state is not None and self.state is not None and state[0].shape == (self.state.shape[2],)
        if stream.has_state and state is not None:
            buf["state"][0], buf["state"][1] = state

    def _continue(self, stream: _Stream, buf: dict[str, np.ndarray]) -> None:
        """Start the next chunk with the last `overlap` steps of the full one as context."""
        L, o = self.seq_len, self.overlap
        buf["prev_action"][:] = buf["action"][L - o - 1]
        buf["prev_reward"][0] = buf["reward"][L - o - 1]
        if o:
            for name in ("action", "reward", "terminated"):
                buf[name][:o] = buf[name][L - o:L]
            buf["obs"][:o + 1] = buf["obs"][L - o:L + 1]
        else:
            buf["obs"][0] = buf["obs"][L]
        stream.fill = stream.context = o
        stream.has_state = False

    def _commit(self, stream: _Stream) -> None:
        """Move the open chunk into a slot, if it holds any step not trained on before."""
        if stream.ended or stream.fill <= stream.context:
            stream.fill = stream.context = 0
            return
        slot = self._claim_slot()
        buf, f = self._open[stream.sid], stream.fill
        if f == self.seq_len:  # the common case: a full chunk, nothing to pad
            self.obs[slot], self.action[slot] = buf["obs"], buf["action"]
            self.reward[slot], self.terminated[slot] = buf["reward"], buf["terminated"]
        else:
            self.obs[slot, :f + 1], self.obs[slot, f + 1:] = buf["obs"][:f + 1], 0.0
            self.action[slot, :f], self.action[slot, f:] = buf["action"][:f], 0.0
            self.reward[slot, :f], self.reward[slot, f:] = buf["reward"][:f], 0.0
            self.terminated[slot, :f], self.terminated[slot, f:] = buf["terminated"][:f], 0.0
        self.mask[slot] = self._masks[stream.context, f]
        self.prev_action[slot] = buf["prev_action"]
        self.prev_reward[slot] = buf["prev_reward"][0]
        self.version[slot] = buf["version"][0]
        self.stream_of[slot] = stream.sid
        self.has_state[slot] = stream.has_state
        if self.state is not None and stream.has_state:
            self.state[slot] = buf["state"]
        self._pos[slot] = self.n_live
        self._live[self.n_live] = slot
        self.n_live += 1
        self.transitions += f - stream.context
        stream.fill = stream.context = 0

    def _claim_slot(self) -> int:
        slot = self._next_slot
        self._next_slot = (slot + 1) % self.slots
        if self._pos[slot] >= 0:
            self.evicted += int(self.mask[slot].sum())
            self._release(slot)
        return slot

    def _release(self, slot: int) -> None:
        """Swap-remove a slot from the live list: O(1)."""
        i, last = self._pos[slot], self._live[self.n_live - 1]
        self._live[i], self._pos[last] = last, i
        self._pos[slot] = -1
        self.n_live -= 1
        self.transitions -= int(self.mask[slot].sum())

    def _clear(self, stream: _Stream) -> None:
        live = self._live[:self.n_live]
        doomed = live[self.stream_of[live] == stream.sid]
        for slot in doomed:
            self.dropped_by_clear += int(self.mask[slot].sum())
            self._release(int(slot))
        stream.fill = stream.context = 0
        stream.ended = True

    # -- persistence -----------------------------------------------------------------------

    _SLOT_ARRAYS = ("obs", "action", "prev_action", "prev_reward", "reward", "terminated", "mask", "version", "has_state")

    def export(self) -> dict[str, np.ndarray]:
        """The live chunks, oldest first, as plain arrays (for --save-replay). Open chunks are not kept."""
        order = np.sort(self._live[:self.n_live])
        start = self._next_slot
        order = np.concatenate([order[order >= start], order[order < start]])  # ring order: oldest first
        out = {name: getattr(self, name)[order] for name in self._SLOT_ARRAYS}
        if self.state is not None:
            out["state"] = self.state[order]
        return out

    def load(self, arrays: dict[str, np.ndarray]) -> int:
        """Put exported chunks back (the newest ones if they do not all fit); returns transitions restored."""
        n = int(arrays["mask"].shape[0])
        if arrays["obs"].shape[1:] != self.obs.shape[1:] or arrays["action"].shape[1:] != self.action.shape[1:]:
            raise ValueError(f"replay file chunks {arrays['obs'].shape[1:]} do not fit this replay {self.obs.shape[1:]}")
        take = slice(max(0, n - self.slots), n)
        for name in self._SLOT_ARRAYS:
            src = arrays[name][take]
            getattr(self, name)[:len(src)] = src
        if self.state is not None and "state" in arrays and arrays["state"].shape[1:] == self.state.shape[1:]:
            self.state[:take.stop - take.start] = arrays["state"][take]
        count = take.stop - take.start
        self.stream_of[:count] = -1  # old streams' ids mean nothing to this process
        self._live[:count] = np.arange(count)
        self._pos[:] = -1
        self._pos[:count] = np.arange(count)
        self.n_live, self._next_slot = count, count % self.slots
        self.transitions = int(self.mask[:count].sum())
        return self.transitions

    # -- reading ---------------------------------------------------------------------------

    def sample(self, batch_size: int) -> SampledBatch:
        """B chunks uniformly at random (with replacement) from the live ones."""
        if self.n_live == 0:
            raise ValueError("replay is empty: nothing to sample")
        slots = self._live[self._rng.integers(0, self.n_live, batch_size)]
        state = self.state[slots] if self.state is not None else None
        has = self.has_state[slots]
        return SampledBatch(
            obs=self.obs[slots], action=self.action[slots], prev_action=self.prev_action[slots],
            prev_reward=self.prev_reward[slots],
            reward=self.reward[slots], terminated=self.terminated[slots], mask=self.mask[slots],
            h0=None if state is None or not has.all() else state[:, 0], c0=None if state is None or not has.all() else state[:, 1],
            versions=self.version[slots],
        )
