"""A learner's metrics socket, watched: what `saclstm monitor` shows and every launcher waits on and summarises.

The learner publishes its health map every second (topic `health`) and a line per training pass (topic
`metrics`; SPEC.md, "Metrics socket"). A watcher subscribes, keeps the newest health record that decodes
(protocol/health.HealthReader: a map that does not is counted and reported once per reason, and the last
good record stays), and hands back what came, as it came, for whoever prints it.
"""

from __future__ import annotations

import time
from typing import Any

import msgpack
import zmq

from protocol.health import Health, HealthReader
from protocol.sockets import TOPIC_HEALTH, TOPIC_METRICS


class HealthWatch:
    """A SUB socket on a learner's metrics endpoint (a CURVE client when `keys` are given), feeding `reader`."""

    def __init__(self, endpoint: str, reader: HealthReader, keys: Any = None, passes: bool = False) -> None:
        """`keys`: protocol.curve.ClientKeys; `passes`: also take the training passes (topic `metrics`)."""
        self.endpoint, self.reader = endpoint, reader
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.SUB)
        self.sock.setsockopt(zmq.LINGER, 0)
        if keys is not None:
            keys.apply(self.sock)
        self.sock.setsockopt(zmq.SUBSCRIBE, TOPIC_HEALTH)
        if passes:
            self.sock.setsockopt(zmq.SUBSCRIBE, TOPIC_METRICS)
        self.sock.connect(endpoint)
        self.heard = time.monotonic()  # when the last message of any kind came (or the watch began)

    @property
    def latest(self) -> Health:
        """The newest health record that decoded (all zeros before the first)."""
        return self.reader.latest

    def poll(self, timeout_ms: int = 0) -> list[tuple[str, dict[str, Any]]]:
        """Wait up to `timeout_ms` for a message, then take every one queued: (topic, map) as the learner sent
        them, in order, but for health maps that do not decode (left out; `reader` counts them)."""
        got: list[tuple[str, dict[str, Any]]] = []
        waited = False
        while self.sock.poll(0 if waited else timeout_ms):
            waited = True
            topic, payload = self.sock.recv_multipart()
            self.heard = time.monotonic()
            data = msgpack.unpackb(payload, strict_map_key=False)
            if topic == TOPIC_HEALTH and not self.reader.take(data):
                continue
            got.append((topic.decode(), data))
        return got

    def close(self) -> None:
        self.sock.close(0)
        self.ctx.term()
