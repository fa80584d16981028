"""The actor's numpy policy is exactly the learner's torch actor, step by step."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from actor.policy import LocalPolicy
from learner.networks import Actor, Arch, actor_layout, actor_to_blob, blob_rev
from protocol import Weights


@pytest.mark.parametrize("prev_action,prev_reward", [(True, True), (False, False), (True, False)])
def test_layout_is_the_modules_parameter_order(prev_action: bool, prev_reward: bool) -> None:
    arch = Arch(5, 2, hidden=12, fc=7, prev_action=prev_action, prev_reward=prev_reward,
                act_low=(-1.0, 0.0), act_high=(1.0, 3.0))
    assert actor_layout(arch) == [(n, tuple(p.shape)) for n, p in Actor(arch).named_parameters()]


def test_numpy_steps_match_the_torch_unroll() -> None:
    torch.manual_seed(0)
    arch = Arch(5, 2, hidden=12, fc=7, act_low=(-1.0, 0.0), act_high=(1.0, 3.0))
    actor = Actor(arch)
    params = actor_to_blob(actor)
    policy = LocalPolicy(Weights("l", 0, 1, blob_rev(params), arch.to_wire(), params, 0))
    rng = np.random.default_rng(0)
    obs = rng.standard_normal((20, 5)).astype(np.float32)
    unit_prev = rng.uniform(-1, 1, (20, 2)).astype(np.float32)
    prev_r = rng.standard_normal(20).astype(np.float32)
    x = torch.from_numpy(np.concatenate([obs, unit_prev, prev_r[:, None]], axis=1))[:, None]
    with torch.no_grad():
        y, _ = actor.features(x)
        mean = actor.heads(y)[0][:, 0].numpy()
    state = policy.initial_state()
    low, high = np.array([-1.0, 0.0]), np.array([1.0, 3.0])
    for t in range(20):
        action, state = policy.act(obs[t], unit_prev[t], float(prev_r[t]), state, deterministic=True)
        want = low + (np.tanh(mean[t]) + 1) / 2 * (high - low)
        np.testing.assert_allclose(action, want, rtol=1e-4, atol=1e-5)


def test_a_blob_of_the_wrong_size_is_refused() -> None:
    arch = Arch(5, 2, hidden=12, fc=7, act_low=(-1.0, 0.0), act_high=(1.0, 3.0))
    with pytest.raises(ValueError, match="needs"):
        LocalPolicy(Weights("l", 0, 1, "x", arch.to_wire(), np.zeros(10, np.float32), 0))


def test_stochastic_actions_stay_in_bounds() -> None:
    arch = Arch(5, 2, hidden=12, fc=7, act_low=(-1.0, 0.0), act_high=(1.0, 3.0))
    params = (np.random.default_rng(0).standard_normal(sum(int(np.prod(s)) for _, s in actor_layout(arch))) * 3)
    policy = LocalPolicy(Weights("l", 0, 1, "x", arch.to_wire(), params.astype(np.float32), 0), seed=0)
    state = policy.initial_state()
    for _ in range(200):
        a, state = policy.act(np.ones(5, np.float32) * 10, np.zeros(2, np.float32), 0.0, state, False)
        assert np.all(a >= [-1.0, 0.0]) and np.all(a <= [1.0, 3.0])
