"""Where a run's figures go: the metrics socket and JSONL (always), Prometheus and TensorBoard (when asked).

The learner builds one pass line per training pass and one health record
(protocol/health.py) per second; `Observers` fans them out, so the service
loop never knows who watches. The socket gets the record's wire map; the
Prometheus collector reads the record itself.
"""

from __future__ import annotations

import logging
from typing import Any

import zmq

from learner.config import LearnerConfig
from learner.metrics import MetricsOut
from protocol.health import Health

log = logging.getLogger("saclstm.learner")


class TensorBoardOut:
    """Scalars under conventional tags (SB3's where they exist), x = gradient steps."""

    TAGS = {"critic_loss": "train/critic_loss", "actor_loss": "train/actor_loss", "alpha_loss": "train/ent_coef_loss",
            "alpha": "train/ent_coef", "entropy": "train/entropy", "utd_achieved": "train/utd_achieved",
            "ingest_tps": "time/ingest_tps", "recent_return": "rollout/ep_rew_mean"}

    def __init__(self, logdir: str) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:
            raise OSError(f"--tensorboard needs the tensorboard package (pip install 'saclstm[tensorboard]'): {exc}") from None
        self.writer = SummaryWriter(logdir)

    def pass_line(self, fields: dict[str, Any]) -> None:
        step = int(fields["steps"])
        for key, tag in self.TAGS.items():
            value = fields.get(key)
            if isinstance(value, (int, float)):
                self.writer.add_scalar(tag, value, step)
        self.writer.add_scalar("train/policy_lag_p50", fields["policy_lag"]["p50"], step)
        self.writer.add_scalar("time/env_steps", fields["env_steps"], step)

    def episode(self, ret: float, env_steps: int, eval_mode: bool) -> None:
        self.writer.add_scalar("eval/episode_return" if eval_mode else "rollout/episode_return", ret, env_steps)

    def close(self) -> None:
        self.writer.close()


class Observers:
    """The metrics socket + JSONL, and optionally Prometheus and TensorBoard."""

    def __init__(self, cfg: LearnerConfig, sock: zmq.Socket) -> None:
        self.metrics = MetricsOut(sock, cfg.metrics_path)
        self.http = None
        self.tb = TensorBoardOut(cfg.tensorboard) if cfg.tensorboard else None
        if cfg.prometheus_port >= 0:
            from learner.prometheus import HealthServer

            if cfg.prometheus_host not in ("127.0.0.1", "localhost", "::1") and not cfg.insecure_bind:
                log.warning("Prometheus endpoint on %s: it is not loopback and carries no authentication",
                            cfg.prometheus_host)
            try:
                self.http = HealthServer(cfg.prometheus_host, cfg.prometheus_port).start()
            except OSError as exc:
                raise OSError(f"cannot serve Prometheus on {cfg.prometheus_host}:{cfg.prometheus_port}: {exc}") from None
            log.info("Prometheus: http://%s:%d/metrics, /healthz, /readyz", cfg.prometheus_host, self.http.port)

    def pass_line(self, fields: dict[str, Any]) -> None:
        self.metrics.pass_line(fields)
        if self.tb is not None:
            self.tb.pass_line(fields)

    def episode(self, ret: float, env_steps: int, eval_mode: bool) -> None:
        if self.tb is not None:
            self.tb.episode(ret, env_steps, eval_mode)

    def health(self, health: Health) -> None:
        if self.http is not None:  # first: whoever sees the map on the socket can scrape the same figures
            self.http.collector.update(health)
        self.metrics.health(health.to_wire())

    def ready(self) -> None:
        if self.http is not None:
            self.http.ready = True

    def close(self) -> None:
        self.metrics.close()
        if self.http is not None:
            self.http.stop()
        if self.tb is not None:
            self.tb.close()
