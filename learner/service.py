"""The learner daemon's loop: drain, then train, then publish.

    while running:
        drained = drain ingest (at most max_drain messages)
        debt += utd_ratio * drained           (once learning_starts steps are in, at a resume too; capped at max_debt)
        take min(debt, max_steps_per_pass) gradient steps, for at most max_pass_s (at least one)
        publish actor weights (versioned, rate-limited) and progress
        write one metrics line if this pass trained; health every second

The bound: the learner reads its queue at least every max_steps_per_pass
gradient steps and every max_pass_s seconds plus one gradient step, and a
read takes at most max_drain messages, so neither a flood nor a long debt
starves the other. Debt beyond max_debt is not kept: those steps stay in
replay but are never owed training, and are counted (`untrained_steps`).
An actor is judged alive from the learner's last complete read of its
queue, not from the clock, so its messages waiting unread keep it alive.

Rejects never stop it; SIGINT/SIGTERM end the loop between two gradient
steps and run the stop hooks (the final save hangs there).
"""

from __future__ import annotations

import logging
import secrets
import signal
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from learner.config import LearnerConfig
from learner.ingest import Ingest, store
from learner.metrics import Rate, UtdWindow, lag_summary
from learner.model import Carried, Model, build_model, first_model, waiting_limits
from learner.networks import actor_to_blob, blob_rev
from learner.observe import Observers
from learner.persistence import Persistence
from learner.replay import SequenceReplay
from learner.sac import SAC, Batch
from learner.state import checkpoint
from learner.threads import apply as apply_threads
from learner.transport import Transport
from protocol import EpisodeStart, Experience, Hello, Progress, Weights, encode
from protocol.codec import NATIVE_DECODER
from protocol.flow import LearnerBooks
from protocol.health import ActorHealth, Health, Lag, ReplayHealth, SaverHealth
from protocol.sockets import TOPIC_PROGRESS, TOPIC_WEIGHTS

log = logging.getLogger("saclstm.learner")


