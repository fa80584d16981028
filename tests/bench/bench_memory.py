"""How far back saclstm remembers: the memory tasks (actor/envs/memory.py), trained in-process.

Each task is learned from scratch with the learner's own parts (SequenceReplay,
SAC.update) and a loop that acts like the actor daemon: `bots` episodes side by
side, the newest weights at every step, experience sent every `flush` steps
with the actor's LSTM state at the start of the batch (what use_stored_state
reads), and UTD 1 (one gradient step per transition once learning_starts is
reached). No sockets: what is measured is learning, not transport.

Score: the deterministic eval return (20 episodes, fixed seeds) as a fraction
of the way from the memoryless return (0) to perfect (1), printed beside both.
Targets: recall_k16 and recall_k32 >= 0.9, recall_k64 >= 0.7 within 100k steps.
recall_k64 plays 128-step episodes (64 would leave nothing to answer); its
memoryless return is -32. Settings are LearnerConfig's defaults with hidden =
fc = 64 (deploy/demo.toml's widths; hidden 128 for recall_k64, which must hold
64 values at once) and each task's memory_horizon (the span it
needs, up to 64, as the README tells a user to set it), then --set over them; mapped to
the update's settings as the learner maps them (learner.model.sac_config).

    python tests/bench/bench_memory.py --tasks recall_k4,recall_k16 --steps 40000
    python tests/bench/bench_memory.py --tasks recall_k16 --set recall_weight=0   # without the recall loss

Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, fields
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

torch.set_num_threads(1)  # a shared machine: one core per run

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actor.envs.memory import DELAYED_RECALL, FIRST_RECALL, fraction  # noqa: E402
from learner.config import LearnerConfig  # noqa: E402
from learner.model import sac_config  # noqa: E402
from learner.networks import Arch  # noqa: E402
from learner.replay import SequenceReplay, StepBatch  # noqa: E402
from learner.sac import SAC, Batch  # noqa: E402

# name -> (env id, kwargs, default step budget, the task's own settings: memory_horizon = the span it needs,
# up to 64, as the README tells a user to set it; --set goes over them)
TASKS: dict[str, tuple[str, dict[str, int], int, list[str]]] = {
    "recall_k4": (DELAYED_RECALL, {"k": 4}, 40_000, ["memory_horizon=4"]),
    "recall_k16": (DELAYED_RECALL, {"k": 16}, 100_000, ["memory_horizon=16"]),
    "recall_k32": (DELAYED_RECALL, {"k": 32}, 100_000, ["memory_horizon=32"]),
    # a delay line of 64 values: hidden 64 holds 32 (k = 32 learned), not 64; hidden 128 learned it (0.91 at 100k).
    "recall_k64": (DELAYED_RECALL, {"k": 64, "length": 128}, 100_000, ["memory_horizon=64", "hidden=128"]),
    "first_64": (FIRST_RECALL, {"length": 64}, 100_000, ["memory_horizon=63"]),
    # 255 would make 271-step chunks (8x the update); stored state carries the one held value across 80-step ones.
    "first_256": (FIRST_RECALL, {"length": 256}, 100_000, ["memory_horizon=64"]),
}


@dataclass(frozen=True)
class Run:
    """The learner settings a run uses: LearnerConfig's defaults unless set (--set key=value)."""

    cfg: LearnerConfig
    bots: int = 4  # episodes acted side by side, as an actor's bots
    flush: int = 16  # steps per experience batch (the actor's flush_steps)

    def sac(self, arch: Arch) -> SAC:
        return SAC(arch, sac_config(self.cfg))


def run_settings(pairs: list[str], hidden: int = 64) -> Run:
    """'key=value' pairs over LearnerConfig (hidden = fc = 64 unless set, as deploy/demo.toml); bots/flush too."""
    kinds = {f.name: f.type for f in fields(LearnerConfig)}
    given: dict[str, object] = {"hidden": hidden, "fc": hidden, "capacity": 200_000}
    extra: dict[str, int] = {}
    for pair in pairs:
        key, _, raw = pair.partition("=")
        if key in ("bots", "flush"):
            extra[key] = int(raw)
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
                 None if s.h0 is None else t(s.h0), None if s.c0 is None else t(s.c0))


