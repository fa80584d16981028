"""Full SAC updates per second (critics, actor, temperature, targets) at batch 16, sequence 32.

Ours runs the learner's default torso layout; the other layout is measured too
(at h=256) for information.

Two comparisons, kept apart because they answer different questions:

- `update_ratio_same_design`: ours against a plain PyTorch update of our own
  design (PlainShared: one critic-trained LSTM torso feeding both Q heads and,
  detached, the actor head; one target torso; the same two LSTM unrolls per
  update, counted by hooks and printed), written the straightforward way:
  batch-first tensors, [h, a] concatenated into each head, a backward pass and
  an Adam step per loss, per-parameter Polyak. The ratio is what the
  implementation buys (time-major layout, history terms, one backward, fused
  Adam, foreach Polyak), with the design held fixed.
- `update_ratio_vs_reference`: ours against today's reference, another design
  written plainly (separate LSTMs per network, every network unrolled once
  per use: the actor on obs and again on next obs, each critic for its loss
  and again for the actor's). Design and implementation together.

And how near the update is to its kernels (`kernel_fraction_h64`, `_h128`, `_h256`): every aten op one
update of ours dispatches is recorded (a TorchDispatchMode, below autograd, so the backward's ops too), and
the kernels among them (the LSTM unrolls forward and backward, every matrix product of the heads and of the
gradients) are replayed alone, the same ops on the same shapes, called one after another with nothing
between them. Kernels' time over the update's, both timed in alternating slices of the same run. What the
rest is: Python, the autograd graph, small-tensor ops (the op counts are printed).

For information also the original Nim bot's critic design (the action goes into the
LSTM, so every new action costs an unroll), written the same plain way.
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from learner.config import LearnerConfig
from learner.networks import Arch, squashed_log_prob
from learner.sac import SAC, TORSOS, Batch, SACConfig
from learner.threads import flush_denormals

B, T, OBS, ACT = 16, 32, 35, 4


def batch() -> Batch:
    g = torch.Generator().manual_seed(0)
    return Batch(torch.randn(B, T + 1, OBS, generator=g), torch.rand(B, T, ACT, generator=g) * 2 - 1,
                 torch.zeros(B, ACT), torch.zeros(B), torch.randn(B, T, generator=g), torch.zeros(B, T), torch.ones(B, T))


class RefActor(nn.Module):
    def __init__(self, h: int) -> None:
        super().__init__()
        self.inp, self.lstm, self.fc = nn.Linear(OBS, h), nn.LSTM(h, h, batch_first=True), nn.Linear(h, 128)
        self.mean, self.log_std = nn.Linear(128, ACT), nn.Linear(128, ACT)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = F.relu(self.fc(self.lstm(F.relu(self.inp(obs)))[0]))
        mean, log_std = self.mean(y), self.log_std(y).clamp(-5, 2)
        u = mean + log_std.exp() * torch.randn_like(mean)
        return torch.tanh(u), squashed_log_prob(u, mean, log_std)


class RefCritic(nn.Module):
    """Ours: obs history -> linear -> LSTM, then [h_t, a_t] -> linear(128) -> Q.
    The original Nim bot's (seed=True): (obs, action) -> linear -> LSTM -> linear(128) -> Q."""

    def __init__(self, h: int, seed: bool) -> None:
        super().__init__()
        self.seed = seed
        self.inp, self.lstm = nn.Linear(OBS + (ACT if seed else 0), h), nn.LSTM(h, h, batch_first=True)
        self.fc, self.out = nn.Linear(h + (0 if seed else ACT), 128), nn.Linear(128, 1)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        if self.seed:
            z = self.lstm(F.relu(self.inp(torch.cat([obs, act], -1))))[0]
        else:
            z = torch.cat([self.lstm(F.relu(self.inp(obs)))[0], act], -1)
        return self.out(F.relu(self.fc(z))).squeeze(-1)


