"""The actor's configuration: TOML table [actor], env SACLSTM_<KEY>, flags --<key>."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import ClassVar

from protocol.config import check

FLOW_MODES = ("realtime", "rate-limited")


def _f(default, help: str):  # noqa: A002
    return field(default=default, metadata={"help": help})


def default_actor_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class ActorConfig:
    """Everything an actor process (daemon or embedded client) needs."""

    # Keys that did something once: a config that still sets one fails at start with the reason, not as unknown.
    RETIRED: ClassVar[dict[str, str]] = {
        "threads": "retired: it had no effect; the numpy policy's BLAS threads follow OPENBLAS_NUM_THREADS (the "
                   "daemon sets 1 unless the environment says otherwise); remove the key",
        "send_state": "retired: a learner that trains from stored state asks for it (its weights' state_every) and "
                      "actors send it then; remove the key",
    }

    ingest: str = _f("tcp://127.0.0.1:5555", "learner's experience endpoint (PUSH connects here)")
    weights: str = _f("tcp://127.0.0.1:5556", "learner's weights endpoint (SUB connects here)")
    actor_id: str = _f("", "this process's sender id; empty = hostname-pid")
    curve_server_key: str = _f("", "the learner's CURVE public key file (server.key); turns CURVE on")
    curve_secret: str = _f("", "this actor's CURVE secret key file (clientN.key_secret)")
    env: str = _f("Pendulum-v1", "Gymnasium environment id (daemon only)")
    env_kwargs: str = _f("", "extra gym.make keyword arguments as key=value,key=value")
    bots: int = _f(1, "bots (environment instances) this actor runs")
    obs_mask: tuple[int, ...] = _f((), "observation indices to keep, e.g. 2 for Pendulum-V; empty = all")
    eval_mode: bool = _f(False, "deterministic actions, send no experience (SACLSTM_EVAL_MODE)")
    eval_sample: bool = _f(False, "in eval mode, sample each action from the policy as training does instead of "
                                  "playing its mean (a mixed strategy, against opponents that learn where one goes)")
    flow: str = _f("", "realtime (never wait, drop when full) or rate-limited; empty = rate-limited for the daemon, realtime for embedded bots")
    flow_tolerance: int = _f(64, "steps the actors may run ahead of the learner at its target UTD (at least 1 / utd is used)")
    flow_timeout_s: float = _f(10.0, "silence from the learner (or its books standing still while an actor waits) "
                                     "after which rate-limited actors continue")
    flush_steps: int = _f(32, "experience batch size: flush at every episode step that is a multiple of it")
    flush_ms: float = _f(250.0, "flush a partial batch after this many milliseconds")
    label_wait: int = _f(0, "steps a due batch waits before it leaves, so that action targets labelled later (a "
                            "shot's aim in hindsight: BotClient.label, or an env's info['action_targets']) go with "
                            "it; the episode's end sends what waits; 0 = batches leave when due")
    queue: int = _f(64, "experience messages queued for the learner before new ones are dropped")
    close_linger_s: float = _f(10.0, "at shutdown, how long queued experience may take to reach the learner")
    max_steps: int = _f(0, "stop after this many environment steps in total; 0 = run until stopped")
    max_episodes: int = _f(0, "stop after this many episodes in total; 0 = no limit")
    heartbeat_s: float = _f(1.0, "heartbeat period")
    checkpoint: str = _f("", "a checkpoint file to act from until (or without) a learner's weights; re-read when it changes")
    checkpoint_reload_s: float = _f(5.0, "how often the checkpoint file is re-stat'ed")
    seed: int = _f(0, "random seed (environments and sampling)")
    log_level: str = _f("INFO", "DEBUG, INFO, WARNING or ERROR")

    def __post_init__(self) -> None:
        check(bool(self.curve_server_key) == bool(self.curve_secret), "curve_server_key", self.curve_server_key,
              "curve_server_key and curve_secret go together")
        check(self.flow in ("",) + FLOW_MODES, "flow", self.flow, f"must be one of {FLOW_MODES}")
        check(self.bots >= 1, "bots", self.bots, "must be at least 1")
        check(self.flush_steps >= 1, "flush_steps", self.flush_steps, "must be at least 1")
        check(self.flush_ms > 0, "flush_ms", self.flush_ms, "must be above 0")
        check(self.label_wait >= 0, "label_wait", self.label_wait, "must be 0 (off) or a number of steps")
        check(self.queue >= 1, "queue", self.queue, "must be at least 1, or every batch is dropped")
        check(self.flow_tolerance >= 0, "flow_tolerance", self.flow_tolerance, "must be 0 or more")
        check(self.flow_timeout_s > 0, "flow_timeout_s", self.flow_timeout_s,
              "must be above 0, or a silent learner would stop rate-limited actors for good")
        check(all(i >= 0 for i in self.obs_mask), "obs_mask", self.obs_mask, "indices must be 0 or more")
        check(self.max_steps >= 0 and self.max_episodes >= 0, "max_steps", self.max_steps, "must be 0 or more")
        check(self.heartbeat_s > 0, "heartbeat_s", self.heartbeat_s, "must be above 0")
        check(self.log_level.upper() in ("DEBUG", "INFO", "WARNING", "ERROR"), "log_level", self.log_level, "unknown level")

    def resolved_id(self) -> str:
        return self.actor_id or default_actor_id()
