"""The learner's wire: one ZeroMQ context, CURVE when keys are given, and the three sockets it binds.

    ingest   PULL  experience, hellos, heartbeats and byes from actors
    weights  PUB   versioned actor weights, and progress (the actors' flow control)
    metrics  PUB   pass lines and health maps, for whoever watches

The loop sees four verbs (wait, receive, publish, close) and never a socket,
so another transport would change this file and not the loop. The metrics
socket goes to `Observers` as it is.
"""

from __future__ import annotations

import logging
from typing import Any

import zmq

from learner.config import LearnerConfig
from protocol.sockets import SocketOptions, bind, bound_endpoint

log = logging.getLogger("saclstm.learner")


class Transport:
    """Binds all three sockets or none: a bind that fails closes what was already bound, then raises."""

    def __init__(self, cfg: LearnerConfig) -> None:
        self.ctx = zmq.Context()
        self._auth: Any = None  # zmq.auth.thread.ThreadAuthenticator when CURVE is on
        self._bound: list[zmq.Socket] = []
        try:
            keys = self._keys(cfg)
            # libzmq's hard cap is twice the accepted size: a frame between the two reaches the codec and is
            # counted as too_large; only a frame past the cap is dropped by libzmq (with the connection).
            opts = SocketOptions(max_message_bytes=2 * cfg.max_message_bytes, rcvhwm=10000, sndhwm=16)
            self.pull = self._bind(zmq.PULL, cfg.ingest, opts, keys)
            self.pub = self._bind(zmq.PUB, cfg.weights, opts, keys)
            self.metrics = self._bind(zmq.PUB, cfg.metrics, SocketOptions(sndhwm=100), keys)
        except BaseException:
            self.close(linger=0)
            raise
        self.endpoints = {name: bound_endpoint(s) for name, s in
                          (("ingest", self.pull), ("weights", self.pub), ("metrics", self.metrics))}
        self._poller = zmq.Poller()
        self._poller.register(self.pull, zmq.POLLIN)

    def _keys(self, cfg: LearnerConfig) -> Any:
        """The server keys (protocol.curve.ServerKeys) with the authenticator started, or None without CURVE."""
        if not cfg.curve_secret:
            if cfg.insecure_bind:
                log.warning("no CURVE keys and insecure_bind: anyone who can reach these endpoints may push "
                            "experience and read the weights")
            return None
        from protocol.curve import ServerKeys

        keys = ServerKeys.load(cfg.curve_secret, cfg.curve_allowed)
        self._auth = keys.start_authenticator(self.ctx)
        log.info("CURVE on: clients allowed from %s", cfg.curve_allowed)
        return keys

    def _bind(self, kind: int, endpoint: str, opts: SocketOptions, keys: Any) -> zmq.Socket:
        sock = bind(self.ctx, kind, endpoint, opts, keys)
        self._bound.append(sock)
        return sock

    def wait(self, timeout_ms: int) -> bool:
        """Up to `timeout_ms` for an ingest frame; True when one is waiting."""
        return bool(self._poller.poll(timeout_ms))

    def receive(self) -> memoryview | None:
        """The next ingest frame without waiting, or None when the queue is empty. Not copied: decode copies
        what it keeps."""
        try:
            return self.pull.recv(zmq.NOBLOCK, copy=False).buffer
        except zmq.Again:
            return None

    def publish(self, topic: bytes, frame: bytes) -> None:
        """On the weights socket, never blocking: a frame the queue has no room for is skipped (weights go
        out again, progress is sent again within a second)."""
        try:
            self.pub.send_multipart([topic, frame], zmq.NOBLOCK, copy=len(frame) < 65536)
        except zmq.Again:
            pass

    def close(self, linger: int = 200) -> None:
        """Every socket bound, the authenticator, then the context: their ports are free again."""
        for sock in self._bound:
            sock.close(linger=linger)
        self._bound.clear()
        if self._auth is not None:
            self._auth.stop()
            self._auth = None
        self.ctx.term()