class Reference:
    """The straightforward update: one unroll per use, as a first implementation would write it."""

    def __init__(self, h: int, seed_critic: bool = False) -> None:
        self.actor = RefActor(h)
        self.q1, self.q2, self.t1, self.t2 = (RefCritic(h, seed_critic) for _ in range(4))
        self.t1.load_state_dict(self.q1.state_dict())
        self.t2.load_state_dict(self.q2.state_dict())
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.aopt = torch.optim.Adam(self.actor.parameters(), 3e-4)
        self.copt = torch.optim.Adam(list(self.q1.parameters()) + list(self.q2.parameters()), 3e-4)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], 3e-4)

    def update(self, b: Batch) -> None:
        obs, nxt = b.obs[:, :-1], b.obs[:, 1:]
        alpha = self.log_alpha.exp().detach()
        with torch.no_grad():
            a2, logp2 = self.actor(nxt)
            q_next = torch.min(self.t1(nxt, a2), self.t2(nxt, a2)) - alpha * logp2
            y = b.reward + 0.99 * (1 - b.terminated) * q_next
        loss = ((self.q1(obs, b.action) - y).pow(2) * b.mask).mean() + ((self.q2(obs, b.action) - y).pow(2) * b.mask).mean()
        self.copt.zero_grad()
        loss.backward()
        self.copt.step()
        a, logp = self.actor(obs)
        actor_loss = ((alpha * logp - torch.min(self.q1(obs, a), self.q2(obs, a))) * b.mask).mean()
        self.aopt.zero_grad()
        actor_loss.backward()
        self.aopt.step()
        alpha_loss = -(self.log_alpha * (logp.detach() - ACT)).mean()
        self.alpha_opt.zero_grad()
        alpha_loss.backward()
        self.alpha_opt.step()
        with torch.no_grad():
            for q, t in ((self.q1, self.t1), (self.q2, self.t2)):
                for p, tp in zip(q.parameters(), t.parameters()):
                    tp.mul_(0.995).add_(0.005 * p)


class QHead(nn.Module):
    """[h_t, a_t] -> linear(128) -> Q: our critic head, written plainly (the action concatenated each time)."""

    def __init__(self, h: int) -> None:
        super().__init__()
        self.fc, self.out = nn.Linear(h + ACT, 128), nn.Linear(128, 1)

    def forward(self, hist: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return self.out(F.relu(self.fc(torch.cat([hist, act], -1)))).squeeze(-1)


class Torso(nn.Module):
    def __init__(self, h: int) -> None:
        super().__init__()
        self.inp, self.lstm = nn.Linear(OBS, h), nn.LSTM(h, h, batch_first=True)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.lstm(F.relu(self.inp(obs)))[0]


class ActorHead(nn.Module):
    def __init__(self, h: int) -> None:
        super().__init__()
        self.fc, self.mean, self.log_std = nn.Linear(h, 128), nn.Linear(128, ACT), nn.Linear(128, ACT)

    def forward(self, hist: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = F.relu(self.fc(hist))
        mean, log_std = self.mean(y), self.log_std(y).clamp(-5, 2)
        u = mean + log_std.exp() * torch.randn_like(mean)
        return torch.tanh(u), squashed_log_prob(u, mean, log_std)


class PlainShared:
    """Our design, written the straightforward way (see the module docstring): one online torso unroll over
    obs 0..T serves both critics and (detached) the actor head, whose one pass gives the policy's action at
    every step; one target torso unroll gives the next-step histories."""

    def __init__(self, h: int) -> None:
        self.torso, self.q1, self.q2, self.actor = Torso(h), QHead(h), QHead(h), ActorHead(h)
        self.t_torso, self.t1, self.t2 = Torso(h), QHead(h), QHead(h)
        for online, target in ((self.torso, self.t_torso), (self.q1, self.t1), (self.q2, self.t2)):
            target.load_state_dict(online.state_dict())
            target.requires_grad_(False)
        self.critic_params = [*self.torso.parameters(), *self.q1.parameters(), *self.q2.parameters()]
        self.target_params = [*self.t_torso.parameters(), *self.t1.parameters(), *self.t2.parameters()]
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.aopt = torch.optim.Adam(self.actor.parameters(), 3e-4)
        self.copt = torch.optim.Adam(self.critic_params, 1e-3)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], 3e-4)

    def update(self, b: Batch) -> None:
        alpha = self.log_alpha.exp().detach()
        hist = self.torso(b.obs)  # [B, T+1, h]: the one online unroll
        a_all, logp_all = self.actor(hist.detach())  # the actor reads the critics' torso, detached
        with torch.no_grad():
            t_hist = self.t_torso(b.obs)[:, 1:]  # the one target unroll
            q_next = torch.min(self.t1(t_hist, a_all[:, 1:]), self.t2(t_hist, a_all[:, 1:])) - alpha * logp_all[:, 1:]
            y = b.reward + 0.99 * (1 - b.terminated) * q_next
        h_now = hist[:, :-1]
        loss = ((self.q1(h_now, b.action) - y).pow(2) * b.mask).mean() + ((self.q2(h_now, b.action) - y).pow(2) * b.mask).mean()
        self.copt.zero_grad()
        loss.backward()
        self.copt.step()
        h_fixed, a, logp = h_now.detach(), a_all[:, :-1], logp_all[:, :-1]
        actor_loss = ((alpha * logp - torch.min(self.q1(h_fixed, a), self.q2(h_fixed, a))) * b.mask).mean()
        self.aopt.zero_grad()
        actor_loss.backward()
        self.aopt.step()
        alpha_loss = -(self.log_alpha * (logp.detach() - ACT)).mean()
        self.alpha_opt.zero_grad()
        alpha_loss.backward()
        self.alpha_opt.step()
        with torch.no_grad():
            for p, tp in zip(self.critic_params, self.target_params):
                tp.mul_(0.995).add_(0.005 * p)


