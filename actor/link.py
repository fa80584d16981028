"""One actor process's link to the learner: experience out, weights in, books kept.

Shared by every bot of the process: one PUSH socket (sends never block; a
full queue drops the message and counts its steps), one weights subscriber,
one sequence counter, heartbeats, and flow control. Call `housekeeping()`
often (every tick is fine: it only looks at the clock).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import zmq

from actor.config import ActorConfig
from actor.weights import WeightsSubscriber
from protocol import SOFTWARE_VERSION, Bye, Heartbeat, Hello, Message, Progress, encode
from protocol.flow import may_step
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
        self.rounds = self.episodes = 0
        self._last_heartbeat = self._last_hello = 0.0
        self._session: int | None = None
        self._silent_logged = False
        self._flow_warned = False
        self.flow_waits = 0
        self.flow_wait_s = 0.0
        self._hello_failed: set[str] = set()
        self._born = time.monotonic()
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
            if progress.session != self._session:
                self._sent_base = self.sent  # this learner has seen none of what went to the last one
            if restarted:
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
            self.send(lambda s, q: Heartbeat(s, q, self.rounds, self.episodes, self.sent, self.dropped))

    def first_weights_s(self) -> float | None:
        """Seconds from connecting to holding the first weights (the learner promises about one)."""
        times = self.weights.swapped_at
        return min(times.values()) - self._born if times else None

    def version(self) -> int:
        policy = self.weights.latest()
        return policy.version if policy is not None else 0

    def wait_for_learner(self, stop: object = None) -> None:
        """Rate-limited mode: pause while the actors are more than `flow_tolerance` steps ahead of
        the learner at its target UTD. Silence past flow_timeout_s lets the actor go on."""
        if self.realtime or self.cfg.eval_mode:
            return
        start = time.monotonic()
        while True:
            progress, at = self.weights.progress()
            now = time.monotonic()
            if progress is None and now - self._born < self.cfg.flow_timeout_s:
                self.housekeeping()  # not heard from the learner yet: wait for it, a while
                time.sleep(0.01)
                continue
            if progress is None or now - at > self.cfg.flow_timeout_s:
                if progress is not None and not self._flow_warned:
                    log.warning("flow control: learner silent for %.1f s, continuing without it", now - at)
                    self._flow_warned = True
                break
            self._flow_warned = False
            if self._may_step(progress):
                break
            if getattr(stop, "is_set", lambda: False)():
                break
            self.housekeeping()
            time.sleep(0.002)
        waited = time.monotonic() - start
        if waited > 0.001:
            self.flow_waits += 1
            self.flow_wait_s += waited

    def _may_step(self, progress: Progress) -> bool:
        """protocol.flow's rule, on what this actor sent to the learner now running."""
        return may_step(progress, self.sender, self.sent - self._sent_base, self.cfg.flow_tolerance)

    def close(self) -> None:
        """Say bye with the final counts, then close. What is queued (bye last) gets `close_linger_s` to
        reach the learner, so a drained queue closes the books; never hangs past that."""
        self.send(lambda s, q: Bye(s, q, self.sent, self.dropped))
        self.weights.stop()
        if self.store is not None:
            self.store.close()
        self.push.close(linger=int(self.cfg.close_linger_s * 1000))
        self.ctx.term()
