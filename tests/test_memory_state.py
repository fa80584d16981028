"""Stored state (R2D2): a chunk that starts mid-episode from the state the actor had there is trained
exactly as if the whole episode so far had been unrolled in it."""

from __future__ import annotations

import pytest
import torch

from learner.networks import Arch
from learner.sac import SAC, Batch, SACConfig, inputs, time_major

ARCH = Arch(2, 1, hidden=16, fc=16, act_low=(-1.0,), act_high=(1.0,))
T, B = 6, 3


def _episode(seed: int) -> Batch:
    """2T steps from an episode's start, every step counted."""
    g = torch.Generator().manual_seed(seed)
    return Batch(torch.randn(B, 2 * T + 1, 2, generator=g), torch.rand(B, 2 * T, 1, generator=g) * 2 - 1,
                 torch.zeros(B, 1), torch.zeros(B), torch.randn(B, 2 * T, generator=g), torch.zeros(B, 2 * T),
                 torch.ones(B, 2 * T))


def _tail(sac: SAC, full: Batch) -> Batch:
    """Its last T steps as their own chunk, with the actor's state after the first T as the stored state."""
    with torch.no_grad():
        _, (h, c) = sac.actor.features(time_major(inputs(full, sac.arch))[:T])
    return Batch(full.obs[:, T:], full.action[:, T:], full.action[:, T - 1], full.reward[:, T - 1],
                 full.reward[:, T:], full.terminated[:, T:], full.mask[:, T:], h[0], c[0])


def test_the_stored_state_continues_the_episode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch, "randn_like", torch.zeros_like)  # the policy's mean action: both sides alike
    torch.manual_seed(0)
    sac = SAC(ARCH, SACConfig(use_stored_state=True))
    full = _episode(1)
    tail = _tail(sac, full)
    whole = sac.losses(full._replace(mask=torch.cat([torch.zeros(B, T), torch.ones(B, T)], 1)))
    resumed = sac.losses(tail)
    for a, b in zip(whole[:5], resumed[:5]):  # every loss but recall (None: no memory horizon here)
        assert torch.allclose(a, b, atol=1e-5), (whole, resumed)
    cold = sac.losses(tail._replace(h0=torch.zeros_like(tail.h0), c0=torch.zeros_like(tail.c0)))
    assert not torch.allclose(cold[0], resumed[0], atol=1e-3), "the stored state made no difference: test is blind"
