"""One actor process's link to the learner: experience out, weights in, books kept.

Shared by every bot of the process: one PUSH socket (sends never block; a
full queue drops the message and counts its steps), one weights subscriber,
one sequence counter, heartbeats, and flow control. Call `housekeeping()`
often (every tick is fine: it only looks at the clock).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import zmq

from actor.config import ActorConfig
from actor.weights import WeightsSubscriber
from protocol import SOFTWARE_VERSION, Bye, Heartbeat, Hello, Message, Progress, encode
from protocol.flow import SILENT, STANDSTILL, STEP, Pacer, may_step
from protocol.sockets import SocketOptions, connect, try_send

log = logging.getLogger("saclstm.actor")


@dataclass(frozen=True)
class BotSpec:
    """What a bot tells the learner in its hello."""

    name: str
    obs_low: np.ndarray
    obs_high: np.ndarray
    act_low: np.ndarray
    act_high: np.ndarray


class ActorLink:
    """Sockets, counters, heartbeat and flow control for one sender id."""

    def __init__(self, cfg: ActorConfig, realtime_default: bool = True) -> None:
        self.cfg = cfg
        self.sender = cfg.resolved_id()
        self.realtime = (cfg.flow or ("realtime" if realtime_default else "rate-limited")) == "realtime"
        self.ctx = zmq.Context()
        keys = None
        if cfg.curve_server_key:
            from protocol.curve import ClientKeys

            keys = ClientKeys.load(cfg.curve_server_key, cfg.curve_secret)
        self.push = connect(self.ctx, zmq.PUSH, cfg.ingest, SocketOptions(sndhwm=cfg.queue, linger_ms=1000), keys=keys)
        self.weights = WeightsSubscriber(self.ctx, cfg.weights, keys=keys).start()
        self.store = None
        if cfg.checkpoint:
            from actor.store import CheckpointStore

            self.store = CheckpointStore(cfg.checkpoint, cfg.checkpoint_reload_s, on_reload=self.weights.offer)
        self.bots: dict[str, BotSpec] = {}
        self.seq = 0
        self.sent = self.dropped = 0  # experience steps
        self.dropped_msgs = 0
        self.labels_late = 0  # action targets its clients dropped: their step had left (heartbeat, 1.6)
        self.rounds = self.episodes = 0
        self._last_heartbeat = self._last_hello = 0.0
        self._session: int | None = None
        self._silent_logged = False
        self._flow_warned = ""
        self.flow_waits = 0
        self.flow_wait_s = 0.0
        self._waiting_since: float | None = None
        self._hello_failed: set[str] = set()
        self._born = time.monotonic()
        self.pacer = Pacer(cfg.flow_timeout_s, self._born)
        self._first_logged = False
        self._sent_base = 0

    def send(self, msg_for_seq, steps: int = 0) -> bool:
        """Encode with the next seq and send without blocking; count the steps either way."""
        msg: Message = msg_for_seq(self.sender, self.seq)
        self.seq += 1
        ok = try_send(self.push, encode(msg))
        if steps:
            if ok:
                self.sent += steps
            else:
                self.dropped += steps
        if not ok:
            self.dropped_msgs += 1
        return ok

    def register(self, spec: BotSpec, eval_mode: bool) -> None:
        self.bots[spec.name] = spec
        self._hello(spec, eval_mode)

    def _hello(self, spec: BotSpec, eval_mode: bool) -> None:
        """Say hello; a hello that found no connected learner is tried again at the next housekeeping."""
        ok = self.send(lambda s, q: Hello(s, q, spec.name, len(spec.obs_low), len(spec.act_low), spec.obs_low,
                                     spec.obs_high, spec.act_low, spec.act_high, f"saclstm {SOFTWARE_VERSION}",
                                     eval_mode))
        (self._hello_failed.discard if ok else self._hello_failed.add)(spec.name)

    def ensure_hello(self, bot: str) -> None:
        """Before a bot's experience: if its hello never left, send it first (one PUSH socket keeps order),
        so the learner never sees experience from a bot it has not met."""
        if bot in self._hello_failed and bot in self.bots:
            self._hello(self.bots[bot], self.cfg.eval_mode)

    def housekeeping(self) -> None:
        """Heartbeats; hello again until weights arrive or when the learner restarted."""
        now = time.monotonic()
        progress, at = self.weights.progress()
        restarted = progress is not None and self._session is not None and progress.session != self._session
        if progress is not None:
            # The first session read is no change: what was sent before it went to this learner, and counts.
            if restarted:
                self._sent_base = self.sent  # this learner has seen none of what went to the last one
                log.warning("the learner restarted (new session); saying hello again, acting on weights version %s meanwhile",
                            self.version())
            self._session = progress.session
        if self._first_logged is False and self.weights.latest() is not None:
            self._first_logged = True
            log.info("first weights: version %d, %.3f s after connecting", self.version(), self.first_weights_s() or 0.0)
        if restarted or self._hello_failed or (self.weights.latest() is None and now - self._last_hello >= 0.1):
            self._last_hello = now
            for spec in self.bots.values():
                if restarted or spec.name in self._hello_failed or self.weights.latest() is None:
                    self._hello(spec, self.cfg.eval_mode)
        if progress is not None and now - at > max(5.0, self.cfg.flow_timeout_s):
            if not self._silent_logged:
                log.warning("no word from the learner for %.0f s; acting on weights version %s", now - at, self.version())
                self._silent_logged = True
        elif self._silent_logged and progress is not None:
            log.info("the learner is back")
            self._silent_logged = False
        if now - self._last_heartbeat >= self.cfg.heartbeat_s:
            self._last_heartbeat = now
            self.send(lambda s, q: Heartbeat(s, q, self.rounds, self.episodes, self.sent, self.dropped,
                                             round(self.held_s(), 3), self.labels_late))

    def first_weights_s(self) -> float | None:
        """Seconds from connecting to holding the first weights (the learner promises about one)."""
        times = self.weights.swapped_at
        return min(times.values()) - self._born if times else None

    def version(self) -> int:
        policy = self.weights.latest()
        return policy.version if policy is not None else 0

    def held_s(self) -> float:
        """Seconds flow control has held this actor back, the wait under way included (heartbeat `held_s`)."""
        since = self._waiting_since
        return self.flow_wait_s + (time.monotonic() - since if since is not None else 0.0)

    def wait_for_learner(self, stop: threading.Event | None = None, buffered: Callable[[], int] = lambda: 0,
                         flush: Callable[[], None] | None = None) -> None:
        """Rate-limited mode: before a round, wait while the steps this actor took and the learner has not
        settled (sent, or still `buffered`) do not fit in its share of the learner's slack (protocol/flow.py).
        A waiting actor first sends what it buffered (`flush`): the learner may need those steps to train.
        `stop` ends the wait at once; a learner silent for flow_timeout_s, or whose books stand still that
        long while this actor waits, lets it go on, with a warning."""
        if self.realtime or self.cfg.eval_mode:
            return
        start = time.monotonic()
        while True:
            self.housekeeping()  # first: a new session resets what counts as sent to this learner
            progress, at = self.weights.progress()
            now = time.monotonic()
            decision = self.pacer.decide(now, progress, at, self.sender, self.sent - self._sent_base, buffered(),
                                         self.cfg.flow_tolerance, start)
            if decision == STEP:
                self._flow_warned = ""
                break
            if decision in (SILENT, STANDSTILL):
                if progress is not None:  # never heard from: the learner is not up yet, nothing to warn of
                    self._warn_released(decision, now - at)
                break
            if stop is not None and stop.is_set():
                break
            if flush is not None and buffered():
                flush()
            self._waiting_since = start
            if stop is not None:
                stop.wait(0.002)
            else:
                time.sleep(0.002)
        self._waiting_since = None
        waited = time.monotonic() - start
        if waited > 0.001:
            self.flow_waits += 1
            self.flow_wait_s += waited

    def _may_step(self, progress: Progress, buffered: int = 0) -> bool:
        """protocol.flow's rule, on what this actor took for the learner now running."""
        return may_step(progress, self.sender, self.sent - self._sent_base, buffered, self.cfg.flow_tolerance)

    def _warn_released(self, why: str, silent_s: float) -> None:
        if self._flow_warned == why:
            return
        self._flow_warned = why
        if why == SILENT:
            log.warning("flow control: learner silent for %.1f s, continuing without it", silent_s)
        else:
            log.warning("flow control: the learner's books stood still for %.0f s while this actor waited (steps lost "
                        "on the way, or a learner that cannot train); continuing without it until they move",
                        self.cfg.flow_timeout_s)

    def close(self) -> None:
        """Say bye with the final counts, then close. What is queued (bye last) gets `close_linger_s` to
        reach the learner, so a drained queue closes the books; never hangs past that. Closing again does
        nothing (a bot's `finally` may close what its code closed already)."""
        if self.push.closed:
            return
        self.send(lambda s, q: Bye(s, q, self.sent, self.dropped, self.labels_late))
        linger = self._linger_s()
        self.weights.stop()
        if self.store is not None:
            self.store.close()
        self.push.close(linger=int(linger * 1000))
        self.ctx.term()

    def _linger_s(self) -> float:
        """close_linger_s for a learner heard from lately. One silent for 1.5 s (it publishes progress at least
        every second) is gone: nothing would take what is queued, so a stopped actor (SIGINT while it waits on a
        dead learner) exits at once instead of waiting out the linger."""
        progress, at = self.weights.progress()
        if progress is not None and time.monotonic() - at > 1.5:
            return min(self.cfg.close_linger_s, 0.1)
        return self.cfg.close_linger_s
