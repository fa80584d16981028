"""A short recall is learned, and only through the LSTM's state and its gradient through time.

SAC.update is run directly on DelayedRecall sequences (uniform random actions: SAC is off-policy),
then the deterministic policy plays the real environment. Breaking the recurrence -- the state cut
at every step, or carried forward with its gradient stopped -- must leave it near the memoryless level.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from actor.envs.memory import DELAYED_RECALL, fraction
from learner.networks import Arch
from learner.sac import SAC, Batch, SACConfig
from tests.bench.bench_memory import evaluate

K, T, B = 2, 8, 32
ARCH = Arch(1, 1, hidden=32, fc=32, act_low=(-1.0,), act_high=(1.0,))


def recall_batch(rng: np.random.Generator, k: int = K) -> Batch:
    """B episode openings of T steps: x_t ~ U[-1, 1], random actions, reward -|a_t - x_{t-k}| from step k."""
    x = rng.uniform(-1, 1, (B, T + 1)).astype(np.float32)
    a = rng.uniform(-1, 1, (B, T, 1)).astype(np.float32)
    r = np.zeros((B, T), np.float32)
    r[:, k:] = -np.abs(a[:, k:, 0] - x[:, :T - k])
    t = torch.from_numpy
    return Batch(t(x[..., None]), t(a), torch.zeros(B, 1), torch.zeros(B), t(r), torch.zeros(B, T), torch.ones(B, T))


def learn(updates: int = 500, seed: int = 0, broken: str = "") -> float:
    """Fraction of the way from memoryless to perfect after `updates` steps; `broken` as StepwiseLSTM's mode."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    sac = SAC(ARCH, SACConfig(gamma=0.5, actor_lr=1e-3, critic_lr=2e-3))
    if broken:
        for net in (sac.actor, *sac.critics, *sac.targets):
            net.lstm = StepwiseLSTM(net.lstm, broken)
    for _ in range(updates):
        sac.update(recall_batch(rng))
    return fraction(evaluate(sac, DELAYED_RECALL, {"k": K}, episodes=20), -(64 - K) / 2)


class StepwiseLSTM(nn.Module):
    """An LSTM's own cell run step by step, with its recurrence broken: `cut` zeroes the state each step,
    `detach` carries it forward without gradient."""

    def __init__(self, lstm: nn.LSTM, mode: str) -> None:
        super().__init__()
        self.lstm, self.mode = lstm, mode
        self.hidden_size = lstm.hidden_size

    def forward(self, x: torch.Tensor, state=None):  # noqa: ANN001, ANN201 - nn.LSTM's signature
        h = x.new_zeros(1, x.shape[1], self.hidden_size)
        h, c = (h, h.clone()) if state is None else state
        outs = []
        for t in range(x.shape[0]):
            if self.mode == "cut":
                h, c = torch.zeros_like(h), torch.zeros_like(c)
            elif self.mode == "detach":
                h, c = h.detach(), c.detach()
            out, (h, c) = self.lstm(x[t:t + 1], (h, c))
            outs.append(out)
        return torch.cat(outs), (h, c)


def test_short_recall_is_learned_only_through_the_lstm_state_and_its_gradient() -> None:
    learned = {mode: learn(broken=mode) for mode in ("", "cut", "detach")}
    assert learned[""] >= 0.45, learned
    assert learned["cut"] < 0.2 and learned["detach"] < 0.3, learned
