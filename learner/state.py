"""A learner's checkpoint: what it holds and whether it fits this learner, decided here and nowhere else.

    holds   meta: the books a resumed run carries on (`Carried`), the game, the actor's arch, the config
            tensors: every network (actor, critics, targets, a recall head), log-alpha, every Adam moment and
            step count, the torch RNG state, and the torso layout (`torso.shared`, its one record)
    fits    `fits(cfg, meta, tensors)`: the architecture and torso layout the config asks for (the learner
            resumes from the newest file that fits, protocol/checkpoint.load_newest); `restore` then holds
            every tensor's name and shape to the model built from it

Tensors become numpy copies here, in the learner's thread, so the saver process only ever sees bytes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from learner.config import LearnerConfig
from learner.networks import Arch
from learner.sac import SAC
from protocol.checkpoint import CheckpointError

_MODULES = ("actor", "critics", "targets")
_OPTIMISERS = ("actor_opt", "critic_opt", "alpha_opt")
_TORSO = "torso.shared"  # a bool: the torso layout the optimiser moments were stored under


@dataclass(frozen=True)
class Carried:
    """The books a resumed run carries on from its checkpoint."""

    version: int
    grad_steps: int
    env_steps: int
    episodes: int

    @staticmethod
    def from_meta(meta: dict[str, Any]) -> Carried:
        return Carried(int(meta["version"]), int(meta["grad_steps"]), int(meta.get("env_steps", 0)),
                       int(meta.get("episodes", 0)))


def checkpoint(cfg: LearnerConfig, sac: SAC, books: Carried) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Everything a save writes: the metadata (books, game, arch, config) and the training state's tensors."""
    meta = {"game": cfg.game, "episodes": books.episodes, "grad_steps": books.grad_steps, "version": books.version,
            "env_steps": books.env_steps, "arch": sac.arch.to_wire(), "config": asdict(cfg)}
    return meta, snapshot(sac)


def torso(tensors: dict[str, np.ndarray]) -> str:
    """The torso layout a checkpoint was trained with; files from before the option are "separate"."""
    return "shared" if _TORSO in tensors and bool(tensors[_TORSO]) else "separate"


def fits(cfg: LearnerConfig, meta: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
    """CheckpointError naming both sides unless the checkpoint is of the model `cfg` asks for: its hidden and fc
    widths, inputs, dims (where the config sets them), memoryless or not, and torso layout. Memory is part of the
    fit although the tensors would load either way: a memory ablation resumed from the recurrent run's file (or
    the other way round) would no longer measure what memory buys."""
    try:
        arch = Arch.from_wire(meta["arch"])
    except (KeyError, ValueError, TypeError) as exc:
        raise CheckpointError(f"architecture unreadable: {exc}") from None
    want: dict[str, Any] = {"hidden": cfg.hidden, "fc": cfg.fc, "prev_action": cfg.prev_action,
                            "prev_reward": cfg.prev_reward, "obs_dim": cfg.obs_dim or arch.obs_dim,
                            "act_dim": cfg.act_dim or arch.act_dim, "memoryless": cfg.memoryless}
    got: dict[str, Any] = {k: getattr(arch, k) for k in want}
    want["torso"], got["torso"] = cfg.torso, torso(tensors)
    if got != want:
        raise CheckpointError(f"architecture {got} does not match this config {want}")


def _modules(sac: SAC) -> tuple[str, ...]:
    """The networks a checkpoint holds: the recall head too when this learner trains one."""
    return _MODULES + (("recall",) if sac.recall is not None else ())


def _np(t: torch.Tensor) -> np.ndarray:
    if t.device.type == "cpu":  # numpy's copy is one plain memcpy: no OpenMP barrier to stall on a busy machine
        return np.array(t.detach().numpy(), copy=True, order="C")
    return t.detach().to("cpu", copy=True).contiguous().numpy()


def snapshot(sac: SAC) -> dict[str, np.ndarray]:
    """Every tensor of the training state, copied."""
    out: dict[str, np.ndarray] = {}
    for mod in _modules(sac):
        for name, tensor in getattr(sac, mod).state_dict().items():
            out[f"{mod}.{name}"] = _np(tensor)
    out["log_alpha"] = _np(sac.log_alpha)
    for opt_name in _OPTIMISERS:
        opt: torch.optim.Optimizer = getattr(sac, opt_name)
        params = [p for group in opt.param_groups for p in group["params"]]
        for i, p in enumerate(params):
            for key, value in opt.state.get(p, {}).items():
                out[f"{opt_name}.{i}.{key}"] = _np(value) if torch.is_tensor(value) else np.array(value, np.float64)
    out["rng.torch"] = torch.get_rng_state().numpy().copy()
    out[_TORSO] = np.array(sac.shared, np.bool_)
    return out


def restore(sac: SAC, tensors: dict[str, np.ndarray]) -> None:
    """Load a snapshot into `sac` (built with the same architecture); the torso layout and every shape are
    checked first. Optimiser moments are stored by position, so a checkpoint of the other torso layout would
    load moments onto the wrong parameters: refused."""
    have, want = torso(tensors), "shared" if sac.shared else "separate"
    if have != want:
        raise CheckpointError(f"checkpoint was trained with torso = {have}, this learner uses torso = {want}")
    for mod in _modules(sac):
        module = getattr(sac, mod)
        own = module.state_dict()
        loaded = {}
        for name, tensor in own.items():
            key = f"{mod}.{name}"
            if key not in tensors:
                raise CheckpointError(f"missing tensor {key}")
            if tuple(tensors[key].shape) != tuple(tensor.shape):
                raise CheckpointError(f"{key}: shape {tensors[key].shape}, this config needs {tuple(tensor.shape)}")
            loaded[name] = torch.from_numpy(np.array(tensors[key]))
        module.load_state_dict(loaded)
    with torch.no_grad():
        sac.log_alpha.copy_(torch.from_numpy(np.array(tensors["log_alpha"])))
    for opt_name in _OPTIMISERS:
        opt: torch.optim.Optimizer = getattr(sac, opt_name)
        params = [p for group in opt.param_groups for p in group["params"]]
        for i, p in enumerate(params):
            prefix = f"{opt_name}.{i}."
            state = {key[len(prefix):]: torch.from_numpy(np.array(v)).to(p.device) for key, v in tensors.items()
                     if key.startswith(prefix)}
            if state:
                opt.state[p] = state
    torch.set_rng_state(torch.from_numpy(np.array(tensors["rng.torch"])))
