"""Whether a checkpoint can play our tank: asked before a tank plays a file (`tank --eval`, `tank-eval`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from actor.bots.tankroyale.brain import TankControls


def checkpoint_problem(path: str | Path, controls: TankControls | None = None) -> str | None:
    """Why the checkpoint at `path` cannot play our tank ("checkpoint PATH: reason"), or None when it can.

    A tank whose checkpoint does not load only logs a line and plays on without it, so an evaluation of a
    bad file would print a win rate that measures no checkpoint at all. `tank-eval` and `tank --eval` ask
    this first and stop. The actor must also fit the tank: its observation and action widths and its action
    bounds are the tank's (brain.py), or its actions would be read against the wrong numbers.
    """
    import numpy as np

    from actor.bots.tankroyale.brain import ACT_HIGH, ACT_LOW, TankControls, obs_dim
    from actor.store import policy_from_checkpoint
    from protocol.checkpoint import CheckpointError, decode_checkpoint

    if not Path(path).is_file():
        return f"no checkpoint file at {path}"
    try:
        arch = policy_from_checkpoint(*decode_checkpoint(Path(path).read_bytes())).arch
    except (OSError, CheckpointError, ValueError, KeyError, TypeError) as exc:
        return f"checkpoint {path} not usable: {exc}"
    misfit = f"checkpoint {path} does not fit the tank:"
    width = obs_dim(controls or TankControls())  # the form's observation: 35, or 40 with observe = "duel"
    if arch.obs_dim != width:
        return (f"{misfit} its actor reads {arch.obs_dim} observations, the tank gives {width} (is [controls] "
                "observe the one it was trained with?)")
    if arch.act_dim != len(ACT_LOW):
        return f"{misfit} its actor gives {arch.act_dim} actions, the tank takes {len(ACT_LOW)}"
    if not (np.allclose(arch.act_low, ACT_LOW, atol=1e-5) and np.allclose(arch.act_high, ACT_HIGH, atol=1e-5)):
        return (f"{misfit} its action bounds {list(arch.act_low)} .. {list(arch.act_high)} are not the tank's "
                f"{ACT_LOW.tolist()} .. {ACT_HIGH.tolist()}")
    return None

