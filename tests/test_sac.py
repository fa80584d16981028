"""SAC math: targets, masking, the squashed log-probability."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from learner.networks import Arch, actor_from_blob, actor_to_blob, blob_rev, squashed_log_prob
from learner.sac import SAC, Batch, SACConfig, soft_target

LAYOUTS = {"separate": {"torso": "separate"}, "shared": {"torso": "shared"},
           "shared-online-targets": {"torso": "shared", "target_torso": False},
           "shared-recall": {"torso": "shared", "memory_horizon": 4, "recall_weight": 1.0}}
ARCH = Arch(3, 2, hidden=16, fc=16, act_low=(-2.0, 0.0), act_high=(2.0, 1.0))


def test_terminated_stops_bootstrapping_truncated_does_not() -> None:
    r, q, logp, alpha = torch.tensor([1.0]), torch.tensor([10.0]), torch.tensor([-2.0]), torch.tensor(0.5)
    assert soft_target(r, torch.tensor([1.0]), q, logp, alpha, 0.9).item() == 1.0
    assert math.isclose(soft_target(r, torch.tensor([0.0]), q, logp, alpha, 0.9).item(), 1.0 + 0.9 * (10.0 + 1.0), rel_tol=1e-6)


def _batch(seed: int, mask_tail: int = 0) -> Batch:
    g = torch.Generator().manual_seed(seed)
    B, T = 4, 8
    mask = torch.ones(B, T)
    if mask_tail:
        mask[:, T - mask_tail:] = 0.0
    return Batch(torch.randn(B, T + 1, 3, generator=g), torch.rand(B, T, 2, generator=g) * 2 - 1, torch.zeros(B, 2),
                 torch.zeros(B), torch.randn(B, T, generator=g), torch.zeros(B, T), mask)


def _garble_padding(batch: Batch, tail: int) -> Batch:
    """Change everything on padded steps (and the obs after them): valid steps keep their inputs."""
    obs, action, reward, term = (x.clone() for x in (batch.obs, batch.action, batch.reward, batch.terminated))
    T = action.shape[1]
    obs[:, T - tail + 1:] = torch.randn_like(obs[:, T - tail + 1:]) * 100
    action[:, T - tail:] = torch.rand_like(action[:, T - tail:]) * 2 - 1
    reward[:, T - tail:] = 1e6
    term[:, T - tail:] = 1.0
    return batch._replace(obs=obs, action=action, reward=reward, terminated=term)


def _twin_updates(batch: Batch, other: Batch, layout: str = "shared") -> tuple[SAC, SAC, dict[str, float], dict[str, float]]:
    """Two identical learners, one update each (same RNG), on two batches."""
    torch.manual_seed(0)
    a = SAC(ARCH, SACConfig(**LAYOUTS[layout]))
    b = copy.deepcopy(a)
    torch.manual_seed(7)
    out_a = a.update(batch)
    torch.manual_seed(7)
    out_b = b.update(other)
    return a, b, out_a, out_b


@pytest.mark.parametrize("layout", LAYOUTS)
def test_padding_cannot_change_a_loss_or_a_parameter(layout: str) -> None:
    batch = _batch(1, mask_tail=3)
    a, b, out_a, out_b = _twin_updates(batch, _garble_padding(batch, 3), layout)
    for key in out_a:
        assert math.isclose(out_a[key], out_b[key], rel_tol=1e-5, abs_tol=1e-6), key
    for pa, pb in zip([*a.critics.parameters(), *a.actor.parameters()], [*b.critics.parameters(), *b.actor.parameters()]):
        assert torch.allclose(pa, pb, atol=1e-6)


def test_garbling_valid_steps_does_change_the_loss() -> None:
    """The control for the test above: the comparison can fail."""
    batch = _batch(1, mask_tail=0)
    _, _, out_a, out_b = _twin_updates(batch, _garble_padding(batch, 3))
    assert not math.isclose(out_a["critic_loss"], out_b["critic_loss"], rel_tol=1e-3)


def test_squashed_log_prob_matches_change_of_variables() -> None:
    torch.manual_seed(0)
    mean, log_std = torch.randn(1000, 1), torch.randn(1000, 1) * 0.5
    u = mean + log_std.exp() * torch.randn(1000, 1)
    got = squashed_log_prob(u, mean, log_std).double()
    u64, m64, s64 = u.double(), mean.double(), log_std.double().exp()
    gauss = -0.5 * ((u64 - m64) / s64) ** 2 - s64.log() - 0.5 * math.log(2 * math.pi)
    want = (gauss - torch.log1p(-torch.tanh(u64) ** 2)).squeeze(-1)
    ok = torch.tanh(u64).abs().squeeze(-1) < 0.999  # where the naive formula is still accurate
    assert torch.allclose(got[ok], want[ok], atol=1e-4)


def test_squashed_density_integrates_to_one() -> None:
    mean, log_std = torch.tensor([[0.3]], dtype=torch.float64), torch.tensor([[-0.2]], dtype=torch.float64)
    a = torch.linspace(-1 + 1e-9, 1 - 1e-9, 400_001, dtype=torch.float64)
    u = torch.atanh(a).unsqueeze(-1)
    density = squashed_log_prob(u, mean.expand(len(a), 1), log_std.expand(len(a), 1)).exp()
    assert abs(torch.trapezoid(density, a).item() - 1.0) < 1e-3


def test_blob_round_trip_rebuilds_the_same_actor() -> None:
    sac = SAC(ARCH, SACConfig())
    blob = actor_to_blob(sac.actor)
    actor = actor_from_blob(Arch.from_wire(ARCH.to_wire()), blob)
    x = torch.randn(2, 5, ARCH.in_dim)
    torch.testing.assert_close(actor.features(x)[0], sac.actor.features(x)[0])
    assert blob_rev(blob) == blob_rev(actor_to_blob(actor))
    assert blob_rev(blob) != blob_rev(blob + np.float32(1e-3))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_update_learns_a_constant_reward(layout: str) -> None:
    """Q of a bandit with reward 1 and terminal steps approaches 1: the update moves the right way."""
    torch.manual_seed(0)
    sac = SAC(ARCH, SACConfig(critic_lr=3e-3, **LAYOUTS[layout]))
    batch = _batch(2)._replace(reward=torch.ones(4, 8), terminated=torch.ones(4, 8))
    first = sac.update(batch)["critic_loss"]
    for _ in range(150):
        last = sac.update(batch)["critic_loss"]
    assert last < 0.05 * first


@pytest.mark.parametrize("layout", LAYOUTS)
def test_each_loss_reaches_only_its_own_parameters(layout: str) -> None:
    """update() sums the three losses into one backward pass; that is only right if no loss has a
    gradient path into another's parameters (the actor loss must not move a critic or the torso;
    targets read from the online torso must not carry a gradient into it)."""
    torch.manual_seed(0)
    sac = SAC(ARCH, SACConfig(burn_in=2, **LAYOUTS[layout]))
    groups = {"critic": sac._critic_trained, "actor": sac._actor_params, "alpha": [sac.log_alpha]}
    owners = {"critic": 0, "actor": 1, "alpha": 2}
    losses = sac.losses(_batch(3))[:3]
    for name, params in groups.items():
        for i, loss in enumerate(losses):
            grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
            reaches = any(g is not None and bool(g.abs().sum() > 0) for g in grads)
            assert reaches == (i == owners[name]), (name, i)


def test_a_shared_torso_is_one_set_of_parameters_in_the_published_actor() -> None:
    torch.manual_seed(0)
    sac = SAC(ARCH, SACConfig(torso="shared"))
    for _ in range(3):
        sac.update(_batch(4))
    torso = [p for n, p in sac.critics[0].named_parameters() if n.startswith(("inp.", "lstm."))]
    assert [p.data_ptr() for p in torso] == [p.data_ptr() for n, p in sac.critics[1].named_parameters()
                                             if n.startswith(("inp.", "lstm."))]
    blob = actor_to_blob(sac.actor)
    n_torso = sum(p.numel() for p in torso)
    np.testing.assert_array_equal(blob[:n_torso], torch.cat([p.detach().reshape(-1) for p in torso]).numpy())
    assert sum(p.numel() for p in sac._actor_params) == blob.size - n_torso
    rebuilt = actor_from_blob(ARCH, blob)
    x = torch.randn(5, 2, ARCH.in_dim)
    torch.testing.assert_close(rebuilt.features(x)[0], sac.actor.features(x)[0])


@pytest.mark.parametrize("target_torso", [True, False])
def test_targets_read_the_target_torso_only_when_asked(target_torso: bool) -> None:
    torch.manual_seed(0)
    sac = SAC(ARCH, SACConfig(torso="shared", target_torso=target_torso))
    batch = _batch(5)
    torch.manual_seed(1)
    before = float(sac.losses(batch)[0].detach())
    with torch.no_grad():
        sac.targets[0].lstm.weight_hh_l0.add_(0.5)
    torch.manual_seed(1)
    after = float(sac.losses(batch)[0].detach())
    assert (before != after) == target_torso


def _mean_size(sac: SAC, batch: Batch) -> float:
    from learner.sac import inputs, time_major

    with torch.no_grad():
        y, _ = sac.actor.features(time_major(inputs(batch, sac.arch)))
        return float(sac.actor.heads(y)[0].abs().mean())


def test_action_prior_pulls_the_policy_mean_toward_the_middle_of_the_range() -> None:
    """Rewards that push the mean away (reward = the first action), and a prior that pulls it back."""
    sizes = {}
    for weight in (0.0, 5.0):
        torch.manual_seed(0)
        sac = SAC(ARCH, SACConfig(action_prior=weight, actor_lr=3e-3, critic_lr=3e-3))
        for i in range(150):
            b = _batch(i)
            sac.update(b._replace(reward=b.action[..., 0] * 3))
        sizes[weight] = _mean_size(sac, _batch(999))
    assert sizes[5.0] < 0.5 * sizes[0.0], sizes
