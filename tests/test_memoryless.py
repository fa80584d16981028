"""memoryless: the same agent with its recurrent state taken away, for measuring what memory buys.

Each LSTM starts every step from zeros, in the torch networks (training) and in the numpy policy (the bots), and
the flag travels in the arch of every weights blob and checkpoint, so bots play as the learner trains."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from actor.policy import LocalPolicy
from actor.store import policy_from_checkpoint
from learner.config import LearnerConfig
from learner.model import build_model
from learner.networks import Actor, Arch, Critic, actor_to_blob, blob_rev
from learner.sac import SAC, Batch, SACConfig
from learner.state import Carried, checkpoint, fits
from protocol import Weights, decode, encode
from protocol.checkpoint import CheckpointError, decode_checkpoint, encode_checkpoint

RECURRENT = Arch(5, 2, hidden=12, fc=7, act_low=(-1.0, 0.0), act_high=(1.0, 3.0), memoryless=False)
MEMORYLESS = dataclasses.replace(RECURRENT, memoryless=True)
T, B = 9, 3


def _inputs(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Two input sequences [T, B, in] equal from step T // 2 on and different before it."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, B, RECURRENT.in_dim, generator=g)
    other = x.clone()
    other[:T // 2] = torch.randn(T // 2, B, RECURRENT.in_dim, generator=g) * 3
    return x, other


@pytest.mark.parametrize("net", ["actor", "critic"])
def test_a_memoryless_network_sees_each_step_alone(net: str) -> None:
    """Output at step t depends on step t's input only: earlier inputs and a state passed in change nothing, and
    it equals the network run on that one step from zeros. The same network with memory does depend on them."""
    torch.manual_seed(0)
    module = Actor(MEMORYLESS) if net == "actor" else Critic(MEMORYLESS)
    x, other = _inputs()
    state = (torch.randn(1, B, MEMORYLESS.hidden), torch.randn(1, B, MEMORYLESS.hidden))
    with torch.no_grad():
        out, (h, c) = module.features(x)
        torch.testing.assert_close(module.features(other)[0][T // 2:], out[T // 2:], rtol=0, atol=0)
        torch.testing.assert_close(module.features(x, state)[0], out, rtol=0, atol=0)
        one_by_one = torch.cat([module.features(x[t:t + 1])[0] for t in range(T)])
        torch.testing.assert_close(one_by_one, out, rtol=1e-6, atol=1e-6)
        assert h.shape == c.shape == (1, B, MEMORYLESS.hidden)
        torch.testing.assert_close((h, c), module.features(x[-1:])[1], rtol=1e-6, atol=1e-6)  # the last step's own
        recurrent = Actor(RECURRENT) if net == "actor" else Critic(RECURRENT)
        recurrent.load_state_dict(module.state_dict())  # the same parameters, with memory
        carried = recurrent.features(x)[0]
    assert (carried[1:] - out[1:]).abs().max() > 1e-3, "with memory the later steps must see the earlier ones"


def _policy(arch: Arch, params: np.ndarray) -> LocalPolicy:
    return LocalPolicy(Weights("l", 0, 1, blob_rev(params), arch.to_wire(), params, 0))


def _steps(policy: LocalPolicy, obs: np.ndarray, prev: np.ndarray, rewards: np.ndarray) -> np.ndarray:
    """The pre-squash means of one episode, carrying the state from step to step as a bot does."""
    state, means = policy.initial_state(), []
    for t in range(len(obs)):
        mean, _, state = policy.forward(obs[t], prev[t], float(rewards[t]), state)
        means.append(mean.copy())
    return np.array(means)


def test_the_numpy_policy_starts_every_step_from_zeros() -> None:
    """A bot that carries its state gets the same action at step t whatever came before; with memory it does not."""
    torch.manual_seed(0)
    params = actor_to_blob(Actor(MEMORYLESS))
    rng = np.random.default_rng(0)
    obs, prev, rewards = rng.standard_normal((T, 5)), rng.uniform(-1, 1, (T, 2)), rng.standard_normal(T)
    other_obs = obs.copy()
    other_obs[:T // 2] = rng.standard_normal((T // 2, 5)) * 3
    policy = _policy(MEMORYLESS, params)
    means = _steps(policy, obs, prev, rewards)
    np.testing.assert_array_equal(_steps(policy, other_obs, prev, rewards)[T // 2:], means[T // 2:])
    state = (rng.standard_normal(12).astype(np.float32), rng.standard_normal(12).astype(np.float32))
    np.testing.assert_array_equal(policy.forward(obs[3], prev[3], float(rewards[3]), state)[0], means[3])
    recurrent = _policy(RECURRENT, params)  # the same blob with memory
    assert np.abs(_steps(recurrent, other_obs, prev, rewards)[T // 2:] - _steps(recurrent, obs, prev, rewards)[T // 2:]
                  ).max() > 1e-3


def test_torch_and_numpy_agree_on_a_memoryless_blob() -> None:
    """The learner's actor over a whole sequence and a bot stepping the blob through it give the same means."""
    torch.manual_seed(1)
    actor = Actor(MEMORYLESS)
    x, _ = _inputs(1)
    with torch.no_grad():
        want = actor.heads(actor.features(x)[0])[0].numpy()
    policy = _policy(MEMORYLESS, actor_to_blob(actor))
    d, a = MEMORYLESS.obs_dim, MEMORYLESS.act_dim
    for b in range(B):
        seq = x[:, b].numpy()
        got = _steps(policy, seq[:, :d], seq[:, d:d + a], seq[:, -1])
        np.testing.assert_allclose(got, want[:, b], rtol=1e-5, atol=1e-5)


