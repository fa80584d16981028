"""The actor daemon: K bots over a Gymnasium environment, one process.

    for each round:
        wait for the learner if rate-limited and too far ahead (sending what is buffered meanwhile)
        for each bot: act, env.step, record; on episode end reset
        housekeeping (heartbeat, hello, restart detection)

SIGTERM/SIGINT end the loop after the current round; close() flushes every
bot and says bye with the final counts.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Any

import gymnasium as gym
import numpy as np

import actor.envs  # noqa: F401 - registers saclstm's environments for --env (the memory tasks, TankRoyale-v0)
from actor.client import BotClient
from actor.config import ActorConfig
from actor.link import ActorLink, BotSpec

log = logging.getLogger("saclstm.actor")


def parse_kwargs(text: str) -> dict[str, Any]:
    """'g=9.81,render_mode=None' -> {'g': 9.81, 'render_mode': None}."""
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, raw = part.partition("=")
        value: object = raw
        for conv in (int, float):
            try:
                value = conv(raw)
                break
            except ValueError:
                pass
        out[key.strip()] = None if raw == "None" else value
    return out


class MaskedEnv:
    """An environment whose observation keeps only some indices (Pendulum-V keeps index 2)."""

    def __init__(self, env: gym.Env, mask: tuple[int, ...]) -> None:
        box = env.observation_space
        if not isinstance(box, gym.spaces.Box) or len(box.shape) != 1:
            raise ValueError(f"only flat Box observations are supported, got {box}")
        if not isinstance(env.action_space, gym.spaces.Box):
            raise ValueError(f"SAC needs a continuous (Box) action space, got {env.action_space}")
        if mask and max(mask) >= box.shape[0]:
            raise ValueError(f"obs_mask {mask} indexes past the observation's {box.shape[0]} entries")
        self.env, self.idx = env, np.array(mask or range(box.shape[0]), np.int64)
        self.obs_low = box.low[self.idx].astype(np.float32)
        self.obs_high = box.high[self.idx].astype(np.float32)
        self.act_low = env.action_space.low.astype(np.float32)
        self.act_high = env.action_space.high.astype(np.float32)

    def reset(self, seed: int | None = None) -> np.ndarray:
        obs, _ = self.env.reset(seed=seed)
        return np.asarray(obs, np.float32)[self.idx]

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[int, np.ndarray] | None]:
        """The env's step, and the action targets its info names (`action_targets`: {episode step: target},
        labels known after their step), if any."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        targets = info.get("action_targets") if isinstance(info, dict) else None
        return np.asarray(obs, np.float32)[self.idx], float(reward), bool(terminated), bool(truncated), targets


def make_env(cfg: ActorConfig) -> MaskedEnv:
    try:
        env = gym.make(cfg.env, **parse_kwargs(cfg.env_kwargs))
    except gym.error.Error as exc:
        raise ValueError(f"env {cfg.env!r}: {exc}") from None
    return MaskedEnv(env, cfg.obs_mask)


class ActorDaemon:
    """Runs the bots until stopped or a step/episode budget is spent."""

    def __init__(self, cfg: ActorConfig) -> None:
        self.cfg = cfg
        self.envs = [make_env(cfg) for _ in range(cfg.bots)]
        self.link = ActorLink(cfg, realtime_default=False)
        e = self.envs[0]
        self.clients = [
            BotClient(self.link, BotSpec(f"bot{i}", e.obs_low, e.obs_high, e.act_low, e.act_high), cfg.seed + i)
            for i in range(cfg.bots)
        ]
        self.stop_event = threading.Event()
        self.steps = 0

    def run(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: self.stop_event.set())
        if self.cfg.eval_mode:
            mode = f"eval ({'sampled' if self.cfg.eval_sample else 'deterministic'}, sends no experience)"
        else:
            mode = "realtime" if self.link.realtime else "rate-limited"
        log.info("actor %s: %d bot(s) on %s, obs %s, mode %s", self.link.sender, len(self.envs), self.cfg.env,
                 [int(i) for i in self.envs[0].idx], mode)
        if self.cfg.eval_mode and not self._await_weights(30.0):
            self.close()
            raise SystemExit(1)
        obs = [env.reset(seed=self.cfg.seed + i) for i, env in enumerate(self.envs)]
        for client in self.clients:
            client.new_episode()
        try:
            while not self.stop_event.is_set() and not self._budget_spent():
                self.link.wait_for_learner(self.stop_event, self._buffered, self._flush)
                if self.stop_event.is_set():
                    break
                for i, (env, client) in enumerate(zip(self.envs, self.clients)):
                    obs[i] = self._step(env, client, obs[i])
                self.link.rounds += 1
        finally:
            self.close()

    def _buffered(self) -> int:
        """Steps the bots took and have not sent: flow control counts them as the learner's to settle."""
        return sum(c.buffered for c in self.clients)

    def _flush(self) -> None:
        """Send what the bots buffered: a waiting actor holds nothing back that the learner could train on."""
        for client in self.clients:
            client.flush()

    def _await_weights(self, timeout: float) -> bool:
        """An eval with random actions would score nothing we trained: wait for real weights."""
        deadline = time.monotonic() + timeout
        while self.link.weights.latest() is None and time.monotonic() < deadline and not self.stop_event.is_set():
            self.link.housekeeping()
            time.sleep(0.01)
        if self.link.weights.latest() is None:
            log.error("eval mode: no weights from the learner within %.0f s; nothing to evaluate", timeout)
            return False
        return True

    def _step(self, env: MaskedEnv, client: BotClient, obs: np.ndarray) -> np.ndarray:
        action = client.act(obs)
        next_obs, reward, terminated, truncated, targets = env.step(action)
        client.step(obs, action, reward, next_obs, terminated, truncated, targets)
        self.steps += 1
        if terminated or truncated:
            if self.cfg.eval_mode:
                log.info("eval episode %d of %s: return %.1f", client.episode, client.spec.name, client.returns[-1])
            client.new_episode()
            return env.reset()
        return next_obs

    def _budget_spent(self) -> bool:
        episodes = sum(len(c.returns) for c in self.clients)
        return (self.cfg.max_steps > 0 and self.steps >= self.cfg.max_steps) or (
            self.cfg.max_episodes > 0 and episodes >= self.cfg.max_episodes)

    def close(self) -> None:
        for client in self.clients:
            client.flush()
        self.link.close()
        returns = [r for c in self.clients for r in c.returns]
        log.info("actor %s stopped: %d steps, %d episodes, sent %d, dropped %d%s", self.link.sender, self.steps,
                 len(returns), self.link.sent, self.link.dropped,
                 f", mean return {np.mean(returns):.1f}" if returns else "")
