"""What one SAC update promises beyond its losses: the target critics follow the critics by Polyak averaging at
rate tau, the temperature moves toward the target entropy, and the actor loss trains the actor's own parameters
and nothing of the critics. Each test names one piece of `SAC.update`/`SAC.losses` that it fails without."""

from __future__ import annotations

import pytest
import torch

from learner.networks import Arch
from learner.sac import SAC, Batch, SACConfig

ARCH = Arch(3, 2, hidden=16, fc=16, act_low=(-2.0, 0.0), act_high=(2.0, 1.0))
LAYOUTS = {"separate": {"torso": "separate"}, "shared": {"torso": "shared"},
           "shared-online-targets": {"torso": "shared", "target_torso": False},
           "shared-recall": {"torso": "shared", "memory_horizon": 4, "recall_weight": 1.0}}


def _batch(seed: int) -> Batch:
    g = torch.Generator().manual_seed(seed)
    B, T = 4, 8
    return Batch(torch.randn(B, T + 1, 3, generator=g), torch.rand(B, T, 2, generator=g) * 2 - 1,
                 torch.rand(B, 2, generator=g) * 2 - 1, torch.randn(B, generator=g), torch.randn(B, T, generator=g),
                 torch.zeros(B, T), torch.ones(B, T))


def _sac(layout: str = "shared", **cfg: float) -> SAC:
    torch.manual_seed(0)
    return SAC(ARCH, SACConfig(**LAYOUTS[layout], **cfg))  # type: ignore[arg-type]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_targets_follow_the_critics_by_polyak_averaging_at_rate_tau(layout: str) -> None:
    """After an update every target parameter is (1 - tau) x itself + tau x its critic's new value. The targets
    start away from the critics (as they are after any training), so a target that stood still, jumped to its
    critic, or moved at another rate is told apart."""
    tau = 0.1
    sac = _sac(layout, tau=tau)
    with torch.no_grad():
        for p in sac.targets.parameters():
            p.add_(torch.randn_like(p))
    before = [p.detach().clone() for p in sac.targets.parameters()]
    sac.update(_batch(1))
    pairs = list(zip(sac.targets.parameters(), sac.critics.parameters(), before))
    assert len(pairs) == len(before) > 0
    for target, critic, old in pairs:
        torch.testing.assert_close(target, old + tau * (critic.detach() - old), rtol=0, atol=1e-6)
    assert not any(torch.equal(target, old) for target, _, old in pairs), "a target did not move"


@pytest.mark.parametrize("layout", ["separate", "shared"])
def test_the_targets_are_parameters_of_their_own(layout: str) -> None:
    """Polyak averaging needs targets that are copies, not the critics themselves (tied modules would make the
    test above pass trivially): a step on the critics leaves the targets where Polyak puts them."""
    sac = _sac(layout)
    critic_ptrs = {p.data_ptr() for p in sac.critics.parameters()}
    assert not critic_ptrs & {p.data_ptr() for p in sac.targets.parameters()}
    assert not any(p.requires_grad for p in sac.targets.parameters())


def _log_alpha_after(sac: SAC, updates: int) -> list[float]:
    out = [float(sac.log_alpha.detach())]
    for i in range(updates):
        sac.update(_batch(10 + i))
        out.append(float(sac.log_alpha.detach()))
    return out


@pytest.mark.parametrize("target_entropy, direction", [(5.0, +1), (-20.0, -1)])
def test_the_temperature_moves_toward_the_target_entropy(target_entropy: float, direction: int) -> None:
    """A policy less random than the target (entropy below it) raises alpha, one more random lowers it, at every
    update; and the update's reported entropy is on the side of the target that says so."""
    sac = _sac(target_entropy=target_entropy, alpha_lr=1e-2)
    entropy = sac.update(_batch(0))["entropy"]
    assert (entropy < target_entropy * ARCH.act_dim) == (direction > 0), entropy
    log_alphas = _log_alpha_after(sac, 10)
    steps = [b - a for a, b in zip(log_alphas, log_alphas[1:])]
    assert all(s * direction > 0 for s in steps), steps


def test_the_temperature_gradient_is_the_entropy_gap() -> None:
    """d(alpha loss)/d(log alpha) = -(mean log pi + target entropy) over the unmasked steps: exactly the gap between
    the policy's entropy and the target, so alpha stops moving where they meet."""
    sac = _sac(target_entropy=-0.7)
    batch = _batch(2)
    batch = batch._replace(mask=torch.cat([torch.ones(4, 5), torch.zeros(4, 3)], dim=1))
    torch.manual_seed(3)
    losses = sac.losses(batch)
    (grad,) = torch.autograd.grad(losses.alpha, [sac.log_alpha])
    gap = float(losses.entropy) - sac.target_entropy  # entropy = -mean log pi over the same steps
    assert sac.target_entropy == pytest.approx(-0.7 * ARCH.act_dim)
    assert float(grad) == pytest.approx(gap, rel=1e-5, abs=1e-6)


def _actor_loss_grads(sac: SAC, batch: Batch) -> dict[str, torch.Tensor | None]:
    """The actor loss's gradient on every parameter the update owns, by name."""
    named = {**{f"actor.{n}": p for n, p in sac.actor.named_parameters()},
             **{f"critics.{n}": p for n, p in sac.critics.named_parameters()},
             **({f"recall.{n}": p for n, p in sac.recall.named_parameters()} if sac.recall is not None else {}),
             "log_alpha": sac.log_alpha}
    torch.manual_seed(5)
    loss = sac.losses(batch).actor
    grads = torch.autograd.grad(loss, list(named.values()), allow_unused=True)
    return dict(zip(named, grads))