def test_memoryless_travels_in_the_weights_message() -> None:
    """to_wire / from_wire and the real codec keep it; a wire arch from before the option reads as False; a value
    that is not a bool is refused rather than guessed at."""
    assert Arch.from_wire(MEMORYLESS.to_wire()) == MEMORYLESS
    assert Arch.from_wire(RECURRENT.to_wire()) == RECURRENT
    params = actor_to_blob(Actor(MEMORYLESS))
    msg = decode(encode(Weights("l", 3, 1, blob_rev(params), MEMORYLESS.to_wire(), params, 0)))
    assert isinstance(msg, Weights) and msg.arch["memoryless"] is True
    assert LocalPolicy(msg).arch.memoryless
    old = {k: v for k, v in MEMORYLESS.to_wire().items() if k != "memoryless"}
    assert Arch.from_wire(old) == RECURRENT and Arch.from_wire(old).memoryless is False
    for bad in (1, "true"):
        with pytest.raises(ValueError, match="memoryless must be a bool"):
            Arch.from_wire({**old, "memoryless": bad})


def _checkpoint(cfg: LearnerConfig, arch: Arch) -> tuple[dict, dict[str, np.ndarray]]:
    meta, tensors = checkpoint(cfg, SAC(arch, SACConfig()), Carried(1, 2, 3, 4))
    return decode_checkpoint(encode_checkpoint(meta, tensors))


def test_a_checkpoint_keeps_memoryless_and_fits_only_its_own_kind() -> None:
    """A checkpoint records it, a bot playing the file plays without memory, and a learner resumes only from a
    file of its own kind (an ablation resumed from the recurrent run would not measure memory)."""
    cfg = LearnerConfig(hidden=12, fc=7, memoryless=True)
    meta, tensors = _checkpoint(cfg, MEMORYLESS)
    assert Arch.from_wire(meta["arch"]) == MEMORYLESS
    assert policy_from_checkpoint(meta, tensors).arch.memoryless
    fits(cfg, meta, tensors)
    with pytest.raises(CheckpointError, match="'memoryless': True.*'memoryless': False"):
        fits(dataclasses.replace(cfg, memoryless=False), meta, tensors)
    old_meta = {**meta, "arch": {k: v for k, v in meta["arch"].items() if k != "memoryless"}}  # before the option
    fits(dataclasses.replace(cfg, memoryless=False), old_meta, tensors)
    with pytest.raises(CheckpointError, match="memoryless"):
        fits(cfg, old_meta, tensors)


def test_the_learner_builds_a_memoryless_model_without_stored_state() -> None:
    """The flag reaches the published arch; stored state, which nothing would read, is off even where
    use_stored_state or memory_horizon would turn it on, so actors are not asked for it and replay keeps none."""
    for given in ({"use_stored_state": True}, {"memory_horizon": 8}):
        cfg = LearnerConfig(hidden=12, fc=7, capacity=2000, memoryless=True, **given)
        assert not cfg.stored_state and dataclasses.replace(cfg, memoryless=False).stored_state
        model = build_model(cfg, 5, 2, np.array([-1.0, 0.0]), np.array([1.0, 3.0]))
        assert model.sac.arch == MEMORYLESS and model.replay.state_dim == 0
        assert not model.sac.cfg.use_stored_state


def _batch(seed: int) -> Batch:
    g = torch.Generator().manual_seed(seed)
    mask = torch.ones(B, T)
    mask[:, :2] = 0.0  # context steps, as a chunk's overlap
    return Batch(torch.randn(B, T + 1, 5, generator=g), torch.rand(B, T, 2, generator=g) * 2 - 1, torch.zeros(B, 2),
                 torch.zeros(B), torch.randn(B, T, generator=g), torch.zeros(B, T), mask,
                 torch.randn(B, 12, generator=g), torch.randn(B, 12, generator=g))


@pytest.mark.parametrize("settings", [{"torso": "shared"}, {"torso": "separate", "burn_in": 2},
                                      {"torso": "shared", "burn_in": 2, "use_stored_state": True, "memory_horizon": 4}],
                         ids=["shared", "separate-burn-in", "shared-stored-state-recall"])
def test_a_memoryless_update_trains_with_finite_losses(settings: dict) -> None:
    """The update runs on the memoryless networks with every option that unrolls an LSTM (burn-in, stored state,
    the recall loss); its losses are finite and the stored state the batch carries changes nothing."""
    torch.manual_seed(0)
    sac = SAC(MEMORYLESS, SACConfig(**settings))
    before = [p.detach().clone() for p in sac.actor.parameters()]
    for step in range(3):
        out = sac.update(_batch(step))
        assert all(np.isfinite(v) for v in out.values()), out
    assert any(not torch.equal(a, b) for a, b in zip(before, sac.actor.parameters())), "the update must train"
    batch = _batch(9)
    torch.manual_seed(5)
    with_state = sac.losses(batch)
    torch.manual_seed(5)
    without = sac.losses(batch._replace(h0=None, c0=None))
    for a, b in zip(with_state, without):
        if a is not None and b is not None:
            torch.testing.assert_close(a, b, rtol=0, atol=0)
