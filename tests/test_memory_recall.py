"""The recall loss: with memory_horizon N, the critic torso's state must name the observations 1..N steps back."""

from __future__ import annotations

import pytest
import torch

from learner.config import LearnerConfig
from learner.networks import Arch
from learner.sac import SAC, Batch, RecallHead, SACConfig
from learner.state import restore, snapshot
from protocol.checkpoint import CheckpointError

ARCH = Arch(2, 1, hidden=32, fc=32, act_low=(-1.0,), act_high=(1.0,))


def test_offsets_cover_the_horizon_evenly_and_stay_few() -> None:
    """Every step back up to 16; beyond, 16 evenly spaced with the horizon last. A far offset with a wide gap before
    it is not learned (a log scale left 35 -> 64 and the probe never named 64)."""
    assert RecallHead(ARCH, 16).offsets.tolist() == list(range(1, 17))
    assert RecallHead(ARCH, 2).offsets.tolist() == [1, 2]
    assert RecallHead(ARCH, 64).offsets.tolist() == list(range(4, 65, 4))
    far = RecallHead(ARCH, 256).offsets.tolist()
    gaps = {b - a for a, b in zip(far, far[1:])}
    assert far[-1] == 256 and len(far) == RecallHead.MAX_OFFSETS == 16 and gaps == {16}


def test_the_loss_reads_the_observation_each_offset_back_on_trained_steps_only() -> None:
    """With the read-out at zero the loss is the mean square of the observations it asks for over their variance:
    worked out by hand here, step by step, so a shift by one step, a burn-in miscounted or a masked step counted
    fails."""
    head = RecallHead(ARCH, 4)  # offsets 1, 2, 3, 4
    torch.nn.init.zeros_(head.out.weight)
    torch.nn.init.zeros_(head.out.bias)
    B, burn_in, T = 2, 2, 6
    obs = torch.arange(B * (burn_in + T + 1) * 2, dtype=torch.float32).reshape(B, burn_in + T + 1, 2) / 10
    mask = torch.ones(T, B)
    mask[0, 0] = mask[5, 1] = 0.0  # time-major, as losses() passes it
    asked = [obs[b, burn_in + t - j] for t in range(T) for b in range(B) for j in head.offsets.tolist()
             if mask[t, b] and burn_in + t - j >= 0]
    past = torch.stack(asked)  # [n, D]
    variance = past.var(0, unbiased=False).mean()
    got = head.loss(torch.zeros(T, B, ARCH.hidden), obs, burn_in, mask)
    assert len(asked) == 2 * (2 + 3 + 4 * 4) - 2 - 4 and got.item() == pytest.approx(float(past.pow(2).mean() / variance), rel=1e-5)


def _batches(seed: int, n: int, T: int = 16, B: int = 16) -> list[Batch]:
    """Random observations and actions, no reward: nothing to learn but the recall loss itself."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        mask = torch.ones(B, T)
        mask[:, :8] = 0.0  # context, as a chunk's overlap
        out.append(Batch(torch.rand(B, T + 1, 2, generator=g) * 2 - 1, torch.rand(B, T, 1, generator=g) * 2 - 1,
                         torch.zeros(B, 1), torch.zeros(B), torch.zeros(B, T), torch.zeros(B, T), mask))
    return out


def test_training_on_it_makes_the_torso_hold_the_last_n_observations() -> None:
    """Fails if the loss is not part of what the critic optimiser minimises, or does not reach the torso."""
    torch.manual_seed(0)
    sac = SAC(ARCH, SACConfig(memory_horizon=8, recall_weight=1.0, critic_lr=3e-3))
    assert sac.recall is not None
    first = None
    for batch in _batches(0, 300):
        out = sac.update(batch)
        first = first if first is not None else out["recall_loss"]
    assert first is not None
    held = [sac.update(b)["recall_loss"] for b in _batches(1, 5)]
    # At start the read-out knows nothing (a loss near 1); after 300 steps it names much of what it is asked.
    assert sum(held) / len(held) < 0.7 * first  # 0.45 measured; a read-out of a torso it cannot train stays at 1.0


def test_the_head_is_in_the_checkpoint_and_a_checkpoint_without_it_does_not_fit() -> None:
    with_head = SAC(ARCH, SACConfig(memory_horizon=8, recall_weight=1.0))
    with_head.update(_batches(2, 1)[0])
    tensors = snapshot(with_head)
    assert "recall.out.weight" in tensors
    again = SAC(ARCH, SACConfig(memory_horizon=8, recall_weight=1.0))
    restore(again, tensors)
    assert again.recall is not None and with_head.recall is not None
    assert torch.equal(again.recall.out.weight, with_head.recall.out.weight)
    plain = snapshot(SAC(ARCH, SACConfig(memory_horizon=8, recall_weight=0.0)))
    with pytest.raises(CheckpointError, match="recall"):
        restore(SAC(ARCH, SACConfig(memory_horizon=8, recall_weight=1.0)), plain)


def test_it_is_off_without_a_horizon_and_a_bad_weight_names_its_key() -> None:
    assert SAC(ARCH, SACConfig(recall_weight=1.0)).recall is None  # no horizon: nothing to recall
    assert LearnerConfig().recall_weight > 0 and LearnerConfig().memory_horizon == 0
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="recall_weight"):
            LearnerConfig(recall_weight=bad)
