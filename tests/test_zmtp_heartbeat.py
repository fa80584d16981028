"""SPEC.md, Sockets, 'ZMTP heartbeats': the learner's sockets PING every connection every 2 s (TTL 6 s) and drop one
on which nothing arrived within 6 s of a PING, so a peer must answer PING with PONG. Checked with two raw ZMTP 3.1
peers of the learner's weights PUB (learner.transport, as the learner binds it), written here from RFC 37: one
answers every PING, one never does. Only the silent one is dropped."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from learner.config import LearnerConfig
from learner.transport import Transport
from tests.procs import endpoints

pytestmark = pytest.mark.slow


def _command(name: bytes, body: bytes = b"") -> bytes:
    data = bytes([len(name)]) + name + body
    return bytes([0x04, len(data)]) + data  # a short command frame


class RawPeer:
    """A ZMTP 3.1 peer over a plain TCP socket (NULL security): greeting, READY as a SUB, then frames."""

    def __init__(self, endpoint: str) -> None:
        host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=5)
        self.buf = b""
        greeting = b"\xff" + bytes(8) + b"\x7f" + bytes([3, 1]) + b"NULL".ljust(20, b"\0") + b"\0" + bytes(31)
        self.sock.sendall(greeting)
        theirs = self._read(64)
        assert theirs[0] == 0xFF and theirs[9] == 0x7F and theirs[10] == 3, theirs
        self.sock.sendall(_command(b"READY", b"\x0bSocket-Type" + struct.pack(">I", 3) + b"SUB"))

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed by the learner")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def frame(self, timeout: float) -> tuple[int, bytes]:
        """The next frame (flags, body); ConnectionError when the learner closes the connection."""
        self.sock.settimeout(timeout)
        flags = self._read(1)[0]
        size = struct.unpack(">Q", self._read(8))[0] if flags & 0x02 else self._read(1)[0]
        return flags, self._read(size)

    def next_ping(self, timeout: float) -> bytes:
        """The body of the next PING command after the name: TTL (2 bytes, deciseconds) then context."""
        deadline = time.monotonic() + timeout
        while True:
            flags, body = self.frame(max(0.01, deadline - time.monotonic()))
            if flags & 0x04 and body[1:1 + body[0]] == b"PING":
                return body[1 + body[0]:]

    def pong(self, ping: bytes) -> None:
        self.sock.sendall(_command(b"PONG", ping[2:]))

    def close(self) -> None:
        self.sock.close()


def test_a_peer_that_answers_pings_stays_and_one_that_does_not_is_dropped() -> None:
    eps = endpoints()
    transport = Transport(LearnerConfig(ingest=eps["ingest"], weights=eps["weights"], metrics=eps["metrics"]))
    answering = silent = None
    try:
        answering, silent = RawPeer(eps["weights"]), RawPeer(eps["weights"])
        start = time.monotonic()
        ping = silent.next_ping(5.0)
        first_ping_s = time.monotonic() - start
        assert struct.unpack(">H", ping[:2])[0] == 60, "a TTL of 6 s, in deciseconds"
        assert first_ping_s < 3.0, f"the first PING came after {first_ping_s:.1f} s, not within the 2 s interval"
        pings = 0
        while True:  # the silent peer reads (it never writes) until the learner closes its connection
            try:
                silent.next_ping(10.0)
            except ConnectionError:
                break
            except TimeoutError:
                pytest.fail("the learner kept a peer that answered no PING for 10 s beyond the last")
            pings += 1
            answering.pong(answering.next_ping(3.0))  # meanwhile the other answers every PING it gets
        silent_s = time.monotonic() - start
        assert 5.5 <= silent_s <= 10.0, f"dropped {silent_s:.1f} s after connecting, not 6 to 8 s"
        for _ in range(3):  # the answering peer is still connected, and still pinged, well past the drop
            answering.pong(answering.next_ping(3.0))
        print(f"silent peer dropped after {silent_s:.1f} s ({pings} PINGs unanswered after the first); "
              f"the answering one still up after {time.monotonic() - start:.1f} s")
    finally:
        for peer in (answering, silent):
            if peer is not None:
                peer.close()
        transport.close(linger=0)
