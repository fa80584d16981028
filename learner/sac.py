"""Soft Actor-Critic on sequences: one update reads top to bottom.

Targets, critic loss, actor loss, temperature, Polyak, in that order, as in
CleanRL's sac_continuous_action.py, but over [batch, time] with a loss mask.
Speed comes from unrolling each network once per update (see networks.py),
optional bf16 autocast, and fused foreach Polyak averaging.

Two torso layouts (`SACConfig.torso`):
- "separate": actor and each twin critic own their input layer and LSTM
  (5 LSTM forwards and 3 backwards per update).
- "shared": one LSTM torso, trained by the critic loss only, feeds both Q heads
  and the actor head; the actor reads it detached, as SAC-AE and DrQ share a
  critic-trained encoder. The target critics share one target torso.
  2 LSTM forwards and 1 backward per update. The published actor is unchanged
  (torso + actor head), so actors cannot tell the two apart.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, NamedTuple, cast

import torch
from torch import nn

from learner.config import TORSOS, LearnerConfig
from learner.networks import Actor, Arch, Critic, State, init_memory


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
    target: torch.Tensor | None = None  # [B, T, A] action targets in [-1, 1] (0 where target_mask is 0)
    target_mask: torch.Tensor | None = None  # [B, T, A] 1 where a step's action part has a target that counts


class Losses(NamedTuple):
    """One update's losses at the current parameters. The first three are what the optimisers minimise (one
    backward pass over their sum); `td` and `recall` are the critic loss's two parts, reported apart so the
    critic loss reads the same with or without a memory horizon."""

    critic: torch.Tensor  # td + recall_weight * recall
    actor: torch.Tensor
    alpha: torch.Tensor
    entropy: torch.Tensor  # of the policy, detached: reported, not trained
    td: torch.Tensor  # the twin critics' squared TD error
    recall: torch.Tensor | None  # RecallHead's loss, unweighted; None without a memory horizon
    target: torch.Tensor | None = None  # the action-target term, unweighted (in actor); None when off or unlabelled


def _learner(name: str) -> Any:
    """LearnerConfig's default for the setting `name`: every update setting is one of the learner's, declared
    (with its default and its help) there once; a name that is not one fails here, at import."""
    return LearnerConfig.__dataclass_fields__[name].default


@dataclass(frozen=True)
class SACConfig:
    """The update's settings: LearnerConfig's of the same names (`of`), with its defaults."""

    gamma: float = _learner("gamma")
    n_step: int = _learner("n_step")
    tau: float = _learner("tau")
    actor_lr: float = _learner("actor_lr")
    critic_lr: float = _learner("critic_lr")
    alpha_lr: float = _learner("alpha_lr")
    init_alpha: float = _learner("init_alpha")
    burn_in: int = _learner("burn_in")
    grad_clip: float = _learner("grad_clip")
    amp: bool = _learner("amp")
    use_stored_state: bool = _learner("use_stored_state")
    torso: str = _learner("torso")
    target_torso: bool = _learner("target_torso")
    memory_horizon: int = _learner("memory_horizon")  # > 1: chrono-initialise every LSTM's gates for it
    recall_weight: float = _learner("recall_weight")  # > 0 with memory_horizon > 1: the recall loss (RecallHead)
    target_entropy: float = _learner("target_entropy")  # per action dimension, x dim(A)
    action_prior: float = _learner("action_prior")  # > 0: a penalty on the pre-squash mean^2 (a prior at mid-range)
    action_target_weight: float = _learner("action_target_weight")  # > 0: the mean action pulled to the batch's targets

    @staticmethod
    def of(cfg: LearnerConfig) -> SACConfig:
        """The update's settings out of the learner's, by name; stored state as the learner trains it (memory_horizon
        turns it on: LearnerConfig.stored_state)."""
        values = {f.name: getattr(cfg, f.name) for f in fields(SACConfig)}
        values["use_stored_state"] = cfg.stored_state
        return SACConfig(**values)

    def __post_init__(self) -> None:
        if self.torso not in TORSOS:
            raise ValueError(f"torso must be one of {TORSOS}, got {self.torso!r}")
        if not self.target_torso and self.torso != "shared":
            raise ValueError("target_torso = False applies to torso = 'shared' only")
        if self.recall_weight < 0:
            raise ValueError(f"recall_weight must be 0 (off) or above, got {self.recall_weight}")

    @property
    def recalls(self) -> bool:
        return self.recall_weight > 0 and self.memory_horizon > 1



def soft_target(reward: torch.Tensor, terminated: torch.Tensor, next_q: torch.Tensor, next_log_pi: torch.Tensor,
                alpha: torch.Tensor, gamma: float) -> torch.Tensor:
    """r + gamma (1 - terminated) (Q'(h', a') - alpha log pi(a'|h')): a terminal state has no future;
    a truncated one (terminated = 0) still bootstraps from its next observation."""
    return reward + gamma * (1.0 - terminated) * (next_q - alpha * next_log_pi)


def n_step_target(reward: torch.Tensor, terminated: torch.Tensor, mask: torch.Tensor, value: torch.Tensor,
                  gamma: float, n: int) -> torch.Tensor:
    """The n-step soft target of every step t of a chunk ([T, B] each; value[t] the soft value of the state after
    step t): the rewards of steps t .. t+m-1, then gamma^m value[t+m-1], where m is n or less: a terminal step
    ends the sum with no bootstrap, and the chunk's last valid step (the mask's end) bootstraps from its own
    value. n = 1 is soft_target exactly. Why: a reward that lands a few decisions after the action that earned
    it (a dodge, and the hit it avoids) reaches that action's target in one update instead of n."""
    T = reward.shape[0]

    def ahead(x: torch.Tensor, k: int) -> torch.Tensor:  # x[t + k], zero past the chunk
        return x if k == 0 else torch.cat([x[k:], torch.zeros_like(x[:k])]) if k < T else torch.zeros_like(x)

    target, open_, disc = torch.zeros_like(reward), torch.ones_like(reward), 1.0
    for k in range(n):
        term, nxt_valid = ahead(terminated, k), ahead(mask, k + 1)
        target = target + open_ * disc * ahead(reward, k)
        last = torch.ones_like(reward) if k == n - 1 else (nxt_valid == 0).to(reward.dtype)
        target = target + open_ * (1.0 - term) * last * disc * gamma * ahead(value, k)
        open_ = open_ * (1.0 - term) * (1.0 - last)
        disc *= gamma
    return target


