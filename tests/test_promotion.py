"""The promotion gate: a worse candidate is refused, a better one becomes live; both scores are logged."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from deploy.promote import gate, promote
from learner.networks import Arch, actor_layout
from protocol.checkpoint import decode_checkpoint, encode_checkpoint, write_atomic


class Target(gym.Env):
    """One-step task: reward -(a - 0.5)^2. A policy is as good as its action is close to 0.5."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), -float((action[0] - 0.5) ** 2), True, False, {}


gym.register("SaclstmTarget-v0", entry_point=Target)


def checkpoint(path: Path, action: float) -> None:
    """An actor whose deterministic action is always `action` (all weights 0, the mean's bias atanh(action))."""
    arch = Arch(1, 1, hidden=4, fc=4, act_low=(-1.0,), act_high=(1.0,))
    tensors = {f"actor.{name}": np.zeros(shape, np.float32) for name, shape in actor_layout(arch)}
    tensors["actor.mean.bias"] = np.array([np.arctanh(action)], np.float32)
    write_atomic(path, encode_checkpoint({"arch": arch.to_wire(), "version": 1, "grad_steps": 1}, tensors))


def test_gate_rule() -> None:
    assert gate(-150, None, 0, None)[0]
    assert gate(-150, -140, 20, None)[0] and not gate(-170, -140, 20, None)[0]
    assert gate(-170, -140, 20, threshold=-180)[0]


def test_worse_candidate_refused_better_promoted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    live = tmp_path / "live.sacl"
    checkpoint(live, 0.2)  # score -(0.3)^2 = -0.09
    before = live.read_bytes()
    checkpoint(tmp_path / "worse.sacl", -0.5)  # -1.0
    checkpoint(tmp_path / "better.sacl", 0.45)  # -0.0025
    with caplog.at_level("INFO", logger="saclstm.promote"):
        assert not promote(tmp_path / "worse.sacl", live, "SaclstmTarget-v0", (), 3, margin=0.1, threshold=None)
        assert live.read_bytes() == before
        assert promote(tmp_path / "better.sacl", live, "SaclstmTarget-v0", (), 3, margin=0.0, threshold=None)
    meta, tensors = decode_checkpoint(live.read_bytes())
    assert meta["score"] == pytest.approx(-0.0025, abs=1e-4)
    assert tensors["actor.mean.bias"][0] == pytest.approx(np.arctanh(0.45))
    refused, promoted = caplog.records[-2].message, caplog.records[-1].message
    assert refused.startswith("refused") and "-1.0" in refused and "-0.1" in refused
    assert promoted.startswith("promoted") and "-0.0" in promoted