def _moved(g: torch.Tensor | None) -> bool:
    return g is not None and bool(g.abs().sum() > 0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_actor_loss_reaches_the_actor_head_and_nothing_of_the_critics(layout: str) -> None:
    """The actor loss's gradient: on every parameter the actor optimiser owns (with a shared torso, the actor's head;
    else all of the actor), and on no critic parameter (its head, its LSTM, the shared torso), no recall head and
    not the temperature. alpha is tiny here, so the head's gradient is the one that flows through Q(h, pi)."""
    sac = _sac(layout, init_alpha=1e-6)
    grads = _actor_loss_grads(sac, _batch(4))
    own = {id(p) for p in sac._actor_params}
    actor_names = {f"actor.{n}" for n, p in sac.actor.named_parameters() if id(p) in own}
    assert {"actor.mean.weight", "actor.fc.weight"} <= actor_names
    for name, g in grads.items():
        assert _moved(g) == (name in actor_names), (name, None if g is None else float(g.abs().sum()))
    # Through Q: alpha log pi alone gives the head a gradient of order alpha (1e-6); Q(h, pi) gives about 1e-2.
    through_q = float(grads["actor.mean.weight"].norm())  # type: ignore[union-attr]
    assert through_q > 1e-4, f"the actor head's gradient ({through_q:.2g}) does not come through Q(h, pi)"


@pytest.mark.parametrize("layout", ["separate", "shared"])
def test_one_update_gives_each_optimiser_exactly_its_own_loss_gradient(layout: str) -> None:
    """Through update(), where one backward pass over the sum of the losses serves all three optimisers: with plain
    SGD in place of Adam (so a step shows its gradient), the critics move by the critic loss's gradient alone and
    the actor by the actor loss's alone. A path from the actor loss into a critic parameter would show here."""
    sac = _sac(layout)
    lr = 0.5
    sac.critic_opt = torch.optim.SGD(sac._critic_trained, lr=lr)
    sac.actor_opt = torch.optim.SGD(sac._actor_params, lr=lr)
    batch = _batch(6)
    torch.manual_seed(9)
    losses = sac.losses(batch)
    want = {"critic": torch.autograd.grad(losses.critic, sac._critic_trained, retain_graph=True),
            "actor": torch.autograd.grad(losses.actor, sac._actor_params)}
    before = {"critic": [p.detach().clone() for p in sac._critic_trained],
              "actor": [p.detach().clone() for p in sac._actor_params]}
    torch.manual_seed(9)  # the same draws of the policy's actions as above
    sac.update(batch)
    for group, params in (("critic", sac._critic_trained), ("actor", sac._actor_params)):
        for i, (p, old, g) in enumerate(zip(params, before[group], want[group])):
            torch.testing.assert_close(p.detach(), old - lr * g, rtol=0, atol=1e-6, msg=f"{group} parameter {i}")


def tiny(batch: Batch) -> Batch:
    """Half of every observation denormal (1e-39 scale, below float32's normal range): what flushing changes."""
    obs = batch.obs.clone()
    obs[..., ::2] *= 1e-39
    return batch._replace(obs=obs)


def test_an_update_with_denormals_flushed_is_the_same_update() -> None:
    """The learner flushes denormals (learner/threads.py): on inputs half denormal, three updates with and without
    give the same losses and the same parameters to float32 tolerance (here to the bit: a denormal input's share
    of a sum is below its rounding). The speed is bench_update.py's."""
    def run(flush: bool) -> tuple[list[dict[str, float]], list[torch.Tensor]]:
        torch.set_flush_denormal(flush)
        try:
            torch.manual_seed(0)
            sac = _sac()
            outs = [sac.update(tiny(_batch(i))) for i in range(3)]
            return outs, [p.detach().clone() for p in [*sac.actor.parameters(), *sac.critics.parameters()]]
        finally:
            torch.set_flush_denormal(False)
    (plain_out, plain_params), (flushed_out, flushed_params) = run(False), run(True)
    for a, b in zip(plain_out, flushed_out):
        assert a.keys() == b.keys() and all(abs(a[k] - b[k]) <= 1e-5 * max(1.0, abs(a[k])) for k in a), (a, b)
    assert all(torch.allclose(a, b, rtol=1e-5, atol=1e-7) for a, b in zip(plain_params, flushed_params))


def _grad_norm(params: list[torch.Tensor]) -> float:
    return float(torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None]))


@pytest.mark.parametrize("layout", ["separate", "shared"])
def test_the_clip_bounds_each_networks_step_and_says_how_often_it_bound(layout: str) -> None:
    """With `grad_clip` each optimiser steps on a gradient of norm at most the clip, and the update reports the
    norm before it and whether it bound (averaged over a pass: the share of steps clipped), so a run can tell a
    clip that shapes training from one that never acts. Without a clip nothing is reported."""
    nets = {"critic": lambda s: s._critic_trained, "actor": lambda s: s._actor_params}
    tight = _sac(layout, grad_clip=1e-6)
    out = tight.update(_batch(3))
    for name, params in nets.items():
        assert out[f"{name}_clipped"] == 1.0 and out[f"{name}_grad_norm"] > 1e-3, (name, out)
        assert _grad_norm(list(params(tight))) <= 1e-6 * 1.001, name  # what the optimiser stepped on
    loose = _sac(layout, grad_clip=1e9)
    out = loose.update(_batch(3))
    for name, params in nets.items():
        assert out[f"{name}_clipped"] == 0.0, (name, out)
        assert out[f"{name}_grad_norm"] == pytest.approx(_grad_norm(list(params(loose))), rel=1e-4), name
    assert not {k for k in _sac(layout).update(_batch(3)) if "grad_norm" in k or "clipped" in k}
