"""A Gymnasium task whose right action is only told later: the test bed of action targets (protocol `target`).

Each step shows two numbers in [-1, 1]; the right action is the first of them, and nothing in the reward says so
(it is 0). The env names it two steps later, in info["action_targets"] ({episode step: target}), as a game names
where a shot should have gone once its bullet has passed. Made by the actor daemon as
`--env tests.label_env:LateLabel-v0` (gymnasium imports this module, which registers the id).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

LAG = 2  # steps from a step to its label
LENGTH = 40


class LateLabel(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
        self.t, self.shown = 0, [np.zeros(2, np.float32)]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t, self.shown = 0, [self._draw()]
        return self.shown[0], {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        step = self.t  # the episode step just taken: it acted on shown[step]
        self.t += 1
        self.shown.append(self._draw())
        done = self.t >= LENGTH
        labelled = range(max(0, step - LAG), step + 1) if done else range(step - LAG, step - LAG + 1)
        targets = {s: np.array([self.shown[s][0]], np.float32) for s in labelled if s >= 0}
        return self.shown[-1], 0.0, False, done, {"action_targets": targets}

    def _draw(self) -> np.ndarray:
        return self.np_random.uniform(-1.0, 1.0, 2).astype(np.float32)


if "LateLabel-v0" not in gym.registry:
    gym.register(id="LateLabel-v0", entry_point=f"{__name__}:LateLabel")
