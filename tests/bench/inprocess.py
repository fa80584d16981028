"""Train with the learner's own parts in one process, acting as the actor daemon acts: no sockets.

What the memory and Tank Royale ladder benchmarks share. `bots` episodes are played side by
side by the newest actor at every step; experience goes to SequenceReplay every `flush` steps
with the actor's LSTM state at the start of the batch (what use_stored_state reads); SAC.update
runs at `utd_ratio` gradient steps per transition once `learning_starts` is reached. Actions
live in [-1, 1] in replay and in the LSTM's input, as on the wire after the learner's rescaling,
and are rescaled to the environment's bounds only to step it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from learner.config import LearnerConfig
from learner.model import sac_config
from learner.networks import Arch
from learner.replay import SequenceReplay, StepBatch
from learner.sac import SAC, Batch
from protocol.scaling import to_policy


@dataclass(frozen=True)
class Run:
    """The learner settings a run uses: LearnerConfig's defaults unless set (--set key=value)."""

    cfg: LearnerConfig
    bots: int = 4  # episodes acted side by side, as an actor's bots
    flush: int = 16  # steps per experience batch (the actor's flush_steps)
    rho: float = 0.0  # exploration noise's step-to-step correlation
    hold: int = 0  # steps a batch waits before it leaves, for labels that come later (the actor's label_wait)

    def sac(self, arch: Arch) -> SAC:
        return SAC(arch, sac_config(self.cfg))


def run_settings(pairs: list[str], hidden: int = 64, **defaults: Any) -> Run:
    """'key=value' pairs over LearnerConfig (hidden = fc = `hidden` unless set); bots, flush, rho and hold too."""
    kinds = {f.name: f.type for f in fields(LearnerConfig)}
    given: dict[str, object] = {"hidden": hidden, "fc": hidden, "capacity": 200_000, **defaults}
    extra: dict[str, float] = {}
    for pair in pairs:
        key, _, raw = pair.partition("=")
        if key in ("bots", "flush", "rho", "hold"):
            extra[key] = float(raw) if key == "rho" else int(raw)
            continue
        if key not in kinds:
            raise SystemExit(f"--set {key}: not a learner setting")
        kind = str(kinds[key])
        given[key] = raw.lower() == "true" if "bool" in kind else float(raw) if "float" in kind else int(raw) \
            if "int" in kind else raw
    return Run(LearnerConfig(**given), **extra)  # type: ignore[arg-type]


def to_batch(s) -> Batch:  # noqa: ANN001 - a replay.SampledBatch
    t = torch.from_numpy
    return Batch(t(s.obs), t(s.action), t(s.prev_action), t(s.prev_reward), t(s.reward), t(s.terminated), t(s.mask),
                 None if s.h0 is None else t(s.h0), None if s.c0 is None else t(s.c0),
                 None if s.target is None else t(s.target), None if s.target_mask is None else t(s.target_mask))