def lstm_unrolls(modules: list[nn.Module], update, b: Batch) -> int:
    """LSTM forward calls in one update (each distinct LSTM module counted per call)."""
    calls = [0]
    lstms = {id(m): m for mod in modules for m in mod.modules() if isinstance(m, nn.LSTM)}
    hooks = [m.register_forward_hook(lambda *_: calls.__setitem__(0, calls[0] + 1)) for m in lstms.values()]
    try:
        update(b)
    finally:
        for hook in hooks:
            hook.remove()
    return calls[0]


# The kernels of an update: the LSTM layers' own (forward and backward, mkldnn's or the fused cells') and the matrix
# products (the heads', the input layers', and their gradients').
KERNELS = ("aten.mm.", "aten.addmm.", "aten.bmm.", "aten.baddbmm.", "aten.mkldnn_rnn_layer", "aten._thnn_fused_lstm",
           "aten.lstm")


class Recorder(TorchDispatchMode):
    """Every aten op dispatched while active, counted; the kernels' calls kept with copies of their inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0
        self.calls: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        kwargs = kwargs or {}
        self.ops += 1
        if str(func).startswith(KERNELS):
            copy = (lambda x: x.detach().clone() if isinstance(x, torch.Tensor) else x)  # noqa: E731
            self.calls.append((func, torch.utils._pytree.tree_map(copy, args),
                               torch.utils._pytree.tree_map(copy, kwargs)))
        return func(*args, **kwargs)


def kernel_fraction(sac: SAC, b: Batch, seconds: float) -> dict[str, float]:
    """The update's kernels replayed alone, against the update, in alternating slices of `seconds` in all."""
    sac.update(b)
    with Recorder() as rec:
        sac.update(b)
    calls = rec.calls

    def replay(_: Batch) -> None:
        for func, args, kwargs in calls:
            func(*args, **kwargs)
    update_n = kernels_n = 0
    update_s = kernels_s = 0.0
    for _ in range(4):
        for fn, which in ((sac.update, "u"), (replay, "k")):
            fn(b)
            n, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds / 8:
                fn(b)
                n += 1
            if which == "u":
                update_n, update_s = update_n + n, update_s + time.perf_counter() - start
            else:
                kernels_n, kernels_s = kernels_n + n, kernels_s + time.perf_counter() - start
    update_ms, kernels_ms = 1000 * update_s / update_n, 1000 * kernels_s / kernels_n
    return {"fraction": kernels_ms / update_ms, "update_ms": update_ms, "kernels_ms": kernels_ms, "ops": rec.ops,
            "kernel_ops": len(calls)}


def ours(h: int, torso: str, amp: bool, target_torso: bool = True) -> SAC:
    arch = Arch(OBS, ACT, hidden=h, prev_action=False, prev_reward=False, act_low=(-1.0,) * ACT, act_high=(1.0,) * ACT)
    return SAC(arch, SACConfig(amp=amp, torso=torso, target_torso=target_torso))


