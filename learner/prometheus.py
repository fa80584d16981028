"""Prometheus and health endpoints for the learner: /metrics, /healthz, /readyz.

A small HTTP server on its own thread, bound to loopback unless told
otherwise. It never touches the learner's state: the learner hands it a
fresh health record (protocol/health.py, immutable) every second, and a
collector turns the newest one into conventional series (`saclstm_` prefix, `_total`
counters, `_seconds` units) at scrape time.

    /metrics  Prometheus text format
    /healthz  200 while the learner loop is alive (its snapshot is fresh), else 503
    /readyz   200 once the sockets are bound and weights were published, else 503
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from protocol.health import ActorHealth, Health, HealthReader

log = logging.getLogger("saclstm.learner")

STALE_AFTER_S = 5.0


class HealthCollector(Collector):
    """Series from the newest health record, kept as every watcher of the learner's health keeps it
    (protocol/health.HealthReader)."""

    def __init__(self) -> None:
        self.reader = HealthReader(log.warning)

    def update(self, health: Health) -> None:
        self.reader.put(health)

    def collect(self) -> Iterator[Any]:
        if self.reader.updated is None:
            return
        h = self.reader.latest
        yield _g("saclstm_uptime_seconds", "seconds since the learner started", h.uptime_s)
        yield _c("saclstm_env_steps", "experience steps accepted", h.env_steps)
        yield _c("saclstm_grad_steps", "gradient steps taken", h.grad_steps)
        yield _c("saclstm_episodes", "episodes reported by actors", h.episodes)
        yield _g("saclstm_weights_version", "newest weights version published", h.version)
        yield _g("saclstm_utd_target", "target gradient steps per transition", h.utd_target)
        yield _g("saclstm_utd_achieved", "achieved gradient steps per transition past learning_starts", h.utd_achieved)
        yield _g("saclstm_ingest_transitions_per_second", "accepted steps per second (10 s window)", h.ingest_tps)
        yield _g("saclstm_updates_per_second", "gradient steps per second (10 s window)", h.updates_per_s)
        yield _g("saclstm_replay_transitions", "trainable transitions in replay", h.replay.transitions)
        yield _g("saclstm_replay_capacity", "replay capacity in transitions", h.replay.capacity)
        yield _g("saclstm_replay_bytes", "replay memory, preallocated", h.replay.bytes)
        yield _g("saclstm_replay_with_state", "share of live chunks that start from a stored LSTM state",
                 h.replay.with_state)
        if h.recent_return is not None:
            yield _g("saclstm_episode_return_recent", "mean return of the last 10 training episodes", h.recent_return)
        lag = GaugeMetricFamily("saclstm_policy_lag", "learner version minus the version that acted", labels=["quantile"])
        for q, value in (("0.5", h.policy_lag.p50), ("0.9", h.policy_lag.p90), ("1", h.policy_lag.max)):
            lag.add_metric([q], value)
        yield lag
        rejects = CounterMetricFamily("saclstm_rejects", "frames rejected, by reason", labels=["reason"])
        for reason, count in h.rejects.items():
            rejects.add_metric([reason], count)
        yield rejects
        yield from _actor_series(h.actors)
        saver = h.saver
        if saver is not None:
            yield _c("saclstm_checkpoint_saves", "checkpoints written", saver.saves)
            yield _c("saclstm_checkpoint_skipped", "saves skipped while one was in flight", saver.skipped)
            yield _c("saclstm_checkpoint_failures", "saves that failed", saver.failures)
            yield _c("saclstm_saver_restarts", "saver process restarts", saver.restarts)
            yield _g("saclstm_checkpoint_last_save_seconds", "duration of the last save", saver.last_ms / 1000)
        for key in ("critic_loss", "actor_loss", "alpha"):
            if key in h.losses:
                yield _g(f"saclstm_{key}", f"{key} of the last training pass", h.losses[key])


def _g(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=float(value))


def _c(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=float(value))


def _actor_series(actors: tuple[ActorHealth, ...]) -> Iterator[Any]:
    sent = CounterMetricFamily("saclstm_actor_sent_steps", "steps the actor handed to its socket", labels=["actor"])
    received = CounterMetricFamily("saclstm_actor_received_steps", "steps the learner accepted", labels=["actor"])
    dropped = CounterMetricFamily("saclstm_actor_dropped_steps", "steps dropped at the actor", labels=["actor"])
    rejected = CounterMetricFamily("saclstm_actor_rejected_steps", "steps the learner rejected", labels=["actor"])
    alive = GaugeMetricFamily("saclstm_actor_alive", "1 while the actor is heard from", labels=["actor"])
    age = GaugeMetricFamily("saclstm_actor_last_seen_seconds", "seconds since the actor's last message", labels=["actor"])
    for a in actors:
        sent.add_metric([a.sender], a.sent)
        received.add_metric([a.sender], a.received)
        dropped.add_metric([a.sender], a.dropped)
        rejected.add_metric([a.sender], a.rejected)
        alive.add_metric([a.sender], 1.0 if a.alive else 0.0)
        age.add_metric([a.sender], a.age_s)
    yield from (sent, received, dropped, rejected)
    yield alive
    yield age


class HealthServer:
    """Serves the three endpoints; start() and stop() are explicit."""

    def __init__(self, host: str, port: int) -> None:
        self.collector = HealthCollector()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)
        self.ready = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                if self.path == "/metrics":
                    self._reply(200, generate_latest(server.registry), "text/plain; version=0.0.4; charset=utf-8")
                elif self.path == "/healthz":
                    fresh = server.collector.reader.age_s() < STALE_AFTER_S
                    self._reply(200 if fresh else 503, b"ok\n" if fresh else b"stale\n")
                elif self.path == "/readyz":
                    self._reply(200 if server.ready else 503, b"ready\n" if server.ready else b"not ready\n")
                else:
                    self._reply(404, b"not found\n")

            def _reply(self, code: int, body: bytes, ctype: str = "text/plain") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass  # scrapes every few seconds would flood the learner's log

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="saclstm-http", daemon=True)

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
