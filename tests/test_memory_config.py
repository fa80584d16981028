"""memory_horizon: one setting that fits the chunks and the LSTMs' gates to a memory N steps long."""

from __future__ import annotations

import pytest
import torch

from learner.config import LearnerConfig
from learner.networks import Arch
from learner.sac import SAC, SACConfig

ARCH = Arch(1, 1, hidden=8, fc=8, act_low=(-1.0,), act_high=(1.0,))


@pytest.mark.parametrize(("given", "seq_len", "overlap"), [
    ({}, 32, 16), ({"memory_horizon": 16}, 32, 16), ({"memory_horizon": 64}, 80, 64),
    ({"memory_horizon": 32, "burn_in": 8}, 56, 40), ({"memory_horizon": 8, "seq_len": 100, "overlap": 50}, 100, 50),
])
def test_every_trained_step_gets_the_horizon_of_history_with_gradients(given: dict, seq_len: int, overlap: int) -> None:
    cfg = LearnerConfig(**given)
    assert (cfg.chunks.seq_len, cfg.chunks.overlap) == (seq_len, overlap)
    assert cfg.chunks.overlap - cfg.burn_in >= cfg.memory_horizon
    assert cfg.chunks.stride == cfg.seq_len - cfg.overlap  # as many trained steps per chunk as set
    assert cfg.stored_state == (cfg.memory_horizon >= 2)  # chunks start where the bot's state really was
    assert (cfg.seq_len, cfg.overlap, cfg.use_stored_state) == (given.get("seq_len", 32), given.get("overlap", 16),
                                                               False)  # the config says what was set


def test_a_bad_horizon_fails_at_start_naming_the_key() -> None:
    with pytest.raises(ValueError, match="memory_horizon"):
        LearnerConfig(memory_horizon=-1)
    with pytest.raises(ValueError, match="capacity"):
        LearnerConfig(memory_horizon=1000, capacity=1500, learning_starts=100)


def test_the_horizon_sets_the_forget_gates_and_nothing_else() -> None:
    torch.manual_seed(0)
    plain = SAC(ARCH, SACConfig())
    torch.manual_seed(0)
    tuned = SAC(ARCH, SACConfig(memory_horizon=64))
    h = ARCH.hidden
    forget = torch.sigmoid(tuned.actor.lstm.bias_hh_l0[h:2 * h] + tuned.actor.lstm.bias_ih_l0[h:2 * h]).detach()
    assert float(forget.min()) == pytest.approx(0.5) and float(forget.max()) == pytest.approx(64 / 65)
    assert torch.equal(tuned.targets[0].lstm.bias_hh_l0, tuned.critics[0].lstm.bias_hh_l0)
    for (name, a), b in zip(plain.critics.named_parameters(), tuned.critics.parameters()):
        assert torch.equal(a, b) or "bias" in name, name  # the same draws: only gate biases differ
    torch.manual_seed(0)
    again = SAC(ARCH, SACConfig(memory_horizon=0))
    assert all(torch.equal(a, b) for a, b in zip(plain.critics.parameters(), again.critics.parameters()))
