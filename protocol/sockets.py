"""ZeroMQ socket setup shared by both daemons: one place for HWM, LINGER, size limits.

Every receiving socket gets ZMQ_MAXMSGSIZE so a hostile peer cannot make
libzmq allocate a huge frame; every socket gets a finite LINGER so a stopped
daemon never hangs on unsent messages; TCP sockets get ZMTP heartbeats so a
dead peer is noticed even when no data flows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import zmq


@dataclass(frozen=True)
class SocketOptions:
    """Limits for one socket. Defaults suit loopback and LAN runs."""

    sndhwm: int = 1000
    """Messages queued for sending before PUSH drops (actors) or PUB skips (learner)."""
    rcvhwm: int = 1000
    """Messages queued on receive before the sender sees back-pressure."""
    linger_ms: int = 500
    """How long close() may wait to flush; never infinite."""
    max_message_bytes: int = 64 * 1024 * 1024
    """ZMQ_MAXMSGSIZE on receiving sockets: larger frames drop the connection."""
    heartbeat_ivl_ms: int = 2000
    """ZMTP heartbeat interval on TCP; 0 turns heartbeats off."""


def _apply(sock: zmq.Socket, opts: SocketOptions, receiving: bool) -> None:
    sock.setsockopt(zmq.LINGER, opts.linger_ms)
    sock.setsockopt(zmq.SNDHWM, opts.sndhwm)
    sock.setsockopt(zmq.RCVHWM, opts.rcvhwm)
    if receiving:
        sock.setsockopt(zmq.MAXMSGSIZE, opts.max_message_bytes)
    if opts.heartbeat_ivl_ms > 0:
        sock.setsockopt(zmq.HEARTBEAT_IVL, opts.heartbeat_ivl_ms)
        sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, opts.heartbeat_ivl_ms * 3)
        sock.setsockopt(zmq.HEARTBEAT_TTL, opts.heartbeat_ivl_ms * 3)


_RECEIVING = {zmq.PULL, zmq.SUB}


def bind(ctx: zmq.Context, kind: int, endpoint: str, opts: SocketOptions = SocketOptions(),
         keys: Any = None) -> zmq.Socket:
    """A bound socket (the learner side), CURVE server when `keys` (protocol.curve.ServerKeys) are given.
    Fails with the endpoint in the message."""
    sock = ctx.socket(kind)
    _apply(sock, opts, kind in _RECEIVING)
    if keys is not None:
        keys.apply(sock)
    try:
        sock.bind(endpoint)
    except zmq.ZMQError as exc:
        sock.close(0)
        raise OSError(f"cannot bind {endpoint}: {exc}") from exc
    return sock


def connect(
    ctx: zmq.Context, kind: int, endpoint: str, opts: SocketOptions = SocketOptions(), subscribe: bytes | None = None,
    keys: Any = None,
) -> zmq.Socket:
    """A connected socket (actors, monitors), CURVE client when `keys` (protocol.curve.ClientKeys) are given.
    SUB sockets subscribe to `subscribe`."""
    sock = ctx.socket(kind)
    _apply(sock, opts, kind in _RECEIVING)
    if keys is not None:
        keys.apply(sock)
    if kind == zmq.PUSH:
        sock.setsockopt(zmq.IMMEDIATE, 1)  # queue only to live peers: a missing learner is a full queue, not a hidden one
    if kind == zmq.SUB:
        sock.setsockopt(zmq.SUBSCRIBE, subscribe or b"")
    sock.connect(endpoint)
    return sock


def try_send(sock: zmq.Socket, frame: bytes) -> bool:
    """Send without ever blocking; False means the queue is full and the frame was not sent."""
    try:
        sock.send(frame, zmq.NOBLOCK, copy=len(frame) < 65536)
    except zmq.Again:
        return False
    return True


def bound_endpoint(sock: zmq.Socket) -> str:
    """The endpoint a socket really bound (resolves port 0 / wildcard)."""
    return sock.getsockopt_string(zmq.LAST_ENDPOINT)


TOPIC_WEIGHTS = b"weights"
TOPIC_PROGRESS = b"progress"
TOPIC_METRICS = b"metrics"
TOPIC_HEALTH = b"health"