def time_major(t: torch.Tensor) -> torch.Tensor:
    """[B, T, ...] -> [T, B, ...], contiguous."""
    return t.transpose(0, 1).contiguous()


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
        # The same modules, typed (a ModuleList's items are plain Modules to a type checker); built once, not
        # per update. .to() and load_state_dict change parameters in place, so these stay the ones trained.
        self._critic_nets = cast("list[Critic]", list(self.critics))
        self._target_nets = cast("list[Critic]", list(self.targets))
        self.shared = cfg.torso == "shared"
        if self.shared:
            for nets in (self.critics, self.targets):
                _tie_torso(nets[0], nets[1])
            _tie_torso(self.critics[0], self.actor)
        for net in (self.actor, *self.critics):
            init_memory(net.lstm, cfg.memory_horizon)
        self.targets.load_state_dict(self.critics.state_dict())
        self.targets.requires_grad_(False)
        # Trained with the critics (their optimiser), after their parameters, so a checkpoint's moments by position
        # stay where they were for the networks.
        self.recall = RecallHead(arch, cfg.memory_horizon).to(self.device) if cfg.recalls else None
        self.log_alpha = torch.tensor([float(torch.tensor(cfg.init_alpha).log())], device=self.device, requires_grad=True)
        self.target_entropy = cfg.target_entropy * float(arch.act_dim)
        self._actor_params = self.actor_own_parameters()
        # fused: one kernel per optimiser step instead of a dozen per parameter (CPU and CUDA).
        self.actor_opt = torch.optim.Adam(self._actor_params, lr=cfg.actor_lr, fused=True)
        critic_trained = [*self.critics.parameters(), *(self.recall.parameters() if self.recall is not None else ())]
        self.critic_opt = torch.optim.Adam(critic_trained, lr=cfg.critic_lr, fused=True)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=cfg.alpha_lr, fused=True)
        self._critic_params: list[torch.Tensor] = list(self.critics.parameters())  # Polyak's pairs: networks only
        self._critic_trained: list[torch.Tensor] = critic_trained
        self._target_params: list[torch.Tensor] = list(self.targets.parameters())

    def actor_own_parameters(self) -> list[nn.Parameter]:
        """What the actor loss trains: all of the actor, or only its head when the torso is the critics'."""
        torso = {id(p) for p in self.critics[0].parameters()} if self.shared else set()
        return [p for p in self.actor.parameters() if id(p) not in torso]

    def _autocast(self) -> contextlib.AbstractContextManager:
        if not self.cfg.amp:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=torch.bfloat16)

    def _burn_in(self, x: torch.Tensor, batch: Batch) -> tuple[torch.Tensor, State | None, list[State | None], list[State | None]]:
        """Warm every LSTM on the first `burn_in` steps without gradients; return the rest of x and the states.
        A stored state (R2D2) is the published actor's: it starts the actor, and with a shared torso every torso.
        A memoryless arch reads no state, so there is nothing to warm: the burn-in steps are only dropped."""
        if self.arch.memoryless:
            return x[self.cfg.burn_in:], None, [None, None], [None, None]
        actor_state: State | None = None
        if self.cfg.use_stored_state and batch.h0 is not None and batch.c0 is not None:
            actor_state = (batch.h0.unsqueeze(0).contiguous(), batch.c0.unsqueeze(0).contiguous())
        start: State | None = actor_state if self.shared else None
        b = self.cfg.burn_in
        if b == 0:
            return x, actor_state, [start, start], [start, start]
        with torch.no_grad():
            if self.shared:
                critic_states: list[State | None] = [self._critic_nets[0].features(x[:b], start)[1]] * 2
                target_states: list[State | None] = [self._target_nets[0].features(x[:b], start)[1]] * 2
                return x[b:], critic_states[0], critic_states, target_states
            _, actor_state = self.actor.features(x[:b], actor_state)
            critic_states = [c.features(x[:b])[1] for c in self._critic_nets]
            target_states = [c.features(x[:b])[1] for c in self._target_nets]
        return x[b:], actor_state, critic_states, target_states

    def _histories(self, nets: list[Critic], x: torch.Tensor, states: list[State | None]) -> list[torch.Tensor]:
        """Each critic's LSTM output over x: one unroll per torso (one in all when it is shared)."""
        if self.shared:
            return [nets[0].features(x, states[0])[0]] * 2
        return [c.features(x, s)[0] for c, s in zip(nets, states)]

    @staticmethod
    def _terms(nets: list[Critic], hs: list[torch.Tensor]) -> list[torch.Tensor]:
        """Each critic's history term. (Fusing both heads' products into one wider matmul measured slower.)"""
        return [c.history_term(h) for c, h in zip(nets, hs)]

    def update(self, batch: Batch) -> dict[str, float]:
        """One gradient step on critics, actor and temperature, then Polyak."""
        losses = self.losses(batch)
        # The three losses touch disjoint parameters (every cross path is detached in `losses`; a test
        # holds it), so one backward pass gives each optimiser exactly its own loss's gradient.
        for opt in (self.critic_opt, self.actor_opt, self.alpha_opt):
            opt.zero_grad(set_to_none=True)
        (losses.critic + losses.actor + losses.alpha).backward()
        norms = {"critic": self._step(self.critic_opt, self._critic_trained),
                 "actor": self._step(self.actor_opt, self._actor_params)}
        self._step(self.alpha_opt, None)
        with torch.no_grad():
            torch._foreach_lerp_(self._target_params, self._critic_params, self.cfg.tau)
        out = {
            "critic_loss": float(losses.td.detach()), "actor_loss": float(losses.actor.detach()),
            "alpha_loss": float(losses.alpha.detach()), "alpha": float(self.log_alpha.detach().exp()),
            "entropy": float(losses.entropy),
        }
        if losses.recall is not None:
            out["recall_loss"] = float(losses.recall.detach())
        if losses.target is not None:
            out["target_loss"] = float(losses.target.detach())
        for name, norm in norms.items():  # with a clip: how big the steps were, and how often the clip bound
            if norm is not None:
                out[f"{name}_grad_norm"] = norm
                out[f"{name}_clipped"] = float(norm > self.cfg.grad_clip)
        return out

    def losses(self, batch: Batch) -> Losses:
        """Critic, actor and temperature losses (and the policy's entropy) at the current parameters."""
        cfg, b = self.cfg, self.cfg.burn_in
        # Time-major from here on ([T, B, ...]): the LSTMs' own layout, so every shift by a step is a view.
        x, actor_state, critic_states, target_states = self._burn_in(time_major(inputs(batch, self.arch)), batch)
        action, reward = time_major(batch.action)[b:], time_major(batch.reward)[b:]
        terminated, mask = time_major(batch.terminated)[b:], time_major(batch.mask)[b:]
        count = mask.sum().clamp(min=1.0)
        alpha = self.log_alpha.exp().detach()

        with self._autocast():
            hs = self._histories(self._critic_nets, x, critic_states)
            recall = None if self.recall is None else self.recall.loss(hs[0][:-1], batch.obs, b, mask)
            # One actor unroll serves both the actor loss (steps 0..T-1) and the targets (steps 1..T).
            y = self.actor.head_features(hs[0].detach()) if self.shared else self.actor.features(x, actor_state)[0]
            pi, log_pi = self.actor.sample(y)
            # Targets: r + gamma * (1 - terminated) * (min target Q(h', a') - alpha log pi(a'|h')).
            with torch.no_grad():
                if self.shared and not cfg.target_torso:  # DrQ-v2: target heads on the online torso's histories
                    next_hs = [hs[0].detach()] * 2
                else:
                    next_hs = self._histories(self._target_nets, x, target_states)
                next_terms = self._terms(self._target_nets, next_hs)
                next_q = torch.min(*[t.q_from(term[1:], pi[1:]) for t, term in zip(self._target_nets, next_terms)])
                if cfg.n_step == 1:
                    target = soft_target(reward, terminated, next_q.float(), log_pi[1:].float(), alpha, cfg.gamma)
                else:
                    value = next_q.float() - alpha * log_pi[1:].float()
                    target = n_step_target(reward, terminated, mask, value, cfg.gamma, cfg.n_step)
            # Critic loss on the replayed actions; padding and burn-in masked out.
            terms = [term[:-1] for term in self._terms(self._critic_nets, hs)]
            q_values = [c.q_from(term, action).float() for c, term in zip(self._critic_nets, terms)]
            # Actor loss: alpha log pi - min Q(h, pi), through the critics' heads as they are before this
            # step (as Acme's SAC does), with every critic weight and history held fixed.
            q_pi = torch.min(*[c.q_from(term.detach(), pi[:-1], frozen=True)
                               for c, term in zip(self._critic_nets, terms)]).float()
            target_term = self._target_term(batch, hs[0], y) if cfg.action_target_weight > 0 else None
        td = cast("torch.Tensor", sum(((q - target).pow(2) * mask).sum() for q in q_values) / count)
        critic_loss = td if recall is None else td + cfg.recall_weight * recall
        log_pi_now = log_pi[:-1].float()
        actor_loss = ((alpha * log_pi_now - q_pi) * mask).sum() / count
        if cfg.action_prior > 0:  # the actions' middle is the default a form chose; pull the mean's drift back to it
            mean = self.actor.heads(y[:-1])[0].float()
            actor_loss = actor_loss + cfg.action_prior * (mean.pow(2).mean(-1) * mask).sum() / count
        if target_term is not None:
            actor_loss = actor_loss + cfg.action_target_weight * target_term
        # Temperature: keep the policy's entropy near -|A|.
        alpha_loss = -(self.log_alpha * ((log_pi_now.detach() + self.target_entropy) * mask)).sum() / count

        entropy = -(log_pi_now.detach() * mask).sum() / count
        return Losses(critic_loss, actor_loss, alpha_loss, entropy, td, recall, target_term)

    def _target_term(self, batch: Batch, h: torch.Tensor, y: torch.Tensor) -> torch.Tensor | None:
        """The squared distance of the policy's mean action (squashed) from the batch's action targets, over the
        parts that have one. Why: a label that says where the action should have been (a shot's guess factor in
        hindsight) teaches a conditional aim far finer than a reward decisions later does. Unlike the actor loss
        it reaches the torso, the shared one included (h, not detached): what the label needs remembered is what
        the torso must learn to hold, and the critic loss alone does not ask for it. None without labels."""
        if batch.target is None or batch.target_mask is None:
            return None
        b = self.cfg.burn_in
        weight = time_major(batch.target_mask)[b:]
        if not bool(weight.any()):
            return None
        features = self.actor.head_features(h[:-1]) if self.shared else y[:-1]
        mean = torch.tanh(self.actor.heads(features)[0].float())
        return ((mean - time_major(batch.target)[b:]).pow(2) * weight).sum() / weight.sum()

    def _step(self, opt: torch.optim.Optimizer, params: Sequence[torch.Tensor] | None) -> float | None:
        """Clip (when `grad_clip` is on) and step; the gradient's norm before the clip (None with the clip off)."""
        norm = None
        if self.cfg.grad_clip > 0 and params is not None:
            norm = float(nn.utils.clip_grad_norm_(params, self.cfg.grad_clip))
        opt.step()
        return norm


