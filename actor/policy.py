"""The local policy: the actor network of a weights blob, stepped one tick at a time in numpy.

One LSTM step for one bot is a handful of small matrix-vector products;
numpy does them with far less per-call overhead than a torch module, and a
blob becomes a policy by slicing (no module to build, no random init to
throw away), so swapping weights is cheap on the subscriber's thread too.
The maths is exactly learner.networks.Actor's (a test holds them equal).
Each bot keeps its own (h, c); one policy object serves every bot. A memoryless
arch (the memory ablation) reads no state: every step starts from zeros, as it trains.
"""

from __future__ import annotations

import numpy as np
from numpy.random import default_rng  # numpy loads numpy.random lazily: not on the first weights swap (~10 ms)

from protocol import Weights
from protocol.arch import Arch, actor_layout
from protocol.scaling import to_env

State = tuple[np.ndarray, np.ndarray]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (np.tanh(0.5 * x) + 1.0)  # stable for large |x|, one ufunc


class LocalPolicy:
    """One weights version, ready to act."""

    def __init__(self, msg: Weights, seed: int | None = None) -> None:
        self.arch = arch = Arch.from_wire(msg.arch)
        self.version, self.rev, self.grad_steps = msg.version, msg.rev, msg.grad_steps
        self.state_every = int(msg.state_every or 0)  # > 0: the learner asks for h0/c0, batches starting at its multiples
        layout = actor_layout(arch)
        need = sum(int(np.prod(shape)) for _, shape in layout)
        if msg.params.shape != (need,):
            raise ValueError(f"weights blob has {msg.params.size} floats, {arch} needs {need}")
        p, i = {}, 0
        params = np.asarray(msg.params, np.float32)
        for name, shape in layout:
            n = int(np.prod(shape))
            p[name] = params[i:i + n].reshape(shape)
            i += n
        self.w_in, self.b_in = p["inp.weight"], p["inp.bias"]
        self.w_ih, self.w_hh = p["lstm.weight_ih_l0"], p["lstm.weight_hh_l0"]  # views of the blob: no copy
        self.b_lstm = p["lstm.bias_ih_l0"] + p["lstm.bias_hh_l0"]
        self.w_fc, self.b_fc = p["fc.weight"], p["fc.bias"]
        self.w_head = np.concatenate([p["mean.weight"], p["log_std.weight"]])
        self.b_head = np.concatenate([p["mean.bias"], p["log_std.bias"]])
        self.low = np.array(arch.act_low, np.float32)
        self.high = np.array(arch.act_high, np.float32)
        self._x = np.zeros(arch.in_dim, np.float32)
        self._rng = default_rng(seed)

    def initial_state(self) -> State:
        h = self.arch.hidden
        return np.zeros(h, np.float32), np.zeros(h, np.float32)

    def forward(self, obs: np.ndarray, prev_action: np.ndarray, prev_reward: float,
                state: State) -> tuple[np.ndarray, np.ndarray, State]:
        """One step of SPEC.md's network: the pre-squash mean, the clamped log-std and the next (h, c).
        `prev_action` is in policy units ([-1, 1]); the vector tests/vectors/forward.json pins these.
        Memoryless, `state` is not read: the step starts from zeros, so the recurrent terms (W_hh h, f * c) are
        left out rather than computed as zeros; the (h, c) returned is this step's own."""
        arch, x = self.arch, self._x
        d, a, hid = arch.obs_dim, arch.act_dim, arch.hidden
        x[:d] = obs
        if arch.prev_action:
            x[d:d + a] = prev_action
        if arch.prev_reward:
            x[-1] = prev_reward
        z = np.maximum(self.w_in @ x + self.b_in, 0.0)
        if arch.memoryless:
            gates = self.w_ih @ z + self.b_lstm
        else:
            gates = self.w_ih @ z + self.w_hh @ state[0] + self.b_lstm  # PyTorch's order: input, forget, cell, output
        i, g, o = _sigmoid(gates[:hid]), np.tanh(gates[2 * hid:3 * hid]), _sigmoid(gates[3 * hid:])
        c = i * g if arch.memoryless else _sigmoid(gates[hid:2 * hid]) * state[1] + i * g
        h = o * np.tanh(c)
        y = np.maximum(self.w_fc @ h + self.b_fc, 0.0)
        head = self.w_head @ y + self.b_head
        return head[:a], np.clip(head[a:], arch.log_std_min, arch.log_std_max), (h, c)

    def act(self, obs: np.ndarray, prev_action: np.ndarray, prev_reward: float, state: State,
            deterministic: bool, rng: np.random.Generator | None = None) -> tuple[np.ndarray, State]:
        """Action in environment units and the next (h, c). `prev_action` is in [-1, 1]. `rng`: the noise's source
        when sampling (default: this policy's own, shared by the bots it serves)."""
        mean, log_std, state = self.forward(obs, prev_action, prev_reward, state)
        if deterministic:
            unit = np.tanh(mean)
        else:
            a = self.arch.act_dim
            noise = (rng or self._rng).standard_normal(a).astype(np.float32)
            unit = np.tanh(mean + np.exp(log_std) * noise)
        return self.to_env(unit), state

    def to_env(self, unit: np.ndarray) -> np.ndarray:
        """A squashed action in [-1, 1] -> environment units."""
        return to_env(unit, self.low, self.high)
