"""The message kinds of the wire protocol, as typed records (slotted dataclasses; mutable, like the arrays in them).

Field names match the wire keys one to one (SPEC.md is the normative text).
Arrays are numpy arrays; on decode they are read-only views of the frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Union

import numpy as np

PROTOCOL_VERSION = 1
"""The wire version `v`: bumped on any change an old peer could misread; see SPEC.md, Versioning."""
SPEC_VERSION = "1.6"
"""The documented version: minor versions keep `v` and accept what a correct sender of an earlier one sends."""


@dataclass(slots=True)
class Hello:
    """An actor's first message for a bot: who it is and the shapes it speaks."""

    kind: ClassVar[str] = "hello"
    sender: str
    seq: int
    bot: str
    obs_dim: int
    act_dim: int
    obs_low: np.ndarray
    obs_high: np.ndarray
    act_low: np.ndarray
    act_high: np.ndarray
    software: str = ""
    eval: bool = False


@dataclass(slots=True)
class Experience:
    """Consecutive steps of one episode of one bot: the unit of experience on the wire."""

    kind: ClassVar[str] = "experience"
    sender: str
    seq: int
    bot: str
    episode: int
    t0: int
    version: int
    obs: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    next_obs: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    prev_action: np.ndarray | None = None
    prev_reward: float | None = None
    h0: np.ndarray | None = None
    c0: np.ndarray | None = None
    target: np.ndarray | None = None  # 1.5, optional: [n, A] action targets in env units, NaN where none

    @property
    def steps(self) -> int:
        return int(self.reward.shape[0])


@dataclass(slots=True)
class EpisodeStart:
    """A bot begins an episode against `opponent` (a name, or a numeric id as text)."""

    kind: ClassVar[str] = "episode_start"
    sender: str
    seq: int
    bot: str
    episode: int
    opponent: str = ""


@dataclass(slots=True)
class EpisodeEnd:
    """A bot finished an episode; eval actors send these too, so returns are seen."""

    kind: ClassVar[str] = "episode_end"
    sender: str
    seq: int
    bot: str
    episode: int
    ret: float
    length: int
    eval: bool = False


@dataclass(slots=True)
class Heartbeat:
    """Liveness and accounting: steps sent and dropped so far, by this sender."""

    kind: ClassVar[str] = "heartbeat"
    sender: str
    seq: int
    round: int
    episodes: int
    sent: int
    dropped: int
    held_s: float | None = None  # seconds flow control held this sender back so far (1.2, optional)
    labels_late: int | None = None  # action targets that came after their step had left: dropped (1.6)


@dataclass(slots=True)
class Bye:
    """The sender stops; its final counts close the books on it."""

    kind: ClassVar[str] = "bye"
    sender: str
    seq: int
    sent: int
    dropped: int
    labels_late: int | None = None  # final count, as in Heartbeat (1.6)


@dataclass(slots=True)
class Weights:
    """A weights blob: the flat actor parameters and what rebuilds the network."""

    kind: ClassVar[str] = "weights"
    sender: str
    seq: int
    version: int
    rev: str
    arch: dict[str, Any]
    params: np.ndarray
    grad_steps: int = 0
    # The learner trains from stored state (1.2): send h0/c0 with every batch and begin a batch at every
    # episode step that is a multiple of this (its chunks start there). None or 0: no state wanted.
    state_every: int | None = None


@dataclass(slots=True)
class Progress:
    """How far the learner has trained, for rate-limited actors (flow control)."""

    kind: ClassVar[str] = "progress"
    sender: str
    seq: int
    received: int
    grad_steps: int
    utd: float
    learning_starts: int
    version: int
    session: int
    per_sender: dict[str, int] | None = None
    settled: dict[str, int] | None = None  # 1.2, optional: steps accepted or rejected, per sender, this session


Message = Union[Hello, Experience, EpisodeStart, EpisodeEnd, Heartbeat, Bye, Weights, Progress]
KINDS: dict[str, type] = {
    cls.kind: cls for cls in (Hello, Experience, EpisodeStart, EpisodeEnd, Heartbeat, Bye, Weights, Progress)
}

__all__ = [
    "PROTOCOL_VERSION", "SPEC_VERSION", "Hello", "Experience", "EpisodeStart", "EpisodeEnd", "Heartbeat", "Bye",
    "Weights", "Progress", "Message", "KINDS",
]
