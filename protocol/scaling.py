"""Actions in two units: the environment's [act_low, act_high] and the policy's [-1, 1].

The policy is a tanh, so it acts in [-1, 1]; the environment (and the wire's `experience.action`) takes
its own units. SPEC.md's network section states both maps; every part of saclstm that converts uses
this module, so they cannot drift apart.
"""

from __future__ import annotations

import numpy as np

_ONE = np.float32(1.0)


def to_policy(action: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Environment units -> [-1, 1], clipped (what a previous action is fed to the network as)."""
    return np.clip(2.0 * (action - low) / (high - low) - 1.0, -1.0, 1.0).astype(np.float32)


def to_env(unit: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """[-1, 1] -> environment units: low + (unit + 1) / 2 * (high - low)."""
    return (low + (unit + 1.0) * 0.5 * (high - low)).astype(np.float32)


class ActionScale:
    """`to_policy` for a whole run's batches: scale and offset are worked out once, so each batch costs
    four in-place array operations (bounds of exactly -1 and 1 map exactly)."""

    def __init__(self, low: np.ndarray, high: np.ndarray) -> None:
        low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
        self.scale = (2.0 / (high - low)).astype(np.float32)
        self.offset = (-1.0 - low * (2.0 / (high - low))).astype(np.float32)

    def __call__(self, action: np.ndarray) -> np.ndarray:
        out = action * self.scale
        out += self.offset
        np.minimum(out, _ONE, out=out)
        return np.maximum(out, -_ONE, out=out)
