"""Memory tasks: environments that need memory and nothing else.

Each step shows something random; the action must reproduce something shown
earlier; the reward is minus the absolute error. There is nothing to learn but
to remember, so the deterministic return measures how far back a recurrent
policy remembers, on a scale from the memoryless return (the best any policy
that sees only the current observation can get, worked out in each class's
docstring) to the perfect return, 0.

All are continuous-action (a Box in [-1, 1]), deterministic given the reset
seed, and end by truncation (a time limit: the task would go on), so the
learner bootstraps past the last step. Registered ids (importing this module
registers them, as actor/daemon.py does):

    saclstm/DelayedRecall-v0   kwargs k (delay), length
    saclstm/FirstRecall-v0     kwarg length
    saclstm/Counting-v0        kwarg length

`fraction(ret, env)` puts a return on the 0 (memoryless) .. 1 (perfect) scale.
The agent's previous action is one of its inputs (prev_action): a policy may
carry a value forward through its own actions, which is memory too (its state
is the action), and is why recall tasks ask for what was shown, not what was
done.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np

DELAYED_RECALL = "saclstm/DelayedRecall-v0"
FIRST_RECALL = "saclstm/FirstRecall-v0"
COUNTING = "saclstm/Counting-v0"


class _MemoryEnv(gym.Env):
    """Shared mechanics: a 1-wide action in [-1, 1], a fixed episode length, reward -|a - target|."""

    metadata: dict = {"render_modes": []}

    def __init__(self, length: int, obs_dim: int) -> None:
        if length < 1:
            raise ValueError(f"length must be at least 1, got {length}")
        self.length = int(length)
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (obs_dim,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        self._start()
        return self._obs(), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        a = float(np.clip(np.asarray(action, np.float64).reshape(-1)[0], -1.0, 1.0))
        target = self._target()
        reward = 0.0 if target is None else -abs(a - target)
        self.t += 1
        self._advance()
        return self._obs(), reward, False, self.t >= self.length, {"target": target}

    @property
    def memoryless_return(self) -> float:  # pragma: no cover - each task defines it
        raise NotImplementedError

    perfect_return = 0.0

    def _start(self) -> None: ...
    def _advance(self) -> None: ...
    def _obs(self) -> np.ndarray: ...  # type: ignore[empty-body]
    def _target(self) -> float | None: ...


class DelayedRecall(_MemoryEnv):
    """Each step shows x_t ~ U[-1, 1]; the action at step t must be x_{t-k} (no target, reward 0, for t < k).

    Observation [x_t]; reward -|a_t - x_{t-k}| for k <= t < L (L = `length`, default 64).
    Memoryless return: x_{t-k} is independent of x_t, so a policy of x_t alone can do no
    better than a constant c; E|c - x| for x ~ U[-1, 1] is (1 + c^2)/2, least at c = 0:
    1/2 per step, so the memoryless return is -(L - k)/2 (-30 at k = 4, L = 64; -24 at k = 16).
    Perfect return: a_t = x_{t-k} scores 0.
    """

    def __init__(self, k: int = 4, length: int = 64) -> None:
        if not 1 <= k < length:
            raise ValueError(f"k must be in 1..length-1 ({length - 1}), got {k}")
        super().__init__(length, 1)
        self.k = int(k)
        self.xs = np.zeros(self.length + 1)

    def _start(self) -> None:
        self.xs = self.np_random.uniform(-1.0, 1.0, self.length + 1)

    def _obs(self) -> np.ndarray:
        return np.array([self.xs[self.t]], np.float32)

    def _target(self) -> float | None:
        return float(np.float32(self.xs[self.t - self.k])) if self.t >= self.k else None

    @property
    def memoryless_return(self) -> float:
        return -(self.length - self.k) / 2.0


class FirstRecall(_MemoryEnv):
    """Step 0 shows v ~ U[-1, 1] and a flag; every later step shows zeros and must answer v.

    Observation [v, 1] at t = 0, [0, 0] after; reward -|a_t - v| for 1 <= t < L (0 at t = 0).
    Memoryless return: after step 0 the observation says nothing about v, so the best is a
    constant, c = 0, at E|v| = 1/2 per step: -(L - 1)/2 (-31.5 at L = 64, -127.5 at L = 256).
    Perfect return: a_t = v scores 0.
    """

    def __init__(self, length: int = 64) -> None:
        if length < 2:
            raise ValueError(f"length must be at least 2 (one step to show, one to answer), got {length}")
        super().__init__(length, 2)
        self.v = 0.0

    def _start(self) -> None:
        self.v = float(np.float32(self.np_random.uniform(-1.0, 1.0)))

    def _obs(self) -> np.ndarray:
        return np.array([self.v, 1.0] if self.t == 0 else [0.0, 0.0], np.float32)

    def _target(self) -> float | None:
        return self.v if self.t >= 1 else None

    @property
    def memoryless_return(self) -> float:
        return -(self.length - 1) / 2.0


class Counting(_MemoryEnv):
    """Each step shows a coin s_t = +-1; the action must be the running sum so far, scaled: D_t / L.

    Observation [s_t]; D_t = s_0 + ... + s_t; reward -|a_t - D_t / L| at every step (|D_t| <= L).
    Memoryless return: D_t = s_t + W_t, where W_t = s_0 + ... + s_{t-1} is a symmetric walk of
    t steps independent of s_t; the best a of s_t alone is (s_t + m)/L with m a median of W_t
    (0 will do), costing E|W_t| / L. E|W_n| = sum_j |2j - n| C(n, j) / 2^n (about sqrt(2n/pi)),
    so the memoryless return is -(1/L) sum_{t<L} E|W_t| (-4.21 at L = 64). Perfect return: 0.
    """

    def __init__(self, length: int = 64) -> None:
        super().__init__(length, 1)
        self.coins = np.zeros(self.length + 1)
        self.sums = np.zeros(self.length + 1)

    def _start(self) -> None:
        self.coins = self.np_random.choice([-1.0, 1.0], self.length + 1)
        self.sums = np.cumsum(self.coins)  # D_t for every t at once, not a fresh sum each step

    def _obs(self) -> np.ndarray:
        return np.array([self.coins[self.t]], np.float32)

    def _target(self) -> float | None:
        return float(self.sums[self.t]) / self.length

    @property
    def memoryless_return(self) -> float:
        return -sum(mean_abs_walk(t) for t in range(self.length)) / self.length


def mean_abs_walk(n: int) -> float:
    """E|W_n| for a symmetric +-1 walk of n steps, exactly (log-space binomials: no overflow at large n)."""
    if n == 0:
        return 0.0
    log_half = n * math.log(0.5)
    return sum(abs(2 * j - n) * math.exp(math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) + log_half)
               for j in range(n + 1))


def fraction(ret: float, memoryless: float, perfect: float = 0.0) -> float:
    """How far a return went from the memoryless one (0) to perfect (1); below 0 is worse than no memory."""
    return (ret - memoryless) / (perfect - memoryless)


def register() -> None:
    """Make the ids known to gymnasium.make (idempotent)."""
    for env_id, cls in ((DELAYED_RECALL, "DelayedRecall"), (FIRST_RECALL, "FirstRecall"), (COUNTING, "Counting")):
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=f"{__name__}:{cls}")


register()
