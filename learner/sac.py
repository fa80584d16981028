"""Soft Actor-Critic on sequences: one update reads top to bottom.

Targets, critic loss, actor loss, temperature, Polyak, in that order, as in
CleanRL's sac_continuous_action.py, but over [batch, time] with a loss mask.
Speed comes from unrolling each network once per update (see networks.py),
optional bf16 autocast, and fused foreach Polyak averaging.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn

from learner.networks import Actor, Arch, Critic, State


class Batch(NamedTuple):
    """B sequences of T steps. Actions are in [-1, 1]; obs has T + 1 entries (the last is the final next_obs)."""

    obs: torch.Tensor  # [B, T+1, D]
    action: torch.Tensor  # [B, T, A]
    prev_action: torch.Tensor  # [B, A]: the action before step 0
    prev_reward: torch.Tensor  # [B]: the reward before step 0
    reward: torch.Tensor  # [B, T]
    terminated: torch.Tensor  # [B, T] float, 1 where bootstrapping stops
    mask: torch.Tensor  # [B, T] float, 1 on steps that count in the losses
    h0: torch.Tensor | None = None  # [B, H] stored actor state (R2D2), or None for zeros
    c0: torch.Tensor | None = None


@dataclass(frozen=True)
class SACConfig:
    """Hyper-parameters of the update."""

    gamma: float = 0.99
    tau: float = 0.005
    actor_lr: float = 3e-4
    critic_lr: float = 1e-3
    alpha_lr: float = 3e-4
    init_alpha: float = 1.0
    burn_in: int = 0
    grad_clip: float = 0.0
    amp: bool = False
    use_stored_state: bool = False


def soft_target(reward: torch.Tensor, terminated: torch.Tensor, next_q: torch.Tensor, next_log_pi: torch.Tensor,
                alpha: torch.Tensor, gamma: float) -> torch.Tensor:
    """r + gamma (1 - terminated) (Q'(h', a') - alpha log pi(a'|h')): a terminal state has no future;
    a truncated one (terminated = 0) still bootstraps from its next observation."""
    return reward + gamma * (1.0 - terminated) * (next_q - alpha * next_log_pi)


def inputs(batch: Batch, arch: Arch) -> torch.Tensor:
    """Network input for every step 0..T: the observation, then the previous action and reward if the arch wants them."""
    parts = [batch.obs]
    if arch.prev_action:
        parts.append(torch.cat([batch.prev_action.unsqueeze(1), batch.action], dim=1))
    if arch.prev_reward:
        parts.append(torch.cat([batch.prev_reward.unsqueeze(1), batch.reward], dim=1).unsqueeze(-1))
    return torch.cat(parts, dim=-1) if len(parts) > 1 else batch.obs


class SAC:
    """Owns the networks, their optimisers and the temperature."""

    def __init__(self, arch: Arch, cfg: SACConfig, device: str = "cpu") -> None:
        self.arch, self.cfg, self.device = arch, cfg, torch.device(device)
        self.actor = Actor(arch).to(self.device)
        self.critics = nn.ModuleList([Critic(arch), Critic(arch)]).to(self.device)
        self.targets = nn.ModuleList([Critic(arch), Critic(arch)]).to(self.device)
        self.targets.load_state_dict(self.critics.state_dict())
        self.targets.requires_grad_(False)
        self.log_alpha = torch.tensor([float(torch.tensor(cfg.init_alpha).log())], device=self.device, requires_grad=True)
        self.target_entropy = -float(arch.act_dim)
        # fused: one kernel per optimiser step instead of a dozen per parameter (CPU and CUDA).
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr, fused=True)
        self.critic_opt = torch.optim.Adam(self.critics.parameters(), lr=cfg.critic_lr, fused=True)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=cfg.alpha_lr, fused=True)
        self._critic_params = list(self.critics.parameters())
        self._target_params = list(self.targets.parameters())

    def _autocast(self) -> contextlib.AbstractContextManager:
        if not self.cfg.amp:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=torch.bfloat16)

    def _burn_in(self, x: torch.Tensor, batch: Batch) -> tuple[torch.Tensor, State | None, list[State | None], list[State | None]]:
        """Warm every LSTM on the first `burn_in` steps without gradients; return the rest of x and the states."""
        actor_state: State | None = None
        if self.cfg.use_stored_state and batch.h0 is not None and batch.c0 is not None:
            actor_state = (batch.h0.unsqueeze(0).contiguous(), batch.c0.unsqueeze(0).contiguous())
        b = self.cfg.burn_in
        if b == 0:
            return x, actor_state, [None, None], [None, None]
        with torch.no_grad():
            _, actor_state = self.actor.features(x[:, :b], actor_state)
            critic_states: list[State | None] = [c.features(x[:, :b])[1] for c in self.critics]
            target_states: list[State | None] = [c.features(x[:, :b])[1] for c in self.targets]
        return x[:, b:], actor_state, critic_states, target_states

    def update(self, batch: Batch) -> dict[str, float]:
        """One gradient step on critics, actor and temperature, then Polyak."""
        cfg, b = self.cfg, self.cfg.burn_in
        x, actor_state, critic_states, target_states = self._burn_in(inputs(batch, self.arch), batch)
        action, reward = batch.action[:, b:], batch.reward[:, b:]
        terminated, mask = batch.terminated[:, b:], batch.mask[:, b:]
        count = mask.sum().clamp(min=1.0)
        alpha = self.log_alpha.exp().detach()

        with self._autocast():
            # One actor unroll serves both the actor loss (steps 0..T-1) and the targets (steps 1..T).
            y, _ = self.actor.features(x, actor_state)
            pi, log_pi = self.actor.sample(y)
            # Targets: r + gamma * (1 - terminated) * (min target Q(h', a') - alpha log pi(a'|h')).
            with torch.no_grad():
                next_q = torch.min(*[
                    t.q(t.features(x, s)[0][:, 1:], pi[:, 1:]) for t, s in zip(self.targets, target_states)
                ])
                target = soft_target(reward, terminated, next_q.float(), log_pi[:, 1:].float(), alpha, cfg.gamma)
            # Critic loss on the replayed actions; padding and burn-in masked out.
            hs = [c.features(x, s)[0] for c, s in zip(self.critics, critic_states)]
            q_values = [c.q(h[:, :-1], action).float() for c, h in zip(self.critics, hs)]
        critic_loss = sum(((q - target).pow(2) * mask).sum() for q in q_values) / count
        self._step(self.critic_opt, critic_loss, self.critics)

        # Actor loss: alpha log pi - min Q(h, pi), with the critics' histories held fixed.
        with self._autocast():
            q_pi = torch.min(*[c.q(h[:, :-1].detach(), pi[:, :-1]) for c, h in zip(self.critics, hs)]).float()
        log_pi_now = log_pi[:, :-1].float()
        actor_loss = ((alpha * log_pi_now - q_pi) * mask).sum() / count
        self._step(self.actor_opt, actor_loss, self.actor)

        # Temperature: keep the policy's entropy near -|A|.
        alpha_loss = -(self.log_alpha * ((log_pi_now.detach() + self.target_entropy) * mask)).sum() / count
        self._step(self.alpha_opt, alpha_loss, None)

        with torch.no_grad():
            torch._foreach_lerp_(self._target_params, self._critic_params, cfg.tau)
        return {
            "critic_loss": float(critic_loss.detach()), "actor_loss": float(actor_loss.detach()),
            "alpha_loss": float(alpha_loss.detach()), "alpha": float(alpha),
            "entropy": float(-(log_pi_now.detach() * mask).sum() / count),
        }

    def _step(self, opt: torch.optim.Optimizer, loss: torch.Tensor, module: nn.Module | None) -> None:
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if self.cfg.grad_clip > 0 and module is not None:
            nn.utils.clip_grad_norm_(module.parameters(), self.cfg.grad_clip)
        opt.step()