class Learner:
    """The loop above and its books. It composes the wire (`Transport`, learner/transport.py), the model and
    where it starts from (learner/model.py), ingest (learner/ingest.py) and the files (`Persistence`)."""

    def __init__(self, cfg: LearnerConfig) -> None:
        self.cfg = cfg
        self.session = secrets.randbits(53)  # below 2^53: a JavaScript number holds it exactly (SPEC.md, Integers)
        self.tuner = apply_threads(cfg.threads, tune=cfg.device == "cpu")  # a GPU's update time is not the threads'
        torch.manual_seed(cfg.seed)
        np.seterr(invalid="ignore")  # the codec's one-dot finiteness check may see NaN on bad input
        self.transport = Transport(cfg)
        self.endpoints = self.transport.endpoints
        self.observers = Observers(cfg, self.transport.metrics)
        self.ingest = Ingest(waiting_limits(cfg), self._hello, self._experience, self._episode_start)
        self.model: Model | None = None  # until the first hello, when neither a checkpoint nor the config has dims
        self.version = 0
        # Flow control's books (protocol/flow.py): gradient steps, debt, and what was received but is not owed.
        self.books = LearnerBooks(cfg.utd_ratio, cfg.learning_starts, cfg.max_debt)
        self._can_train = False  # see _trainable
        self._dry_commits = 0
        self._utd_window = UtdWindow(cfg.learning_starts)
        self._untrained_logged = 0.0
        self._state_checked = not cfg.stored_state  # see _check_stored_state
        self.passes = 0
        self.stop_hooks: list[Callable[[], None]] = []
        self._stopping = False
        self._blob: bytes | None = None
        self._unpublished = False
        self._last_publish = self._last_progress = self._last_health = self._last_hello_publish = 0.0
        self._progress_due = False
        self._started = time.monotonic()
        self._ingest_rate, self._step_rate, self._health_ingest = Rate(), Rate(), Rate()
        self._last_losses: dict[str, float] = {}
        self._dead: set[str] = set()
        self._episodes_seen = 0
        self._seq = 0
        self.files: Persistence | None = None
        if cfg.weights_path:
            self.files = Persistence(cfg)
            self.stop_hooks.append(self._final_save)
            self.version = self.files.noted_version()  # even a fresh start publishes above what went out before
        model, carried = first_model(cfg, self.files)
        if model is not None:
            self._adopt(model, carried)

    @property
    def grad_steps(self) -> int:
        return self.books.grad_steps

    @property
    def debt(self) -> float:
        return self.books.debt

    @property
    def untrained_steps(self) -> float:
        """Received past max_debt, or while the replay had nothing to sample: in replay, never owed training."""
        return self.books.untrained

    # -- model ---------------------------------------------------------------------------

    @property
    def sac(self) -> SAC | None:
        return None if self.model is None else self.model.sac

    @property
    def replay(self) -> SequenceReplay | None:
        return None if self.model is None else self.model.replay

    def _adopt(self, model: Model, carried: Carried | None) -> None:
        """Train `model` from here on, carrying on a checkpoint's books when there was one (weights versions
        continue upward), and publish its weights."""
        self.model = model
        self.ingest.limits = model.limits
        if carried is not None:
            self.version = max(carried.version, self.version)  # the version note may be ahead of the checkpoint
            self.books.grad_steps = carried.grad_steps
            self.ingest.received_steps = carried.env_steps
            self.ingest.episodes_done = carried.episodes
            self._forgive_backlog()
        self._new_version()

    # -- checkpoints ---------------------------------------------------------------------

    def _forgive_backlog(self) -> None:
        """Steps the last session received but had not yet trained on (its UTD debt) are not owed by this
        one. Rate-limited actors pace themselves on received - grad_steps / utd; left in, that backlog
        would hold them back for good (nothing else pays it), so progress leaves it out. And learning_starts
        holds after a resume as at a first start: training waits until the replay (empty, or what the replay
        file restored) holds that many transitions, the steps that refill it not owed (protocol/flow.py)."""
        replayed = self.replay.transitions if self.replay is not None else 0
        forgiven = self.books.resume(self.ingest.received_steps, self.grad_steps, replayed)
        if forgiven:
            log.info("resume: %d steps received before the restart were not trained on; actors' flow control "
                     "starts from here", forgiven)
        if self.books.waiting:
            log.info("resume: the replay holds %d transitions; training waits for %d more steps (learning_starts "
                     "%d)", replayed, self.books.waiting, self.cfg.learning_starts)

    def _save_parts(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        assert self.sac is not None
        return checkpoint(self.cfg, self.sac, Carried(self.version, self.grad_steps, self.ingest.received_steps,
                                                      self.ingest.episodes_done))

    def _maybe_save(self) -> None:
        if self.files is not None and self.sac is not None and self.grad_steps % self.cfg.save_interval == 0:
            self.files.save(*self._save_parts())
            if self.replay is not None:
                self.files.replay_due(self.replay, self.grad_steps)

    def _final_save(self) -> None:
        if self.files is None:
            return
        trained = self.sac is not None and self.grad_steps > 0
        meta, tensors = self._save_parts() if trained else (None, None)
        self.files.final(meta, tensors, self.replay)

    def _hello(self, msg: Hello) -> str | None:
        """Adopt the first hello's shapes when none were configured; refuse a hello that disagrees."""
        if self.model is None:
            self._adopt(build_model(self.cfg, msg.obs_dim, msg.act_dim, msg.act_low, msg.act_high), None)
        assert self.model is not None
        arch = self.model.sac.arch
        if (msg.obs_dim, msg.act_dim) != (arch.obs_dim, arch.act_dim):
            return "dims_mismatch"
        if not (np.allclose(msg.act_low, self.model.low) and np.allclose(msg.act_high, self.model.high)):
            return "bounds_mismatch"
        now = time.monotonic()
        if now - self._last_hello_publish > 0.05:  # a burst of hellos costs one publish
            self._last_hello_publish = now
            self._publish_weights()
        return None

    def _experience(self, msg: Experience) -> None:
        assert self.replay is not None
        store(self.replay, msg)

    def _episode_start(self, msg: EpisodeStart) -> None:
        if self.replay is not None and self.replay.episode_start((msg.sender, msg.bot), msg.opponent):
            log.info("opponent of %s/%s is now %r: its old experience was cleared", msg.sender, msg.bot, msg.opponent)

    # -- the loop ------------------------------------------------------------------------

    def run(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: self.request_stop())
        log.info("learner up: ingest %s, weights %s, metrics %s", *self.endpoints.values())
        if not NATIVE_DECODER:
            log.warning("native experience decoder not built (no C compiler at install): experience decodes "
                        "in pure Python, slower per message (docs/performance.md); reinstall where a C compiler is available")
        try:
            while not self._stopping:
                self.step()
        finally:
            self.close()

    def step(self) -> None:
        """One pass: drain, train, publish, report."""
        timeout = 0 if self.debt >= 1 else 20 if self._progress_due else 50
        read_at = time.monotonic()
        drained = 0
        if self.transport.wait(timeout):
            drained = self._drain(read_at)
        else:
            self.ingest.read_up_to = time.monotonic()  # nothing came in the wait: read up to its end
        if self._progress_due and time.monotonic() - self._last_progress >= 0.02:
            self._publish_progress()  # what it settled: an actor waiting on its steps goes on while this pass trains
        trained, losses = self._train()
        self._unpublished = self._unpublished or trained > 0
        now = time.monotonic()
        if self._unpublished and now - self._last_publish >= 1.0 / self.cfg.publish_hz:
            self._unpublished = False  # the rate limit may hold back the last steps: they go out next pass
            self._new_version()
        elif self._blob is not None and now - self._last_publish >= self.cfg.republish_s:
            self._publish_weights()
        if trained or (self._progress_due and now - self._last_progress >= 0.02) or now - self._last_progress >= 1.0:
            self._publish_progress()
        if trained:
            self._pass_metrics(drained, trained, losses)
        if self.files is not None:
            self.files.saver.poll()
        if now - self._last_health >= self.cfg.health_s:
            self._last_health = now
            self.observers.health(self.health())
            self._report_episodes()
        self.passes += 1

    def _drain(self, read_at: float) -> int:
        """At most max_drain messages. Liveness is then read up to `read_at` when the queue was found empty, or
        when one sender's frames were read twice: the ingest socket fair-queues its connections, so a second
        frame from one means every connection that had a frame waiting at `read_at` has given one, and a sender
        not read had nothing waiting. Without the second rule a sender flooding the queue would keep a dead one
        beside it alive for good."""
        steps, seen, twice = 0, set[str](), False
        for _ in range(self.cfg.max_drain):
            frame = self.transport.receive()
            if frame is None:
                self.ingest.read_up_to = read_at  # all that had arrived when this read began is read
                break
            self._progress_due = True  # a frame read may settle steps (accepted or rejected): say so soon
            before = self.ingest.received_steps
            self.ingest.handle(frame, self.version)
            added = self.ingest.received_steps - before
            steps += added
            self._add_debt(added)
            sender = self.ingest.last_sender
            twice = twice or sender in seen
            if sender is not None:
                seen.add(sender)
        else:
            if twice:
                self.ingest.read_up_to = max(self.ingest.read_up_to, read_at)
        return steps

    def _add_debt(self, added: int) -> None:
        """UTD x steps drained past learning_starts (protocol.flow.LearnerBooks.take); what is past max_debt, or
        came while the replay had nothing to sample, is counted as untrained and left out of progress, so
        rate-limited actors are not held back by work never owed."""
        before = self.untrained_steps
        self.books.take(added, self._trainable())
        if self.untrained_steps > before and (not self._untrained_logged or self.untrained_steps
                                              - self._untrained_logged >= 10 * self.cfg.max_debt / self.cfg.utd_ratio):
            log.warning("%d steps so far will not be trained on (received past max_debt = %d gradient steps owed, "
                        "or before the replay held a chunk to sample; health: untrained_steps)",
                        self.untrained_steps, self.cfg.max_debt)
            self._untrained_logged = self.untrained_steps

    def _trainable(self) -> bool:
        """Whether the replay has a chunk to sample. Cheap on the ingest path: once it has, it has until a
        training pass finds it empty; until then only a new committed chunk can change the answer."""
        replay = self.replay
        if not self._can_train and replay is not None and replay.committed > self._dry_commits:
            self._can_train = replay.n_live > 0
            self._dry_commits = replay.committed
        return self._can_train

    def _train(self) -> tuple[int, dict[str, float]]:
        model = self.model
        if model is None or self.debt < 1:
            return 0, {}
        if model.replay.n_live == 0:  # a clear emptied it: what is owed cannot be paid (flow: cannot_train)
            self.books.cannot_train()
            self._can_train, self._dry_commits = False, model.replay.committed
            return 0, {}
        if not self._state_checked:
            self._check_stored_state(model.replay)
        totals: dict[str, float] = {}
        n, limit, start = 0, min(int(self.debt), self.cfg.max_steps_per_pass), time.monotonic()
        while n < limit and not self._stopping:  # a stop waits for one gradient step at most
            batch = self._batch(model)
            began = time.perf_counter()
            out = model.sac.update(batch)
            if self.tuner is not None:
                self.tuner.record(time.perf_counter() - began)
            for key, value in out.items():
                totals[key] = totals.get(key, 0.0) + value
            n += 1
            self.books.trained()
            self._maybe_save()
            now = time.monotonic()
            if now - self._last_progress >= (0.02 if self._progress_due else 0.05):
                self._publish_progress()  # actors see what settled and the slack open; a slow pass is not a dead learner
            if now - start >= self.cfg.max_pass_s:
                break  # drain again: the debt carries over
        return n, {k: v / n for k, v in totals.items()} if n else {}

    def _check_stored_state(self, replay: SequenceReplay) -> None:
        """Once, as training begins: stored state that never arrives would otherwise be silently ignored."""
        self._state_checked = True
        if replay.with_state < 0.5:
            log.warning("use_stored_state is on, but %.0f%% of the chunks start from a stored state (health: "
                        "replay.with_state): the weights ask actors for it (state_every %d), and actors that do not "
                        "speak protocol 1.2 never send it", 100 * replay.with_state, replay.stride)

    def _batch(self, model: Model) -> Batch:
        s = model.replay.sample(self.cfg.batch_size, model.scale)
        dev = model.sac.device

        def t(a: np.ndarray | None) -> torch.Tensor | None:
            return None if a is None else torch.from_numpy(a).to(dev, non_blocking=True)

        return Batch(t(s.obs), t(s.action), t(s.prev_action), t(s.prev_reward), t(s.reward), t(s.terminated), t(s.mask),  # type: ignore[arg-type]
                     t(s.h0), t(s.c0), t(s.target), t(s.target_mask))

    # -- publishing ----------------------------------------------------------------------

    def _new_version(self) -> None:
        assert self.sac is not None
        self.version += 1
        if self.files is not None:
            self.files.note_version(self.version)
        params = actor_to_blob(self.sac.actor)
        self._blob = encode(Weights("learner", self._next_seq(), self.version, blob_rev(params),
                                    self.sac.arch.to_wire(), params, self.grad_steps,
                                    self.cfg.chunks.stride if self.cfg.stored_state else None))
        self._publish_weights()

    def _publish_weights(self) -> None:
        if self._blob is None:
            return
        self.observers.ready()
        self._last_publish = time.monotonic()
        self.transport.publish(TOPIC_WEIGHTS, self._blob)

    def _publish_progress(self) -> None:
        self._last_progress, self._progress_due = time.monotonic(), False
        msg = Progress("learner", self._next_seq(), self.books.owed_received, self.grad_steps,
                       self.cfg.utd_ratio, self.cfg.learning_starts, self.version, self.session,
                       {name: s.received for name, s in self.ingest.senders.items()}, self.ingest.settled())
        self.transport.publish(TOPIC_PROGRESS, encode(msg))

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _pass_metrics(self, drained: int, trained: int, losses: dict[str, float]) -> None:
        assert self.replay is not None
        received = self.ingest.received_steps
        past_start = max(0, received - self.cfg.learning_starts)
        self._last_losses = losses
        window, _ = self._utd_window.add(received, self.grad_steps)
        self.observers.pass_line({
            "time": time.time(), "epoch": self.passes, "steps": self.grad_steps, "env_steps": received,
            "buffer_size": self.replay.transitions, "drained": drained, "grad_steps": trained, **losses,
            "utd_target": self.cfg.utd_ratio, "utd_achieved": self.grad_steps / past_start if past_start else 0.0,
            "utd_window": round(window, 4), "ingest_tps": self._ingest_rate.add(received), "version": self.version,
            "untrained_steps": int(self.untrained_steps), "debt": round(self.debt, 1),
            "rejects": dict(self.ingest.rejects), "policy_lag": lag_summary(self.ingest.lag),
            "recent_return": self.recent_return(),
        })

    def _actors(self, now: float) -> tuple[ActorHealth, ...]:
        """Per-actor books; an actor silent past dead_after_s, as of the learner's last complete read of its
        queue, turns dead (logged once, and once when back)."""
        read_at = min(now, self.ingest.read_up_to)
        actors = tuple(s.health(read_at, self.cfg.dead_after_s) for s in self.ingest.senders.values())
        for a in actors:
            if not a.alive and not a.bye and a.sender not in self._dead:
                self._dead.add(a.sender)
                log.warning("actor %s silent for %.0f s: marked dead", a.sender, a.age_s)
            elif a.alive and a.sender in self._dead:
                self._dead.discard(a.sender)
                log.info("actor %s is back", a.sender)
        return actors

    def _report_episodes(self) -> None:
        returns = list(self.ingest.returns)
        fresh = self.ingest.episodes_done - self._episodes_seen
        for _, ret, ev in returns[len(returns) - min(fresh, len(returns)):]:
            self.observers.episode(ret, self.ingest.received_steps, ev)
        self._episodes_seen = self.ingest.episodes_done

    def recent_return(self, window: int = 10) -> float | None:
        train = [r for _, r, ev in self.ingest.returns if not ev][-window:]
        return float(np.mean(train)) if train else None

    def health(self) -> Health:
        """The health record of this second (protocol/health.py); observers send its wire map."""
        now = time.monotonic()
        received = self.ingest.received_steps
        past_start = max(0, received - self.cfg.learning_starts)
        replay = self.replay
        window, window_steps = self._utd_window.add(received, self.grad_steps)
        return Health(
            time=time.time(), uptime_s=now - self._started, version=self.version, session=self.session,
            grad_steps=self.grad_steps, env_steps=received, episodes=self.ingest.episodes_done,
            utd_target=self.cfg.utd_ratio, utd_achieved=self.grad_steps / past_start if past_start else 0.0,
            updates_per_s=self._step_rate.add(self.grad_steps), ingest_tps=self._health_ingest.add(received),
            actors=self._actors(now), losses=dict(self._last_losses),
            unread_s=round(max(0.0, now - self.ingest.read_up_to), 3), debt=round(self.debt, 1),
            untrained_steps=int(self.untrained_steps),
            threads=dict(self.tuner.stats()) if self.tuner is not None else {"threads": torch.get_num_threads()},
            rejects=dict(self.ingest.rejects), policy_lag=Lag(**lag_summary(self.ingest.lag)),
            replay=ReplayHealth(transitions=replay.transitions, capacity=replay.capacity, bytes=replay.nbytes,
                                cleared=replay.dropped_by_clear, with_state=round(replay.with_state, 3)) if replay else ReplayHealth(capacity=self.cfg.capacity),
            recent_return=self.recent_return(),
            saver=SaverHealth(**self.files.saver.stats()) if self.files is not None else None,
            returns=tuple(list(self.ingest.returns)[-20:]), utd_window=round(window, 4), utd_window_steps=window_steps,
        )

    # -- lifecycle -----------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stopping = True

    def close(self) -> None:
        for hook in self.stop_hooks:
            try:
                hook()
            except Exception:
                log.exception("stop hook failed")
        self.observers.health(self.health())
        self.observers.close()
        self.transport.close()
        log.info("learner stopped after %d gradient steps, version %d", self.grad_steps, self.version)
