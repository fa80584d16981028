"""A scripted sender: hello, then valid Pendulum-shaped experience at a steady pace, from a thread."""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import zmq

from protocol import Experience, Hello, encode

OBS, ACT = 3, 1
SMALL_LEARNER = ("--obs-dim", "3", "--act-dim", "1", "--act-low", "-2", "--act-high", "2", "--learning-starts", "64",
                 "--seq-len", "8", "--overlap", "4", "--hidden", "16", "--fc", "16", "--batch-size", "4",
                 "--publish-hz", "50")
EPISODE = 200  # steps per scripted episode (16-step batches; the one that reaches it ends the episode)


def hello(sender: str, seq: int = 0) -> bytes:
    one = np.ones(1, np.float32)
    return encode(Hello(sender, seq, "bot", OBS, ACT, -np.ones(OBS, np.float32), np.ones(OBS, np.float32), -2 * one, 2 * one))


def batch(sender: str, seq: int, episode: int, t0: int, n: int = 16, obs_dim: int = OBS) -> bytes:
    rng = np.random.default_rng(seq)
    f = np.float32
    last = t0 + n >= EPISODE
    return encode(Experience(sender, seq, "bot", episode, t0, 1, rng.standard_normal((n, obs_dim)).astype(f),
                             rng.uniform(-2, 2, (n, ACT)).astype(f), rng.standard_normal(n).astype(f),
                             rng.standard_normal((n, obs_dim)).astype(f), np.zeros(n, bool),
                             np.arange(n) == n - 1 if last else np.zeros(n, bool)))


def experience(sender: str, seq: int = 1, hello_s: float = 1.0) -> Iterator[bytes]:
    """A hello every `hello_s` seconds (the first at once) and 16-step batches between, episode after episode."""
    episode, t, last_hello = 0, 0, -float("inf")
    while True:
        if time.monotonic() - last_hello > hello_s:
            last_hello = time.monotonic()
            yield hello(sender, seq)
        else:
            yield batch(sender, seq, episode, t)
            episode, t = (episode + 1, 0) if t + 16 >= EPISODE else (episode, t + 16)
        seq += 1


class Feeder:
    """Sends one frame of `frames(sender)` (default: `experience`) every `period` seconds until stopped, on its own
    thread; a send that finds the queue full is dropped, as a realtime actor drops it. `sent_at` notes when each
    frame went out (wall clock), so a test can tell a sender that really fell silent (a starved test process on a
    loaded machine) from one the learner wrongly judged dead."""

    def __init__(self, endpoint: str, sender: str = "feeder", period: float = 0.01,
                 frames: Callable[[str], Iterator[bytes]] = experience) -> None:
        self.endpoint, self.sender, self.period, self.frames = endpoint, sender, period, frames
        self.sent_at: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Feeder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        ctx = zmq.Context()
        push = ctx.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 0)
        push.setsockopt(zmq.SNDHWM, 100)
        push.connect(self.endpoint)
        frames = self.frames(self.sender)
        while not self._stop.wait(self.period):
            try:
                push.send(next(frames), zmq.NOBLOCK)
                self.sent_at.append(time.time())
            except zmq.Again:
                pass  # a full queue: this frame never left
        push.close(0)
        ctx.term()

    def sent_between(self, start: float, end: float) -> bool:
        """Whether a frame went out between `start` and `end` (wall clock)."""
        i = bisect.bisect_left(self.sent_at, start)
        return i < len(self.sent_at) and self.sent_at[i] <= end
