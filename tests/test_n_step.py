"""n-step targets (learner.sac.n_step_target, LearnerConfig.n_step): the sum of n rewards, then the bootstrap."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from learner.sac import n_step_target, soft_target  # noqa: E402

G = 0.9


def column(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32).unsqueeze(1)  # [T, 1]


def test_one_step_is_the_soft_target() -> None:
    torch.manual_seed(0)
    r, term, q, logp = torch.randn(6, 3), (torch.rand(6, 3) < 0.2).float(), torch.randn(6, 3), torch.randn(7, 3)
    alpha = torch.tensor(0.3)
    one = n_step_target(r, term, torch.ones(6, 3), q - alpha * logp[1:], G, 1)
    assert torch.allclose(one, soft_target(r, term, q, logp[1:], alpha, G))


def test_three_steps_sum_rewards_then_bootstrap_stopping_at_an_end_and_at_the_chunks_last_step() -> None:
    r = column(1, 2, 3, 4, 5, 6)
    v = column(10, 20, 30, 40, 50, 60)  # v[t]: the value of the state after step t
    term = column(0, 0, 1, 0, 0, 0)  # step 2 ends an episode
    mask = column(1, 1, 1, 1, 1, 0)  # step 5 is padding: step 4 is the chunk's last
    got = n_step_target(r, term, mask, v, G, 3)[:5, 0].tolist()
    want = [1 + G * 2 + G**2 * 3,  # the terminal at step 2 ends the sum, no bootstrap
            2 + G * 3,
            3.0,
            4 + G * 5 + G**2 * 50,  # step 4 is the last valid one: bootstrap from its value
            5 + G * 50]
    assert got == pytest.approx(want)


def test_a_full_window_bootstraps_n_steps_on() -> None:
    r, v = column(1, 1, 1, 1, 1), column(0, 0, 7, 0, 0)
    got = n_step_target(r, column(0, 0, 0, 0, 0), column(1, 1, 1, 1, 1), v, G, 3)[0, 0]
    assert float(got) == pytest.approx(1 + G + G**2 + G**3 * 7)


def test_an_update_with_n_step_trains() -> None:
    from learner.config import LearnerConfig
    from learner.model import sac_config
    from learner.sac import SAC, Batch
    from protocol.arch import Arch

    torch.manual_seed(0)
    arch = Arch(3, 2, hidden=8, fc=8, act_low=(-1.0, -1.0), act_high=(1.0, 1.0))
    sac = SAC(arch, sac_config(LearnerConfig(n_step=4)))
    B, T = 4, 6
    batch = Batch(torch.randn(B, T + 1, 3), torch.rand(B, T, 2) * 2 - 1, torch.zeros(B, 2), torch.zeros(B),
                  torch.randn(B, T), torch.zeros(B, T), torch.ones(B, T), None, None)
    out = sac.update(batch)
    assert all(torch.isfinite(torch.tensor(v)) for v in out.values())