class Bots:
    """`n` episodes of one env acted side by side by the current actor, as the actor daemon does."""

    def __init__(self, env_id: str, kwargs: dict[str, int], n: int, seed: int, hidden: int) -> None:
        self.envs = [gym.make(env_id, **kwargs) for _ in range(n)]
        self.obs = np.stack([e.reset(seed=seed + i)[0] for i, e in enumerate(self.envs)])
        self.n, self.hidden = n, hidden
        self.prev_a, self.prev_r = np.zeros((n, 1), np.float32), np.zeros(n, np.float32)
        self.h, self.c = torch.zeros(1, n, hidden), torch.zeros(1, n, hidden)
        self.t = np.zeros(n, np.int64)
        self.episode = np.zeros(n, np.int64)
        self.returns: list[float] = []
        self._ret = np.zeros(n)

    def act(self, sac: SAC, deterministic: bool) -> np.ndarray:
        x = np.concatenate([self.obs, self.prev_a, self.prev_r[:, None]], axis=1)
        with torch.no_grad():
            y, (self.h, self.c) = sac.actor.features(torch.from_numpy(x)[None], (self.h, self.c))
            mean, log_std = sac.actor.heads(y[0])
            u = mean if deterministic else mean + log_std.exp() * torch.randn_like(mean)
        return torch.tanh(u).numpy()

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Step every env; returns obs, reward, next_obs, done (an ended episode is reset, its state zeroed)."""
        obs, rew = self.obs.copy(), np.zeros(self.n, np.float32)
        nxt, done = np.zeros_like(obs), np.zeros(self.n, bool)
        for i, env in enumerate(self.envs):
            o, r, term, trunc, _ = env.step(action[i])
            nxt[i], rew[i], done[i] = o, r, term or trunc
            self._ret[i] += r
        self.prev_a, self.prev_r, self.obs, self.t = action.astype(np.float32), rew, nxt.copy(), self.t + 1
        for i in np.flatnonzero(done):
            self.returns.append(float(self._ret[i]))
            self._ret[i], self.t[i], self.episode[i] = 0.0, 0, self.episode[i] + 1
            self.obs[i] = self.envs[i].reset()[0]
            self.prev_a[i], self.prev_r[i] = 0.0, 0.0
            self.h[:, i], self.c[:, i] = 0.0, 0.0
        return obs, rew, nxt, done


def evaluate(sac: SAC, env_id: str, kwargs: dict[str, int], episodes: int = 20, seed: int = 10_000) -> float:
    """Mean deterministic return over `episodes` fixed-seed episodes."""
    bots = Bots(env_id, kwargs, episodes, seed, sac.arch.hidden)
    while len(bots.returns) < episodes:
        bots.step(bots.act(sac, deterministic=True))
    return float(np.mean(bots.returns[:episodes]))


def train(env_id: str, kwargs: dict[str, int], steps: int, run: Run, seed: int = 0,
          log_every: int = 0, on_update=None) -> SAC:  # noqa: ANN001 - on_update(sac, n) for measurements
    """Learn from scratch for `steps` env steps (all bots together); returns the learner."""
    torch.manual_seed(seed)
    cfg = run.cfg
    probe = gym.make(env_id, **kwargs)
    obs_dim = probe.observation_space.shape[0]
    arch = Arch(obs_dim, 1, cfg.hidden, cfg.fc, cfg.prev_action, cfg.prev_reward, act_low=(-1.0,), act_high=(1.0,))
    sac = run.sac(arch)
    replay = SequenceReplay(cfg.capacity, cfg.seq_len, cfg.overlap, obs_dim, 1,
                            state_dim=cfg.hidden if cfg.use_stored_state else 0, seed=seed)
    bots = Bots(env_id, kwargs, run.bots, seed, cfg.hidden)
    pending: list[list[tuple]] = [[] for _ in range(run.bots)]
    start_state: list[tuple] = [(bots.h[0, i].clone().numpy(), bots.c[0, i].clone().numpy(), 0.0, np.zeros(1))
                                for i in range(run.bots)]
    done_steps, updates, owed, t0 = 0, 0, 0.0, time.time()
    while done_steps < steps:
        ts = bots.t.copy()
        episodes = bots.episode.copy()
        action = bots.act(sac, deterministic=False)
        obs, rew, nxt, done = bots.step(action)
        for i in range(run.bots):
            pending[i].append((ts[i], obs[i], action[i], rew[i], nxt[i]))
            if done[i] or len(pending[i]) >= run.flush:
                steps_i = pending[i]
                h0, c0, pr, pa = start_state[i]
                replay.add(StepBatch(key=("bench", f"bot{i}"), episode=int(episodes[i]), t0=int(steps_i[0][0]),
                                     obs=np.stack([s[1] for s in steps_i]), action=np.stack([s[2] for s in steps_i]),
                                     reward=np.array([s[3] for s in steps_i], np.float32),
                                     next_obs=np.stack([s[4] for s in steps_i]), terminated=False, truncated=bool(done[i]),
                                     prev_action=pa, prev_reward=pr, state=(h0, c0)))
                pending[i] = []
                start_state[i] = (bots.h[0, i].clone().numpy(), bots.c[0, i].clone().numpy(),
                                  float(bots.prev_r[i]), bots.prev_a[i].copy())
        done_steps += run.bots
        if done_steps < cfg.learning_starts:
            continue
        owed += run.bots * cfg.utd_ratio
        while owed >= 1:
            sac.update(to_batch(replay.sample(cfg.batch_size)))
            owed -= 1
            updates += 1
            if on_update is not None:
                on_update(sac, updates)
        if log_every and done_steps % log_every < run.bots:
            recent = np.mean(bots.returns[-20:]) if bots.returns else float("nan")
            print(f"  {done_steps} steps, {updates} updates, recent return {recent:.2f}, "
                  f"{time.time() - t0:.0f} s", flush=True)
    return sac


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default=",".join(TASKS), help=f"comma-separated subset of {', '.join(TASKS)}")
    ap.add_argument("--steps", type=int, default=0, help="env steps per task (0 = each task's budget)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a learner setting (LearnerConfig key), or bots/flush; repeatable")
    ap.add_argument("--log-every", type=int, default=5000)
    args = ap.parse_args()
    out: dict[str, object] = {}
    for name in args.tasks.split(","):
        if name not in TASKS:
            raise SystemExit(f"--tasks: unknown task {name!r} (known: {', '.join(TASKS)})")
        env_id, kwargs, budget, own = TASKS[name]
        run = run_settings(own + args.set)
        out[f"{name}_settings"] = own + args.set
        steps = args.steps or budget
        start = time.time()
        sac = train(env_id, kwargs, steps, run, args.seed, args.log_every)
        ret = evaluate(sac, env_id, kwargs)
        memoryless = gym.make(env_id, **kwargs).unwrapped.memoryless_return
        out[name] = round(fraction(ret, memoryless), 3)
        out[f"{name}_return"], out[f"{name}_memoryless"], out[f"{name}_perfect"] = round(ret, 2), memoryless, 0.0
        out[f"{name}_steps"] = steps
        print(f"{name}: return {ret:.2f} (memoryless {memoryless}, perfect 0) -> fraction {out[name]:.3f} "
              f"after {steps} steps, {time.time() - start:.0f} s", flush=True)
    print("targets: recall_k16 >= 0.9, recall_k32 >= 0.9, recall_k64 >= 0.7 within 100k steps each")
    print(json.dumps(out | {"settings": args.set, "seed": args.seed}))


if __name__ == "__main__":
    main()