def rate(update, b: Batch, seconds: float) -> float:
    for _ in range(3):
        update(b)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        update(b)
        n += 1
    return n / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--amp", action="store_true", help="bf16 autocast for ours (must be shown to learn as well)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    flush_denormals()  # as the learner does
    torch.manual_seed(0)
    b, figures = batch(), {}
    default = LearnerConfig().torso
    for h in (64, 128, 256):
        figures[f"updates_per_s_h{h}"] = rate(ours(h, default, args.amp).update, b, args.seconds)
        print(f"saclstm   h={h:<4} {figures[f'updates_per_s_h{h}']:7.1f} updates/s "
              f"({1000 / figures[f'updates_per_s_h{h}']:.1f} ms)  torso = {default} (the default)", flush=True)
    for h in (64, 128, 256):
        k = kernel_fraction(ours(h, default, args.amp), b, args.seconds)
        figures[f"kernel_fraction_h{h}"] = k["fraction"]
        print(f"saclstm   h={h:<4} kernels alone {k['kernels_ms']:.2f} ms of the update's {k['update_ms']:.2f} ms: "
              f"kernel fraction {k['fraction']:.2f} ({k['kernel_ops']} kernel calls among {k['ops']} aten ops)",
              flush=True)
    other = next(t for t in TORSOS if t != default)
    figures[f"{other}_torso_updates_per_s_h256"] = rate(ours(256, other, args.amp).update, b, args.seconds)
    print(f"saclstm   h=256  {figures[f'{other}_torso_updates_per_s_h256']:7.1f} updates/s  torso = {other}", flush=True)
    figures["online_targets_updates_per_s_h256"] = rate(ours(256, "shared", args.amp, False).update, b, args.seconds)
    print(f"saclstm   h=256  {figures['online_targets_updates_per_s_h256']:7.1f} updates/s  torso = shared, "
          "target_torso = false", flush=True)
    shared = ours(256, "shared", args.amp)
    plain = PlainShared(256)
    unrolls = {"ours": lstm_unrolls([shared.actor, shared.critics, shared.targets], shared.update, b),
               "plain": lstm_unrolls([plain.torso, plain.t_torso, plain.actor], plain.update, b)}
    assert unrolls["ours"] == unrolls["plain"], f"not the same design: LSTM unrolls per update {unrolls}"
    ours_shared = figures["updates_per_s_h256"] if default == "shared" else figures["shared_torso_updates_per_s_h256"]
    figures["plain_same_design_updates_per_s_h256"] = rate(plain.update, b, args.seconds)
    print(f"plain, same design (shared torso, {unrolls['plain']} LSTM unrolls/update like ours) h=256 "
          f"{figures['plain_same_design_updates_per_s_h256']:7.1f} updates/s", flush=True)
    ref = Reference(256)
    figures["reference_updates_per_s_h256"] = rate(ref.update, b, args.seconds)
    print(f"reference h=256  {figures['reference_updates_per_s_h256']:7.1f} updates/s "
          f"({1000 / figures['reference_updates_per_s_h256']:.1f} ms)")
    figures["seed_critic_updates_per_s_h256"] = rate(Reference(256, seed_critic=True).update, b, args.seconds)
    print(f"seed-style critic, plain, h=256 {figures['seed_critic_updates_per_s_h256']:7.1f} updates/s")
    figures["update_ratio_same_design"] = ours_shared / figures["plain_same_design_updates_per_s_h256"]
    figures["update_ratio_vs_reference"] = figures["updates_per_s_h256"] / figures["reference_updates_per_s_h256"]
    figures["bots_at_utd1_h256"] = figures["updates_per_s_h256"] / 30.0
    print(f"h=256: saclstm / plain of the same design {figures['update_ratio_same_design']:.2f} (implementation only); "
          f"saclstm / reference {figures['update_ratio_vs_reference']:.2f} (design and implementation)")
    print(f"Tank Royale bots at 30 turns/s, UTD 1: {figures['bots_at_utd1_h256']:.2f} (target: updates_per_s_h256 >= 30)")
    print(json.dumps({k: round(v, 3) for k, v in figures.items()} | {"threads": args.threads, "amp": args.amp,
                                                                   "torso": default, "lstm_unrolls": unrolls}))


if __name__ == "__main__":
    main()
