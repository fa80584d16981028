"""The learner's whole training state as plain arrays and metadata, and back, bit for bit.

What a checkpoint needs for an exact resume: every network (actor, critics,
targets), log-alpha, every Adam moment and step count, the torch RNG state.
Tensors become numpy copies here, in the learner's thread, so the saver
process only ever sees bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from learner.sac import SAC
from protocol.checkpoint import CheckpointError

_MODULES = ("actor", "critics", "targets")
_OPTIMISERS = ("actor_opt", "critic_opt", "alpha_opt")


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
    out["torso.shared"] = np.array(sac.shared, np.bool_)
    return out


def _check_torso(sac: SAC, tensors: dict[str, np.ndarray]) -> None:
    """Optimiser moments are stored by position, so a checkpoint of the other torso layout would load
    moments onto the wrong parameters; refuse it. Checkpoints from before the option are separate."""
    shared = bool(tensors["torso.shared"]) if "torso.shared" in tensors else False
    if shared != sac.shared:
        have, want = ("shared" if shared else "separate"), ("shared" if sac.shared else "separate")
        raise CheckpointError(f"checkpoint was trained with torso = {have}, this learner uses torso = {want}")


def restore(sac: SAC, tensors: dict[str, np.ndarray]) -> None:
    """Load a snapshot into `sac` (built with the same architecture); shapes are checked first."""
    _check_torso(sac, tensors)
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


def check_against(sac: SAC) -> Any:
    """A `check(meta, tensors)` for load_newest: the checkpoint must fit this learner's networks."""
    shapes = {f"{mod}.{name}": tuple(t.shape) for mod in _modules(sac)
              for name, t in getattr(sac, mod).state_dict().items()}

    def check(meta: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        _check_torso(sac, tensors)
        for key, shape in shapes.items():
            if key not in tensors:
                raise CheckpointError(f"missing tensor {key}")
            if tuple(tensors[key].shape) != shape:
                raise CheckpointError(f"{key}: shape {tuple(tensors[key].shape)}, this config needs {shape}")

    return check
