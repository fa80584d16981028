"""The networks, and the weights blob that carries the actor between processes.

Both daemons build the actor from here, so a blob made by the learner always
rebuilds into the same network on an actor. This module imports nothing from
the rest of `learner`, so actors can import it without the learner's code; the
architecture and the blob's layout live in protocol/arch.py (no torch), so a
bot can turn a blob into a policy without importing torch.

Actor:  x -> linear(h) -> LSTM(h) -> linear(fc) -> mean, log-std; tanh-squashed.
Critic: x -> linear(h) -> LSTM(h) -> [h_t, a_t] -> linear(fc) -> Q.
x is the observation, followed by the previous action (in [-1, 1]) when
`prev_action` is set and the previous reward when `prev_reward` is set (both
zero at an episode's start). The critic's LSTM sees only the history; the action being
judged enters after it, so one unroll per critic serves every action we ask
about (the replayed one, the policy's, the next step's). Why, and what it saves:
docs/design.md (The networks); tests/bench/bench_update.py measures it.
With `arch.memoryless` every LSTM starts each step from a zero state (`unroll`): the
same parameters with no history, for the memory ablation (docs/memory.md).
"""

from __future__ import annotations

import hashlib
import math
from typing import cast

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from protocol.arch import Arch, actor_layout  # noqa: F401 - re-exported; torch-free, so bots read blobs without torch

State = tuple[torch.Tensor, torch.Tensor]


def unroll(lstm: nn.LSTM, z: torch.Tensor, state: State | None, memoryless: bool) -> tuple[torch.Tensor, State]:
    """The LSTM over z [T, B, hidden] from `state`: output [T, B, hidden] and the final state ([1, B, hidden] each).

    Memoryless, every step starts from a zero state and `state` is not read. That is one step of the LSTM for
    each of the T*B rows, so the sequence is folded into the batch: one call of the LSTM's own kernel, no loop
    over time. The final state is the last step's own."""
    if not memoryless:
        return lstm(z, state)
    T, B, H = z.shape
    out, (h, c) = lstm(z.reshape(1, T * B, H))
    return out.view(T, B, -1), (h.view(T, B, -1)[-1:], c.view(T, B, -1)[-1:])