class RecallHead(nn.Module):
    """A linear read-out of the critic torso's state that must name the observations 1 .. memory_horizon steps back.

    Why: on a recall task the critic loss alone hardly trains memory. The reward depends on an old observation
    and on the action, and while the policy still explores, the action's share of the reward hides the old
    observation's. This loss asks the torso directly for what a memory of N steps holds, as the Memory Gym
    agents' observation reconstruction does. It reads `offsets`: every step back up to N when N <= 16, else 16
    spread evenly with N last, so its cost does not grow with N. Evenly, not on a log scale: memory grows outward
    from the recent steps, and a far offset with no neighbour is not reached (the measurements behind both:
    docs/performance.md). A step whose offset reaches before the chunk is left out. The loss is the
    squared error over the variance of what it asks for (1 - R^2, pooled), so its weight means the same for
    any observation's units.
    """

    MAX_OFFSETS = 16

    def __init__(self, arch: Arch, horizon: int) -> None:
        super().__init__()
        n = min(self.MAX_OFFSETS, horizon)
        offsets = [round(horizon * (i + 1) / n) for i in range(n)]  # n <= horizon: 1 or more apart, from 1
        self.register_buffer("offsets", torch.tensor(offsets, dtype=torch.long), persistent=False)
        self.obs_dim = arch.obs_dim
        self.out = nn.Linear(arch.hidden, arch.obs_dim * len(offsets))

    def loss(self, h: torch.Tensor, obs: torch.Tensor, burn_in: int, mask: torch.Tensor) -> torch.Tensor:
        """h [T, B, hidden]: the torso's output at the trained steps (after burn-in); obs [B, T+burn_in+1, D]."""
        T, B, _ = h.shape
        offsets = cast(torch.Tensor, self.offsets)
        idx = torch.arange(burn_in, burn_in + T, device=h.device)[:, None] - offsets[None, :]  # [T, m]
        reach = (idx >= 0).to(mask.dtype)
        past = time_major(obs)[idx.clamp(min=0)]  # [T, m, B, D]
        pred = self.out(h.float()).view(T, B, len(offsets), self.obs_dim).transpose(1, 2)  # [T, m, B, D]
        weight = reach[:, :, None] * mask[:, None, :]  # [T, m, B]
        n = weight.sum().clamp(min=1.0)
        err = (pred - past).pow(2).mean(-1)
        # Scaled by the asked-for observations' variance (over the batch, pooled over their dims): 1 for a read-out
        # that knows nothing, whatever the observations' units, 0 for one that names them all.
        w = weight[..., None]
        mean = (past * w).sum((0, 1, 2)) / n
        scale = (((past - mean) ** 2 * w).sum((0, 1, 2)) / n).mean().clamp(min=1e-3).detach()
        return (err * weight).sum() / n / scale


def _tie_torso(owner: nn.Module, user: nn.Module) -> None:
    """Make `user` run on `owner`'s input layer and LSTM (the same parameters, not copies)."""
    user.inp, user.lstm = owner.inp, owner.lstm
