"""The weights subscriber: a background thread that keeps only the newest blob.

The bot loop never knows how weights travel: it asks `latest()` between
ticks and gets the newest ready-to-act policy (already rebuilt here, off the
game thread) or the one it had. Progress messages for flow control arrive on
the same socket and are kept newest-only too.
"""

from __future__ import annotations

import logging
import threading
import time

import zmq

from actor.policy import LocalPolicy
from protocol import Progress, ProtocolError, Weights, decode
from protocol.sockets import TOPIC_PROGRESS, TOPIC_WEIGHTS, SocketOptions, connect

log = logging.getLogger("saclstm.actor")


class WeightsSubscriber:
    """Owns the SUB socket and its thread; start() / stop() are explicit."""

    def __init__(self, ctx: zmq.Context, endpoint: str, max_message_bytes: int = 64 * 1024 * 1024,
                 keys: object = None) -> None:
        self._ctx, self._endpoint, self._max, self._keys = ctx, endpoint, max_message_bytes, keys
        self._lock = threading.Lock()
        self._policy: LocalPolicy | None = None
        self._progress: Progress | None = None
        self._progress_at = 0.0
        self._session: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="saclstm-weights", daemon=True)
        self.received = 0
        self.rejected = 0
        self.swapped_at: dict[int, float] = {}  # version -> monotonic time it became available
        self.ready_wall: dict[int, float] = {}  # version -> wall-clock time it became available (for latency)
        self.arrivals: list[int] = []  # every version swapped in, in the order it arrived (repeats included)

    def start(self) -> WeightsSubscriber:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)

    def latest(self) -> LocalPolicy | None:
        with self._lock:
            return self._policy

    def offer(self, policy: LocalPolicy) -> None:
        """A policy from elsewhere (a checkpoint store): used until the learner sends weights."""
        with self._lock:
            if self._policy is None or self._policy.rev != policy.rev and self.received == 0:
                self._policy = policy
                self.swapped_at.setdefault(policy.version, time.monotonic())
                self.arrivals.append(policy.version)

    def progress(self) -> tuple[Progress | None, float]:
        """The newest progress message and the monotonic time it arrived."""
        with self._lock:
            return self._progress, self._progress_at

    def _run(self) -> None:
        opts = SocketOptions(rcvhwm=4, max_message_bytes=self._max)
        sock = connect(self._ctx, zmq.SUB, self._endpoint, opts, subscribe=TOPIC_WEIGHTS, keys=self._keys)
        sock.setsockopt(zmq.SUBSCRIBE, TOPIC_PROGRESS)
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                if not poller.poll(100):
                    continue
                newest: dict[bytes, memoryview] = {}
                while True:  # drain: only the newest of each topic matters
                    try:
                        # copy=False: a 2 MB blob is decoded straight from libzmq's buffer, not copied first.
                        parts = sock.recv_multipart(zmq.NOBLOCK, copy=False)
                    except zmq.Again:
                        break
                    if len(parts) != 2:
                        self.rejected += 1
                        continue
                    newest[parts[0].bytes] = parts[1].buffer
                for topic, frame in newest.items():
                    self._accept(topic, frame)
        finally:
            sock.close(linger=0)

    def _accept(self, topic: bytes, frame: memoryview) -> None:
        try:
            msg = decode(frame)
        except ProtocolError as exc:
            self.rejected += 1
            log.warning("ignored a bad frame on the weights socket: %s", exc)
            return
        if isinstance(msg, Progress) and topic == TOPIC_PROGRESS:
            with self._lock:
                self._progress, self._progress_at = msg, time.monotonic()
                self._session = msg.session
        elif isinstance(msg, Weights) and topic == TOPIC_WEIGHTS:
            current = self.latest()
            if current is not None and msg.version == current.version and msg.rev == current.rev:
                return  # a re-publish of what we have
            try:
                policy = LocalPolicy(msg)
            except ValueError as exc:
                self.rejected += 1
                log.warning("ignored weights version %d: %s", msg.version, exc)
                return
            with self._lock:
                self._policy = policy
                self.arrivals.append(msg.version)
            self.received += 1
            self.swapped_at[msg.version] = time.monotonic()
            self.ready_wall[msg.version] = time.time()