class Bots:
    """`n` episodes of one env acted side by side by the current actor, as the actor daemon does."""

    def __init__(self, env_id: str, kwargs: dict[str, Any], n: int, seed: int, hidden: int, rho: float = 0.0) -> None:
        self.rho = rho  # exploration noise's correlation from one step to the next (0: white, as SAC samples)
        self.envs = [gym.make(env_id, **kwargs) for _ in range(n)]
        space = self.envs[0].action_space
        self.low, self.high = space.low.astype(np.float64), space.high.astype(np.float64)
        self.obs = np.stack([e.reset(seed=seed + i)[0] for i, e in enumerate(self.envs)])
        act_dim = self.low.shape[0]
        self.n, self.hidden = n, hidden
        self.prev_a, self.prev_r = np.zeros((n, act_dim), np.float32), np.zeros(n, np.float32)
        self.h, self.c = torch.zeros(1, n, hidden), torch.zeros(1, n, hidden)
        self.t = np.zeros(n, np.int64)
        self.episode = np.zeros(n, np.int64)
        self.returns: list[float] = []
        self.infos: list[dict[str, Any]] = []  # each ended episode's last info
        self.terminal: list[bool] = []
        self.ended_by: list[int] = []  # which bot each ended episode was
        self.action_sum = np.zeros(act_dim)  # of the actions played, as the env got them
        self.action_steps = 0
        self.learner: dict[str, float] = {}  # the newest update's figures (alpha, entropy, ...)
        self._ret = np.zeros(n)
        self.noise = torch.randn(n, act_dim)
        self.targets: list[dict[int, np.ndarray]] = [{} for _ in range(n)]  # the last step's info["action_targets"]

    def act(self, sac: SAC, deterministic: bool) -> np.ndarray:
        """Actions in [-1, 1] (as replay and the LSTM's input hold them)."""
        parts = [self.obs] + ([self.prev_a] if sac.arch.prev_action else []) + \
            ([self.prev_r[:, None]] if sac.arch.prev_reward else [])  # the inputs the arch reads, as on an actor
        x = np.concatenate(parts, axis=1)
        if sac.arch.memoryless:  # every step from zeros, as the learner trains it (features would not read them)
            self.h, self.c = torch.zeros_like(self.h), torch.zeros_like(self.c)
        with torch.no_grad():
            y, (self.h, self.c) = sac.actor.features(torch.from_numpy(x)[None], (self.h, self.c))
            mean, log_std = sac.actor.heads(y[0])
            if not deterministic:  # each step's noise is N(0, 1) either way; rho > 0 makes it persist
                self.noise = self.rho * self.noise + (1 - self.rho ** 2) ** 0.5 * torch.randn_like(mean)
            u = mean if deterministic else mean + log_std.exp() * self.noise
        return torch.tanh(u).numpy()

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Step every env; returns obs, reward, next_obs, done, terminated (an ended episode is reset)."""
        obs, rew = self.obs.copy(), np.zeros(self.n, np.float32)
        nxt, done, term = np.zeros_like(obs), np.zeros(self.n, bool), np.zeros(self.n, bool)
        scaled = self.low + (action.astype(np.float64) + 1.0) * 0.5 * (self.high - self.low)
        self.action_sum += scaled.sum(0)
        self.action_steps += self.n
        for i, env in enumerate(self.envs):
            o, r, terminated, truncated, info = env.step(scaled[i].astype(np.float32))
            nxt[i], rew[i], done[i], term[i] = o, r, terminated or truncated, terminated
            self.targets[i] = info.get("action_targets") or {}
            self._ret[i] += r
            if done[i]:
                self.infos.append(info)
                self.terminal.append(bool(terminated))
                self.ended_by.append(i)
        self.prev_a, self.prev_r, self.obs, self.t = action.astype(np.float32), rew, nxt.copy(), self.t + 1
        for i in np.flatnonzero(done):
            self.returns.append(float(self._ret[i]))
            self._ret[i], self.t[i], self.episode[i] = 0.0, 0, self.episode[i] + 1
            self.obs[i] = self.envs[i].reset()[0]
            self.prev_a[i], self.prev_r[i] = 0.0, 0.0
            self.h[:, i], self.c[:, i] = 0.0, 0.0
            self.noise[i] = torch.randn(self.noise.shape[1])
        return obs, rew, nxt, done, term


def play(sac: SAC, env_id: str, kwargs: dict[str, Any], episodes: int = 20, seed: int = 10_000) -> Bots:
    """`episodes` deterministic fixed-seed episodes, one per bot (the first each bot ended: short ones are
    not over-counted); the Bots hold their returns and last infos in bot order. The Bots draw their noise from
    torch's generator as training's do; it is put back afterwards, so playing along the way (the ladder's
    snapshots) leaves the run it watches as it would have been."""
    torch_state = torch.get_rng_state()
    try:
        bots = Bots(env_id, kwargs, episodes, seed, sac.arch.hidden)
        while len(set(bots.ended_by)) < episodes:
            bots.step(bots.act(sac, deterministic=True))
    finally:
        torch.set_rng_state(torch_state)
    first = {b: k for k, b in reversed(list(enumerate(bots.ended_by)))}
    order = [first[b] for b in range(episodes)]
    bots.returns = [bots.returns[k] for k in order]
    bots.infos = [bots.infos[k] for k in order]
    bots.terminal = [bots.terminal[k] for k in order]
    return bots


def evaluate(sac: SAC, env_id: str, kwargs: dict[str, Any], episodes: int = 20, seed: int = 10_000) -> float:
    """Mean deterministic return over `episodes` fixed-seed episodes."""
    return float(np.mean(play(sac, env_id, kwargs, episodes, seed).returns[:episodes]))


def make_sac(env_id: str, kwargs: dict[str, Any], run: Run) -> SAC:
    cfg = run.cfg
    probe = gym.make(env_id, **kwargs)
    obs_dim, act_dim = probe.observation_space.shape[0], probe.action_space.shape[0]
    arch = Arch(obs_dim, act_dim, cfg.hidden, cfg.fc, cfg.prev_action, cfg.prev_reward,
                act_low=(-1.0,) * act_dim, act_high=(1.0,) * act_dim, memoryless=cfg.memoryless)
    return run.sac(arch)


def new_replay(run: Run, sac: SAC, seed: int = 0) -> SequenceReplay:
    cfg = run.cfg
    return SequenceReplay(cfg.capacity, cfg.chunks.seq_len, cfg.chunks.overlap, sac.arch.obs_dim, sac.arch.act_dim,
                          state_dim=cfg.hidden if cfg.stored_state else 0, seed=seed, targets=cfg.action_target_weight > 0)


def _step_batch(bot: int, episode: int, steps: list[tuple], labels: dict[tuple[int, int], np.ndarray],
                terminated: bool, truncated: bool, act_dim: int, bounds: tuple[np.ndarray, np.ndarray]) -> StepBatch:
    """Steps (t, obs, action, reward, next_obs, state before) of one bot as one experience batch, with the state,
    previous action and reward before its first step, and the targets labelled for its steps so far (in [-1, 1],
    as its actions; the labels it takes are forgotten)."""
    h0, c0, prev_r, prev_a = steps[0][5]
    ts = [int(s[0]) for s in steps]
    target = None
    if any((episode, t) in labels for t in ts):
        low, high = bounds
        rows = [labels.pop((episode, t), None) for t in ts]
        target = np.stack([np.full(act_dim, np.nan, np.float32) if r is None else to_policy(r, low, high) for r in rows])
    return StepBatch(key=("bench", f"bot{bot}"), episode=episode, t0=ts[0], obs=np.stack([s[1] for s in steps]),
                     action=np.stack([s[2] for s in steps]), reward=np.array([s[3] for s in steps], np.float32),
                     next_obs=np.stack([s[4] for s in steps]), terminated=terminated, truncated=truncated,
                     prev_action=prev_a, prev_reward=prev_r, state=(h0, c0), target=target)


def train(env_id: str, kwargs: dict[str, Any], steps: int, run: Run, seed: int = 0, log_every: int = 0,
          on_update: Callable[[SAC, int], None] | None = None, on_steps: Callable[[SAC, int, Bots], None] | None = None,
          sac: SAC | None = None, replay: SequenceReplay | None = None) -> SAC:
    """Learn for `steps` env steps (all bots together); returns the learner. From scratch, or going on with `sac`;
    into a new replay (training waits for learning_starts), or going on with `replay` (it does not wait).
    on_update(sac, updates) after every gradient step, on_steps(sac, env_steps, bots) every log_every steps."""
    torch.manual_seed(seed)
    cfg = run.cfg
    sac = sac or make_sac(env_id, kwargs, run)
    act_dim = sac.arch.act_dim
    warmup = cfg.learning_starts if replay is None or replay.transitions == 0 else 0
    replay = replay if replay is not None else new_replay(run, sac, seed)
    bots = Bots(env_id, kwargs, run.bots, seed, cfg.hidden, run.rho)
    pending: list[list[tuple]] = [[] for _ in range(run.bots)]
    labels: list[dict[tuple[int, int], np.ndarray]] = [{} for _ in range(run.bots)]  # (episode, t) -> target
    done_steps, updates, owed, t0 = 0, 0, 0.0, time.time()
    while done_steps < steps:
        ts = bots.t.copy()
        episodes = bots.episode.copy()
        before = [(bots.h[0, i].clone().numpy(), bots.c[0, i].clone().numpy(), float(bots.prev_r[i]), bots.prev_a[i].copy())
                  for i in range(run.bots)]  # what a batch that starts at this step brings: stored state, what came before
        action = bots.act(sac, deterministic=False)
        obs, rew, nxt, done, term = bots.step(action)
        for i in range(run.bots):
            for t, target in bots.targets[i].items():
                labels[i][(int(episodes[i]), t)] = target
            pending[i].append((ts[i], obs[i], action[i], rew[i], nxt[i], before[i]))
            if done[i] or len(pending[i]) >= run.flush + run.hold:
                cut = len(pending[i]) if done[i] else run.flush
                batch, pending[i] = pending[i][:cut], pending[i][cut:]
                replay.add(_step_batch(i, int(episodes[i]), batch, labels[i], bool(done[i] and term[i]),
                                       bool(done[i] and not term[i]), act_dim, bounds=(bots.low, bots.high)))
            if done[i]:
                labels[i].clear()
        done_steps += run.bots
        if log_every and done_steps % log_every < run.bots:
            if on_steps is not None:
                on_steps(sac, done_steps, bots)
            else:
                recent = np.mean(bots.returns[-20:]) if bots.returns else float("nan")
                print(f"  {done_steps} steps, {updates} updates, recent return {recent:.2f}, "
                      f"{time.time() - t0:.0f} s", flush=True)
        if done_steps < warmup:
            continue
        owed += run.bots * cfg.utd_ratio
        while owed >= 1:
            bots.learner = sac.update(to_batch(replay.sample(cfg.batch_size)))
            owed -= 1
            updates += 1
            if on_update is not None:
                on_update(sac, updates)
    return sac
