"""The memory tasks' rules: a perfect policy scores 0, a memoryless one what the docstrings say."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import actor.daemon  # noqa: F401 - the daemon's import is what registers the ids for --env
from actor.envs.memory import COUNTING, DELAYED_RECALL, FIRST_RECALL, fraction

CASES = [(DELAYED_RECALL, {"k": 4}), (DELAYED_RECALL, {"k": 16}), (FIRST_RECALL, {"length": 64}),
         (FIRST_RECALL, {"length": 256}), (COUNTING, {"length": 64})]


def _episode(env_id: str, kwargs: dict, seed: int, policy) -> tuple[float, list[np.ndarray]]:  # noqa: ANN001
    """Run one episode; `policy(obs, seen)` gets the current observation and all observations so far."""
    env = gym.make(env_id, **kwargs)
    obs, _ = env.reset(seed=seed)
    seen, total, done = [obs], 0.0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(np.array([policy(obs, seen)], np.float32))
        assert not terminated, "memory tasks end by time limit only"
        seen.append(obs)
        total, done = total + reward, truncated
    return total, seen


def perfect(env_id: str, kwargs: dict):  # noqa: ANN201
    """The policy the rules describe, reading the history."""
    if env_id == DELAYED_RECALL:
        k = kwargs["k"]
        return lambda obs, seen: float(seen[-1 - k][0]) if len(seen) > k else 0.0
    if env_id == FIRST_RECALL:
        return lambda obs, seen: float(seen[0][0])
    return lambda obs, seen: float(sum(o[0] for o in seen)) / kwargs["length"]


def memoryless(env_id: str):  # noqa: ANN201
    """The best policy of the current observation alone, as each docstring derives it."""
    if env_id == COUNTING:
        return lambda obs, seen: float(obs[0]) / 64
    return lambda obs, seen: float(obs[0]) if len(seen) == 1 and env_id == FIRST_RECALL else 0.0


@pytest.mark.parametrize(("env_id", "kwargs"), CASES)
def test_perfect_policy_scores_zero(env_id: str, kwargs: dict) -> None:
    for seed in range(3):
        assert _episode(env_id, kwargs, seed, perfect(env_id, kwargs))[0] == pytest.approx(0.0, abs=1e-5)


@pytest.mark.parametrize(("env_id", "kwargs"), CASES)
def test_memoryless_policy_scores_the_documented_return(env_id: str, kwargs: dict) -> None:
    env = gym.make(env_id, **kwargs).unwrapped
    returns = [_episode(env_id, kwargs, seed, memoryless(env_id))[0] for seed in range(300)]
    sem = np.std(returns) / np.sqrt(len(returns))
    assert abs(np.mean(returns) - env.memoryless_return) < 4 * sem + 1e-9, (np.mean(returns), env.memoryless_return)
    assert fraction(env.memoryless_return, env.memoryless_return) == 0.0 and fraction(0.0, env.memoryless_return) == 1.0


def test_a_seed_replays_the_same_episode() -> None:
    a, b = (_episode(DELAYED_RECALL, {"k": 4}, 7, lambda o, s: 0.3)[1] for _ in range(2))
    assert np.array_equal(np.stack(a), np.stack(b))
    c = _episode(DELAYED_RECALL, {"k": 4}, 8, lambda o, s: 0.3)[1]
    assert not np.array_equal(np.stack(a), np.stack(c))


def test_bad_parameters_fail_clearly() -> None:
    with pytest.raises(ValueError, match="k must be"):
        gym.make(DELAYED_RECALL, k=64, length=64)
    with pytest.raises(ValueError, match="length must be"):
        gym.make(FIRST_RECALL, length=1)
