"""Metrics out of the learner: one JSONL line per training pass, a health map every second.

Both also go out on the metrics PUB socket (topics `metrics` and `health`,
msgpack maps), so anyone can watch a run without touching its files.
"""

from __future__ import annotations

import json
import time
from collections import deque
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import zmq

from protocol.sockets import TOPIC_HEALTH, TOPIC_METRICS


class MetricsOut:
    """Writes pass metrics to a JSONL file (line-buffered: a crash loses at most one line) and the PUB socket."""

    def __init__(self, sock: zmq.Socket, path: str) -> None:
        self.sock = sock
        self.file = None
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.file = open(path, "a", buffering=1)  # noqa: SIM115 - closed in close()

    def pass_line(self, fields: dict[str, Any]) -> None:
        if self.file is not None:
            self.file.write(json.dumps(fields, default=_plain) + "\n")
        self._publish(TOPIC_METRICS, fields)

    def health(self, fields: dict[str, Any]) -> None:
        self._publish(TOPIC_HEALTH, fields)

    def _publish(self, topic: bytes, fields: dict[str, Any]) -> None:
        try:
            self.sock.send_multipart([topic, msgpack.packb(fields, default=_plain)], zmq.NOBLOCK)
        except zmq.Again:
            pass  # a slow watcher must never slow training; PUB drops for it

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def lag_summary(lags: Any) -> dict[str, float]:
    """Policy lag (learner version minus acting version) over recent batches."""
    if not lags:
        return {"p50": 0.0, "p90": 0.0, "max": 0.0}
    arr = np.fromiter(lags, dtype=np.int64)
    return {"p50": float(np.percentile(arr, 50)), "p90": float(np.percentile(arr, 90)), "max": float(arr.max())}


class Rate:
    """Events per second over a sliding window, for ingest rate and achieved throughput."""

    def __init__(self, window: float = 10.0) -> None:
        self.window = window
        self.points: list[tuple[float, int]] = []

    def add(self, total: int) -> float:
        now = time.monotonic()
        self.points.append((now, total))
        while len(self.points) > 2 and now - self.points[0][0] > self.window:
            self.points.pop(0)
        t0, n0 = self.points[0]
        return (total - n0) / (now - t0) if now > t0 else 0.0


UTD_WINDOW_STEPS = 2000  # env steps the UTD window spans once full (health's utd_window_steps, about this)


class UtdWindow:
    """Achieved UTD over the last `steps` env steps of training: the figure flow control holds to its target
    (SPEC.md, Flow control), where the run's whole-life `utd_achieved` hides what happens now.

    The window starts where training did: at the last count before the first gradient step past
    learning_starts, so the stretch in which the learner had not begun (its first pass still to come) does not
    read as a learner behind its target while the window fills (it used to: 0.07-0.85 for the first few hundred
    steps). Until that first step the figure is (0.0, 0): warming up. Once training has begun, a stall counts."""

    def __init__(self, learning_starts: int, steps: int = UTD_WINDOW_STEPS) -> None:
        self.start, self.steps = learning_starts, steps
        self.points: deque[tuple[int, int]] = deque()
        self.training = False  # a gradient step came after the window's first point

    def add(self, received: int, grad_steps: int) -> tuple[float, int]:
        """Note the counts now; (gradient steps per env step, env steps) over the shortest stretch back that
        spans `steps` env steps, or over all there is since training began; (0.0, 0) before it began."""
        if received < self.start:
            return 0.0, 0
        if self.points and (received < self.points[-1][0] or grad_steps < self.points[-1][1]):
            self.points.clear()  # counts went back: not one run of them
            self.training = False
        if not self.training:
            if not self.points or grad_steps == self.points[0][1]:
                self.points.clear()
                self.points.append((received, grad_steps))  # the newest count before training: where it starts
                return 0.0, 0
            self.training = True
        self.points.append((received, grad_steps))
        while len(self.points) > 2 and received - self.points[1][0] >= self.steps:
            self.points.popleft()
        r0, g0 = self.points[0]
        span = received - r0
        return ((grad_steps - g0) / span if span else 0.0), span
