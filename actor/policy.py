"""The local policy: the actor network rebuilt from a weights blob, stepped one tick at a time.

Built in the weights thread, handed to bots by reference; a bot swaps it in
between ticks. Each bot keeps its own LSTM state, so one network object
serves every bot of a process.
"""

from __future__ import annotations

import numpy as np
import torch

from learner.networks import Actor, Arch, State, actor_from_blob
from protocol import Weights


class LocalPolicy:
    """One weights version, ready to act."""

    def __init__(self, msg: Weights) -> None:
        self.arch = Arch.from_wire(msg.arch)
        self.version, self.rev, self.grad_steps = msg.version, msg.rev, msg.grad_steps
        self.net: Actor = actor_from_blob(self.arch, msg.params)
        self.net.requires_grad_(False)
        self.low = np.array(self.arch.act_low, np.float32)
        self.high = np.array(self.arch.act_high, np.float32)
        self._x = torch.zeros(1, 1, self.arch.in_dim)

    def initial_state(self) -> State:
        h = self.arch.hidden
        return torch.zeros(1, 1, h), torch.zeros(1, 1, h)

    def act(self, obs: np.ndarray, prev_action: np.ndarray, prev_reward: float, state: State,
            deterministic: bool) -> tuple[np.ndarray, State]:
        """Action in environment units and the next LSTM state. `prev_action` is in [-1, 1]."""
        x = self._x
        d = self.arch.obs_dim
        with torch.inference_mode():
            x[0, 0, :d] = torch.from_numpy(obs)
            if self.arch.prev_action:
                x[0, 0, d:d + self.arch.act_dim] = torch.from_numpy(prev_action)
            if self.arch.prev_reward:
                x[0, 0, -1] = prev_reward
            y, state = self.net.features(x, state)
            if deterministic:
                a = torch.tanh(self.net.heads(y)[0])
            else:
                a, _ = self.net.sample(y)
        unit = a.reshape(-1).numpy()
        return self.low + (unit + 1.0) * 0.5 * (self.high - self.low), state