class Actor(nn.Module):
    """The policy: a recurrent tanh-Gaussian over actions in [-1, 1]."""

    def __init__(self, arch: Arch) -> None:
        super().__init__()
        self.arch = arch
        self.inp = nn.Linear(arch.in_dim, arch.hidden)
        self.lstm = nn.LSTM(arch.hidden, arch.hidden)
        self.fc = nn.Linear(arch.hidden, arch.fc)
        self.mean = nn.Linear(arch.fc, arch.act_dim)
        self.log_std = nn.Linear(arch.fc, arch.act_dim)

    def features(self, x: torch.Tensor, state: State | None = None) -> tuple[torch.Tensor, State]:
        """x [T, B, in] (time-major, the LSTM's own layout) -> head features [T, B, fc] and the final LSTM state."""
        out, state = unroll(self.lstm, F.relu(self.inp(x)), state, self.arch.memoryless)
        return self.head_features(out), state

    def head_features(self, out: torch.Tensor) -> torch.Tensor:
        """LSTM output [T, B, hidden] -> head features [T, B, fc]."""
        return F.relu(self.fc(out))

    def heads(self, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        log_std = self.log_std(y).clamp(self.arch.log_std_min, self.arch.log_std_max)
        return self.mean(y), log_std

    def sample(self, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised action in (-1, 1) and its exact log-probability."""
        mean, log_std = self.heads(y)
        u = mean + log_std.exp() * torch.randn_like(mean)
        return torch.tanh(u), squashed_log_prob(u, mean, log_std)


class Critic(nn.Module):
    """Q(history, action): the LSTM summarises the history, the head judges an action."""

    def __init__(self, arch: Arch) -> None:
        super().__init__()
        self.inp = nn.Linear(arch.in_dim, arch.hidden)
        self.lstm = nn.LSTM(arch.hidden, arch.hidden)
        self.fc = nn.Linear(arch.hidden + arch.act_dim, arch.fc)
        self.out = nn.Linear(arch.fc, 1)
        self.act_dim = arch.act_dim
        self.memoryless = arch.memoryless

    def features(self, x: torch.Tensor, state: State | None = None) -> tuple[torch.Tensor, State]:
        """x [T, B, in] -> the LSTM's output [T, B, hidden] (the history the heads judge) and its final state."""
        return unroll(self.lstm, F.relu(self.inp(x)), state, self.memoryless)

    def q(self, h: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """h [T, B, hidden], action [T, B, A] in [-1, 1] -> Q [T, B]."""
        return self.q_from(self.history_term(h), action)

    def history_term(self, h: torch.Tensor) -> torch.Tensor:
        """The history's share of the head's first layer (with its bias): fc([h, a]) = this + W_a a.
        Computed once, it prices any number of actions for the cost of a [A -> fc] product each."""
        return F.linear(h, self.fc.weight[:, :-self.act_dim].contiguous(), self.fc.bias)

    def q_from(self, term: torch.Tensor, action: torch.Tensor, frozen: bool = False) -> torch.Tensor:
        """Q from a history term and an action; `frozen` lets gradients reach the action only."""
        w_a: torch.Tensor = self.fc.weight[:, -self.act_dim:]
        w_out: torch.Tensor = self.out.weight
        b_out: torch.Tensor = self.out.bias
        if frozen:
            w_a, w_out, b_out = w_a.detach(), w_out.detach(), b_out.detach()
        return F.linear(F.relu(term + F.linear(action, w_a)), w_out, b_out).squeeze(-1)


def init_memory(lstm: nn.LSTM, horizon: int) -> None:
    """Chrono initialisation (Tallec & Ollivier 2018), made deterministic: forget-gate biases log(tau_j) with
    the timescales tau_j spread evenly over [1, horizon], input-gate biases -log(tau_j).

    PyTorch starts every gate bias near 0, so forget gates sit near sigmoid(0) = 1/2: what a step
    writes is halved each step, and the gradient reaching a step k back shrinks about 2^-k (measured on
    DelayedRecall: dQ_t/dobs_{t-16} was 1/2000 of dQ_t/dobs_t at start). A unit whose forget gate starts
    at tau/(1 + tau) keeps its cell for about tau steps instead. Draws no random numbers, so a run's
    other initial weights are the same with or without it. horizon <= 1 leaves PyTorch's init alone."""
    if horizon <= 1:
        return
    h = lstm.hidden_size
    tau = torch.linspace(1.0, float(horizon), h)
    with torch.no_grad():
        for name in ("bias_ih_l0", "bias_hh_l0"):
            getattr(lstm, name)[:2 * h].zero_()  # input and forget gates: all of the bias goes in bias_hh
        log_tau, bias_hh = torch.log(tau), cast(torch.Tensor, lstm.bias_hh_l0)
        bias_hh[h:2 * h] = log_tau
        bias_hh[:h] = -log_tau


_LOG2 = math.log(2.0)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def squashed_log_prob(u: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """log pi(tanh(u)): Gaussian log-density minus log|d tanh/du|, in a form that never
    takes log(0): log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))."""
    z = (u - mean) / log_std.exp()
    gauss = -0.5 * z.pow(2) - log_std - _HALF_LOG_2PI
    correction = 2.0 * (_LOG2 - u - F.softplus(-2.0 * u))
    return (gauss - correction).sum(-1)


def actor_to_blob(actor: Actor) -> np.ndarray:
    """The flat float32 parameter vector (a copy: it crosses a process boundary)."""
    with torch.no_grad():
        flat = torch.cat([p.detach().reshape(-1).float().cpu() for p in actor.parameters()])
    return flat.numpy().astype(np.float32, copy=False)


def blob_rev(params: np.ndarray) -> str:
    """The content revision of a blob: 16 hex digits of SHA-256 over its bytes."""
    return hashlib.sha256(np.ascontiguousarray(params, dtype="<f4").tobytes()).hexdigest()[:16]


def actor_from_blob(arch: Arch, params: np.ndarray) -> Actor:
    """Rebuild the actor; a blob of the wrong size is an error, never a silent truncation."""
    actor = Actor(arch)
    expected = sum(p.numel() for p in actor.parameters())
    if params.shape != (expected,):
        raise ValueError(f"weights blob has {params.size} floats, {arch} needs {expected}")
    flat = torch.from_numpy(np.array(params, dtype=np.float32))
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(flat, actor.parameters())
    return actor.eval()
