"""What the learner trains, and where it starts from.

    build_model:  the SAC (networks, optimisers, temperature), its replay, the action scale and the
                  ingest limits, from (config, obs_dim, act_dim, low, high); it publishes nothing
    first_model:  the newest checkpoint that fits, its books carried on; else a model of the configured
                  dims; else none yet, and the service builds one from the first hello's dims

Another replay or another update changes this file, not the loop.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from learner.config import LearnerConfig
from learner.networks import Arch
from learner.persistence import Persistence
from learner.replay import SequenceReplay
from learner.sac import SAC, SACConfig
from learner.state import Carried, restore
from protocol import Limits
from protocol.arch import MAX_WEIGHTS_BYTES
from protocol.checkpoint import CheckpointError
from protocol.scaling import ActionScale

log = logging.getLogger("saclstm.learner")


@dataclass(frozen=True, eq=False)  # eq=False: compared by identity (fields compared would be arrays)
class Model:
    """One run's shapes and the state trained on them; `limits` is what ingest accepts for it."""

    sac: SAC
    replay: SequenceReplay
    low: np.ndarray
    high: np.ndarray
    scale: ActionScale
    limits: Limits


def waiting_limits(cfg: LearnerConfig) -> Limits:
    """What ingest accepts before there is a model: the configured dims, if any, and only a hello whose D and A
    keep the weights frame within what a bot must accept (SPEC.md, Sockets): the first one builds the model."""
    return Limits(max_message_bytes=cfg.max_message_bytes, obs_dim=cfg.obs_dim, act_dim=cfg.act_dim,
                  state_dim=cfg.hidden,
                  weights_fit=lambda obs_dim, act_dim: cfg.weights_frame_bytes(obs_dim, act_dim) <= MAX_WEIGHTS_BYTES)


def sac_config(cfg: LearnerConfig) -> SACConfig:
    """The update's settings out of the learner's (SACConfig.of, by name; the memory benchmark uses it too)."""
    return SACConfig.of(cfg)


def build_model(cfg: LearnerConfig, obs_dim: int, act_dim: int, low: np.ndarray, high: np.ndarray) -> Model:
    """A fresh model of these shapes (seeded by the process's torch RNG, the replay by cfg.seed)."""
    arch = Arch(obs_dim, act_dim, cfg.hidden, cfg.fc, cfg.prev_action, cfg.prev_reward,
                act_low=tuple(float(x) for x in low), act_high=tuple(float(x) for x in high), memoryless=cfg.memoryless)
    sac = SAC(arch, sac_config(cfg), cfg.device)
    # Stored actor states cost 2 x hidden floats per chunk slot: kept only when training starts from them.
    replay = SequenceReplay(cfg.capacity, cfg.chunks.seq_len, cfg.chunks.overlap, obs_dim, act_dim,
                            state_dim=cfg.hidden if cfg.stored_state else 0,
                            opponent_policy=cfg.opponent_policy, seed=cfg.seed, targets=cfg.action_target_weight > 0)
    low, high = low.astype(np.float32), high.astype(np.float32)
    limits = Limits(max_message_bytes=cfg.max_message_bytes, obs_dim=obs_dim, act_dim=act_dim,
                    state_dim=cfg.hidden, act_low=arch.act_low, act_high=arch.act_high)
    log.info("model: obs_dim %d, act_dim %d, hidden %d%s; replay %d transitions, %d chunk slots of %d steps (%d of "
             "context), %.1f MiB", obs_dim, act_dim, cfg.hidden, ", memoryless" if arch.memoryless else "",
             replay.capacity, replay.slots, replay.seq_len, replay.overlap, replay.nbytes / 2**20)
    return Model(sac, replay, low, high, ActionScale(low, high), limits)


def first_model(cfg: LearnerConfig, files: Persistence | None) -> tuple[Model | None, Carried | None]:
    """The one place a learner's first model is decided. Carried is None unless a checkpoint was taken up."""
    if files is not None:
        found = files.newest()
        if found is not None:
            return resume_model(cfg, files, *found)
    if cfg.obs_dim and cfg.act_dim and cfg.act_low and cfg.act_high:
        low, high = np.array(cfg.act_low, np.float32), np.array(cfg.act_high, np.float32)
        return build_model(cfg, cfg.obs_dim, cfg.act_dim, low, high), None
    # The first Adam of a process costs about a second (torch.optim's lazy imports); pay it now,
    # not when the first hello is waiting for weights.
    torch.optim.Adam([torch.zeros(1, requires_grad=True)])
    return None, None


def resume_model(cfg: LearnerConfig, files: Persistence, path: Path, meta: dict[str, Any],
                 tensors: dict[str, np.ndarray]) -> tuple[Model, Carried | None]:
    """The checkpoint's model, state and replay file; one whose tensors do not fit leaves a fresh model of its
    shapes and nothing carried."""
    arch = Arch.from_wire(meta["arch"])
    low, high = np.array(arch.act_low, np.float32), np.array(arch.act_high, np.float32)
    model = build_model(cfg, arch.obs_dim, arch.act_dim, low, high)
    try:
        restore(model.sac, tensors)
    except CheckpointError as exc:
        log.warning("checkpoint: %s does not fit (%s); starting fresh", path, exc)
        return build_model(cfg, arch.obs_dim, arch.act_dim, model.low, model.high), None
    carried = Carried.from_meta(meta)
    files.load_replay(model.replay)
    return model, carried
