"""A scripted sender: hello, then valid Pendulum-shaped experience at a steady pace, from a thread."""

from __future__ import annotations

import threading
import time

import numpy as np
import zmq

from protocol import Experience, Hello, encode

OBS, ACT = 3, 1
SMALL_LEARNER = ("--obs-dim", "3", "--act-dim", "1", "--act-low", "-2", "--act-high", "2", "--learning-starts", "64",
                 "--seq-len", "8", "--overlap", "4", "--hidden", "16", "--fc", "16", "--batch-size", "4",
                 "--publish-hz", "50")


def hello(sender: str, seq: int = 0) -> bytes:
    one = np.ones(1, np.float32)
    return encode(Hello(sender, seq, "bot", OBS, ACT, -np.ones(OBS, np.float32), np.ones(OBS, np.float32), -2 * one, 2 * one))


def batch(sender: str, seq: int, episode: int, t0: int, n: int = 16, obs_dim: int = OBS) -> bytes:
    rng = np.random.default_rng(seq)
    f = np.float32
    last = t0 + n >= 200
    return encode(Experience(sender, seq, "bot", episode, t0, 1, rng.standard_normal((n, obs_dim)).astype(f),
                             rng.uniform(-2, 2, (n, ACT)).astype(f), rng.standard_normal(n).astype(f),
                             rng.standard_normal((n, obs_dim)).astype(f), np.zeros(n, bool),
                             np.arange(n) == n - 1 if last else np.zeros(n, bool)))


class Feeder:
    """Sends hello every second and a 16-step batch every `period` seconds until stopped."""

    def __init__(self, endpoint: str, sender: str = "feeder", period: float = 0.01) -> None:
        self.endpoint, self.sender, self.period = endpoint, sender, period
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
        seq, episode, t, last_hello = 1, 0, 0, 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            try:
                if now - last_hello > 1.0:
                    push.send(hello(self.sender, seq), zmq.NOBLOCK)
                    seq, last_hello = seq + 1, now
                push.send(batch(self.sender, seq, episode, t), zmq.NOBLOCK)
            except zmq.Again:
                pass
            seq, t = seq + 1, t + 16
            if t >= 200:
                episode, t = episode + 1, 0
            time.sleep(self.period)
        push.close(0)
        ctx.term()
