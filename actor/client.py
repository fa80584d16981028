"""The client a bot embeds: act every tick, record the step, mark episodes.

    client = BotClient.connect(ActorConfig(...), "tank", obs_low, obs_high, act_low, act_high)
    client.new_episode(opponent="SpinBot")
    while playing:
        action = client.act(obs)                       # never waits on the network
        obs2, reward, terminated, truncated = game(action)
        client.step(obs, action, reward, obs2, terminated, truncated)
        obs = obs2
    client.close()

Weights are swapped in between ticks (at the start of `act`), never during
inference. Experience leaves in batches: at every episode step that is a
multiple of `flush_steps` (or of the learner's `state_every`, where its chunks
start), after `flush_ms`, at the episode's end and when the weights version
changes (so each batch names the one version that acted). A full send queue
drops the batch and counts it; nothing here blocks.

Action targets (protocol 1.5 `target`): a label for an action that is only
known later (where a shot should have gone, once its bullet passed) is given
with `label(t, target)`, t the episode step it belongs to. With `label_wait`
> 0 a due batch waits that many further steps before it leaves, so labels
that come within them go with it; a label for a step already sent is counted
in `labels_late` and dropped.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from actor.config import ActorConfig
from actor.link import ActorLink, BotSpec
from actor.policy import LocalPolicy, State
from protocol import EpisodeEnd, EpisodeStart, Experience
from protocol.scaling import to_env, to_policy

log = logging.getLogger("saclstm.actor")


class BotClient:
    """One bot's view of the service: its own LSTM state, episode and experience buffer."""

    def __init__(self, link: ActorLink, spec: BotSpec, seed: int = 0) -> None:
        self.link, self.spec, self.cfg = link, spec, link.cfg
        self.eval_mode = self.cfg.eval_mode
        self.obs_dim, self.act_dim = len(spec.obs_low), len(spec.act_low)
        self.policy: LocalPolicy | None = None
        self.state: State | None = None
        self.prev_unit = np.zeros(self.act_dim, np.float32)  # previous action in [-1, 1]
        self.prev_reward = 0.0
        self.episode = -1
        self.t = 0
        self.ret = 0.0
        self.returns: list[float] = []
        self.skipped = 0  # steps the game played without our command (skip()), never sent
        self._rng = np.random.default_rng(seed)
        self._buf: list[tuple[np.ndarray, np.ndarray, float, np.ndarray]] = []
        self._buf_start = 0.0
        self._batch_t0 = 0
        self._batch_prev = np.zeros(self.act_dim, np.float32)
        self._batch_prev_reward = 0.0
        self._batch_state: State | None = None
        self._pre_state: State | None = None  # the LSTM state before the last act()
        self._batch_version = 0
        self._waiting: list[tuple[int, int, Experience]] = []  # due batches held for labels: (t0, end, message)
        self._targets: dict[int, np.ndarray] = {}  # episode step -> its action target, until its batch leaves
        self._sent_to = 0  # episode steps below this have left (or were skipped): a label for them is late
        self.labels_late = 0  # labels that came after their step's batch had left: dropped
        link.register(spec, self.eval_mode)

    @classmethod
    def connect(cls, cfg: ActorConfig, name: str, obs_low, obs_high, act_low, act_high) -> BotClient:
        """A client with a link of its own: the usual way for a bot with its own game loop."""
        f = np.float32
        spec = BotSpec(name, np.asarray(obs_low, f), np.asarray(obs_high, f), np.asarray(act_low, f), np.asarray(act_high, f))
        return cls(ActorLink(cfg, realtime_default=True), spec, cfg.seed)

    @property
    def version(self) -> int:
        return self.policy.version if self.policy is not None else 0

    # -- the tick --------------------------------------------------------------------------

    def act(self, obs: np.ndarray) -> np.ndarray:
        """The action for `obs` in environment units: from the newest weights, or uniform random before any."""
        self.link.housekeeping()
        newest = self.link.weights.latest()
        if newest is not self.policy and newest is not None:
            self._swap(newest)
        if self.policy is None:
            return self._rng.uniform(self.spec.act_low, self.spec.act_high).astype(np.float32)
        if self.state is None:
            self.state = self.policy.initial_state()
        self._pre_state = self.state
        sampled_eval = self.eval_mode and self.cfg.eval_sample  # its noise from this bot's seed: repeatable
        action, self.state = self.policy.act(np.asarray(obs, np.float32), self.prev_unit, self.prev_reward, self.state,
                                             self.eval_mode and not sampled_eval, self._rng if sampled_eval else None)
        return action

    def step(self, obs, action, reward: float, next_obs, terminated: bool, truncated: bool,
             targets: dict[int, np.ndarray] | None = None) -> None:
        """Record one transition; flushes when a batch is due. Ends the episode when it ended. `targets`: labels
        that came with this step, by episode step (this one or earlier: see `label`), given before the episode's
        last batch leaves."""
        if self.episode < 0:
            self.new_episode()
        action = np.asarray(action, np.float32)
        self.ret += float(reward)
        self.t += 1
        if not self.eval_mode:
            if not self._buf:
                self._buf_start = time.monotonic()
                self._batch_t0, self._batch_prev = self.t - 1, self.prev_unit.copy()
                self._batch_prev_reward = self.prev_reward
                self._batch_version = self.version
                every = self.policy.state_every if self.policy is not None else 0
                self._batch_state = self._pre_state if every else None
            self._buf.append((np.asarray(obs, np.float32), action, float(reward), np.asarray(next_obs, np.float32)))
            for t, target in (targets or {}).items():
                self.label(t, target)
            if terminated or truncated:
                self._flush(terminated, truncated)
            # At episode steps that are multiples of flush_steps (and of the learner's state_every), not every
            # flush_steps from the last flush: after an early flush (new weights, flush_ms) batches start on the
            # same steps again, so the learner's chunks, strided from the episode's start, keep starting where a
            # batch and its stored state began.
            elif self._due() or (time.monotonic() - self._buf_start) * 1000 >= self.cfg.flush_ms:
                self._flush(False, False)
            if self._waiting:
                self._release(terminated or truncated)
        low, high = self.spec.act_low, self.spec.act_high
        self.prev_unit = to_policy(action, low, high)
        self.prev_reward = float(reward)
        if terminated or truncated:
            self.end_episode()

    def label(self, t: int, target) -> bool:  # noqa: ANN001 - anything np.asarray takes
        """The action target of episode step `t` (environment units, one per action part, NaN for a part with
        none), known after the step: it goes with the step's batch if that has not left. False (counted in
        `labels_late`) when it has; a later label for the same step replaces an earlier one."""
        target = np.asarray(target, np.float32)
        if target.shape != (self.act_dim,) or np.isinf(target).any():
            raise ValueError(f"label: a target is {self.act_dim} floats, finite or NaN (none), got {target!r}")
        if self.eval_mode:
            return False
        if t < self._sent_to or t >= self.t:
            late = int(t < self._sent_to)
            self.labels_late += late
            self.link.labels_late += late
            return False
        self._targets[int(t)] = target
        return True

    def skip(self, reward: float) -> None:
        """A step that happened, but not as recorded (the game played an older command): it counts in the
        episode's length and return, and is never sent; the next batch starts after the gap."""
        if self.episode < 0:
            self.new_episode()
        if self._buf:
            self._flush(False, False)
        self.t += 1
        self.ret += float(reward)
        self.prev_reward = float(reward)
        self.skipped += 1
        if not self._waiting:
            self._sent_to = self.t  # a skipped step is never sent: no label can reach it

    def new_episode(self, opponent: str | int | None = None) -> None:
        """Start an episode: fresh LSTM state; the opponent key goes to the learner (not in eval mode)."""
        if self._buf:
            self._flush(False, False)
        self._release(True)
        self.episode += 1
        self.t, self.ret, self._sent_to = 0, 0.0, 0
        self._targets.clear()
        self.prev_unit = np.zeros(self.act_dim, np.float32)
        self.prev_reward = 0.0
        self.state = self.policy.initial_state() if self.policy is not None else None
        if not self.eval_mode:
            key = "" if opponent is None else str(opponent)
            self.link.send(lambda s, q: EpisodeStart(s, q, self.spec.name, self.episode, key))

    def end_episode(self) -> None:
        """Close the episode: flush what is left and report the return. Safe to call twice."""
        if self.episode < 0 or self.t == 0 and not self._buf:
            return
        if self._buf:
            self._flush(False, True)
        self._release(True)
        ret, length, episode = self.ret, self.t, self.episode
        self.returns.append(ret)
        self.link.episodes += 1
        self.link.send(lambda s, q: EpisodeEnd(s, q, self.spec.name, episode, ret, length, self.eval_mode))
        self.t, self.ret = 0, 0.0

    @property
    def buffered(self) -> int:
        """Steps recorded but not yet sent (they leave at the next flush)."""
        return len(self._buf)

    def flush(self) -> None:
        """Send what is buffered now, as a batch that does not end the episode, and what waits for labels."""
        if self._buf:
            self._flush(False, False)
        self._release(True)

    def close(self) -> None:
        """Flush and close the link (when this client owns it)."""
        self.flush()
        if self.labels_late:
            log.warning("bot %s: %d action target(s) came after their step had been sent and were dropped; raise "
                        "label_wait to keep them", self.spec.name, self.labels_late)
        self.link.close()

    # -- internals -------------------------------------------------------------------------

    def _swap(self, newest: LocalPolicy) -> None:
        """Between ticks: flush the old version's steps, keep the LSTM state if the shapes agree."""
        if self._buf:
            self._flush(False, False)
        old = self.policy
        self.policy = newest
        if old is None or old.arch.hidden != newest.arch.hidden:
            self.state = newest.initial_state()

    def _due(self) -> bool:
        every = self.policy.state_every if self.policy is not None else 0
        return self.t % self.cfg.flush_steps == 0 or (every > 0 and self.t % every == 0)

    def _flush(self, terminated: bool, truncated: bool) -> None:
        buf, self._buf = self._buf, []
        n = len(buf)
        term, trunc = np.zeros(n, bool), np.zeros(n, bool)
        term[-1], trunc[-1] = terminated, truncated and not terminated
        obs = np.stack([b[0] for b in buf])
        action = np.stack([b[1] for b in buf])
        reward = np.array([b[2] for b in buf], np.float32)
        next_obs = np.stack([b[3] for b in buf])
        low, high = self.spec.act_low, self.spec.act_high
        prev_env = to_env(self._batch_prev, low, high) if self._batch_t0 > 0 else None
        h0, c0 = self._batch_state if self._batch_state is not None else (None, None)
        msg = Experience("", 0, self.spec.name, self.episode, self._batch_t0, self._batch_version, obs, action, reward,
                         next_obs, term, trunc, prev_action=prev_env,
                         prev_reward=self._batch_prev_reward if self._batch_t0 > 0 else None, h0=h0, c0=c0)
        self._waiting.append((self._batch_t0, self._batch_t0 + n, msg))
        self._release(terminated or truncated)

    def _release(self, everything: bool) -> None:
        """Send the waiting batches whose wait is over (all of them when `everything`), in order, each with the
        targets labelled for its steps."""
        while self._waiting and (everything or self._waiting[0][1] + self.cfg.label_wait <= self.t):
            t0, end, msg = self._waiting.pop(0)
            rows = [self._targets.pop(t, None) for t in range(t0, end)]
            if any(r is not None for r in rows):
                nan = np.full(self.act_dim, np.nan, np.float32)
                msg.target = np.stack([nan if r is None else r for r in rows])
            self._sent_to = end
            self.link.ensure_hello(self.spec.name)
            self.link.send(lambda s, q, m=msg: _stamped(m, s, q), steps=end - t0)


def _stamped(msg: Experience, sender: str, seq: int) -> Experience:
    """The message with the sender and sequence number the link gives it as it leaves."""
    msg.sender, msg.seq = sender, seq
    return msg
