"""Ingest: what the learner does with each frame that arrives on its PULL socket.

Every frame ends in exactly one place: accepted (its steps counted as
received), or rejected under one reason (its steps, when they can be read,
counted as rejected against their sender). Together with the sender's own
sent/dropped counts that closes the books: sent = received + rejected, and
dropped never left the sender.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

import msgpack

from learner.replay import SequenceReplay, StepBatch
from protocol import Bye, EpisodeEnd, EpisodeStart, Experience, Heartbeat, Hello, Limits, ProtocolError, decode
from protocol.health import ActorHealth

log = logging.getLogger("saclstm.learner")

LEARNER_REASONS = ("unknown_sender", "eval_experience", "wrong_direction", "bounds_mismatch", "out_of_order")


@dataclass
class SenderStats:
    """The learner's books on one actor process."""

    sender: str
    first_seen: float
    last_seen: float
    received: int = 0  # experience steps accepted
    rejected: int = 0  # experience steps rejected
    rejected_msgs: int = 0
    lost_msgs: int = 0  # gaps in seq
    late_msgs: int = 0
    gaps: int = 0  # accepted batches that did not continue their stream (steps missing before them)
    last_seq: int = -1
    sent: int = 0  # from heartbeat / bye
    dropped: int = 0
    round: int = 0
    episodes: int = 0
    bots: set[str] = field(default_factory=set)
    eval_bots: set[str] = field(default_factory=set)
    said_bye: bool = False
    held_s: float = 0.0  # from heartbeat (1.2): seconds flow control held the actor back
    labels_late: int = 0  # from heartbeat / bye (1.6): action targets dropped at the actor, their step gone

    @property
    def settled(self) -> int:
        """Its experience steps this learner has finished with, accepted or rejected (SPEC.md, Flow control)."""
        return self.received + self.rejected

    def health(self, read_up_to: float, dead_after: float) -> ActorHealth:
        """`age_s`: silence as of the learner's last complete read (not the clock), so queued messages count."""
        age = max(0.0, read_up_to - self.last_seen)
        return ActorHealth(
            sender=self.sender, age_s=round(age, 3), alive=not self.said_bye and age < dead_after,
            received=self.received, rejected=self.rejected, sent=self.sent, dropped=self.dropped,
            lost_msgs=self.lost_msgs, late_msgs=self.late_msgs, gaps=self.gaps, round=self.round,
            episodes=self.episodes, bots=tuple(sorted(self.bots)), eval_bots=tuple(sorted(self.eval_bots)),
            bye=self.said_bye, held_s=round(self.held_s, 3), labels_late=self.labels_late)


class RateLimitedLog:
    """The first reject of each reason is logged at once, later ones summarised every `period` seconds."""

    def __init__(self, period: float = 10.0) -> None:
        self.period, self.pending, self.last = period, Counter[str](), 0.0

    def reject(self, reason: str, detail: str, seen_before: bool) -> None:
        if not seen_before:
            log.warning("rejected a frame: %s (%s); further rejects are summarised", reason, detail)
            return
        self.pending[reason] += 1
        now = time.monotonic()
        if now - self.last >= self.period:
            log.warning("rejected frames in the last %.0f s: %s", self.period, dict(self.pending))
            self.pending.clear()
            self.last = now


class Ingest:
    """Decodes, validates, accounts and hands accepted experience to `on_experience`."""

    def __init__(self, limits: Limits, on_hello: Callable[[Hello], str | None],
                 on_experience: Callable[[Experience], None], on_episode_start: Callable[[EpisodeStart], None]) -> None:
        self.limits = limits
        self._on_hello, self._on_experience, self._on_episode_start = on_hello, on_experience, on_episode_start
        self.senders: dict[str, SenderStats] = {}
        self.rejects = Counter[str]()
        self.received_steps = 0
        self.returns: deque[tuple[float, float, bool]] = deque(maxlen=1000)  # (time, return, eval)
        self.episodes_done = 0
        self.lag = deque[int](maxlen=2048)
        self.hellos = 0
        self.order: dict[tuple[str, str], tuple[int, int, bool]] = {}  # stream -> (episode, next t0, ended)
        # When the learner last emptied its queue: every message that arrived before it has been read.
        # Liveness ages actors from here, so a busy learner's unread queue never makes an actor look dead.
        self.read_up_to = time.monotonic()
        self.last_sender: str | None = None  # who sent the frame handled last (None: undecodable, no sender named)
        self._log = RateLimitedLog()

    def handle(self, frame: bytes | memoryview, version: int) -> int:
        """Process one frame; returns the experience steps it added to replay."""
        try:
            msg = decode(frame, self.limits)
        except ProtocolError as exc:
            sender, steps = _blame(frame)
            self.last_sender = sender
            self._reject(exc.reason, exc.detail, sender, steps)
            return 0
        self.last_sender = msg.sender
        stats = self._stats(msg.sender)
        self._track_seq(stats, msg)
        if isinstance(msg, Experience):
            return self._experience(stats, msg, version)
        if isinstance(msg, Hello):
            self._hello(stats, msg)
        elif isinstance(msg, EpisodeStart):
            self._on_episode_start(msg)
        elif isinstance(msg, EpisodeEnd):
            stats.episodes += 1 if msg.bot not in stats.eval_bots else 0
            self.episodes_done += 1
            self.returns.append((time.time(), msg.ret, msg.eval))
        elif isinstance(msg, Heartbeat):
            stats.sent, stats.dropped, stats.round, stats.episodes = msg.sent, msg.dropped, msg.round, msg.episodes
            stats.held_s = msg.held_s if msg.held_s is not None else stats.held_s
            stats.labels_late = msg.labels_late if msg.labels_late is not None else stats.labels_late
        elif isinstance(msg, Bye):
            stats.sent, stats.dropped, stats.said_bye = msg.sent, msg.dropped, True
            stats.labels_late = msg.labels_late if msg.labels_late is not None else stats.labels_late
            log.info("actor %s said bye: sent %d, dropped %d, received %d, rejected %d",
                     msg.sender, msg.sent, msg.dropped, stats.received, stats.rejected)
        else:
            self._reject("wrong_direction", msg.kind, msg.sender, 0)
        return 0

    def settled(self) -> dict[str, int]:
        """`progress.settled`: per sender that trains here (a training bot, or experience sent) and has not said
        bye, its steps accepted or rejected. Eval-only senders never wait on flow control, so they take no
        share of the slack."""
        return {name: s.settled for name, s in self.senders.items()
                if not s.said_bye and (s.bots or s.received or s.rejected)}

    def _experience(self, stats: SenderStats, msg: Experience, version: int) -> int:
        if msg.bot in stats.eval_bots:
            self._reject("eval_experience", msg.bot, msg.sender, msg.steps)
            return 0
        if msg.bot not in stats.bots:
            self._reject("unknown_sender", f"{msg.sender}/{msg.bot} never said hello", msg.sender, msg.steps)
            return 0
        if not self._in_order(stats, msg):
            self._reject("out_of_order", f"{msg.sender}/{msg.bot} episode {msg.episode} t0 {msg.t0} goes back",
                         msg.sender, msg.steps)
            return 0
        self._on_experience(msg)
        steps = len(msg.reward)
        stats.received += steps
        self.received_steps += steps
        self.lag.append(max(0, version - msg.version))
        return steps

    def _in_order(self, stats: SenderStats, msg: Experience) -> bool:
        """SPEC.md, Ordering: a batch that goes back in its stream (an earlier episode, an ended one, or steps
        at or before ones already accepted) is refused; one that skips ahead is taken, and counted as a gap."""
        key = (msg.sender, msg.bot)
        last = self.order.get(key)
        end = msg.t0 + msg.steps
        ended = bool(msg.terminated[-1] or msg.truncated[-1])
        if last is None:
            stats.gaps += msg.t0 > 0
        else:
            episode, next_t, was_ended = last
            if msg.episode < episode or (msg.episode == episode and (was_ended or msg.t0 < next_t)):
                return False
            if msg.episode == episode:
                stats.gaps += msg.t0 > next_t
            else:
                stats.gaps += not was_ended or msg.episode > episode + 1 or msg.t0 > 0
        self.order[key] = (msg.episode, end, ended)
        return True

    def _hello(self, stats: SenderStats, msg: Hello) -> None:
        self.hellos += 1
        if msg.seq == 0:  # a new session of this sender: its episode counters start again
            stats.last_seq = 0
            for key in [k for k in self.order if k[0] == msg.sender]:
                del self.order[key]
        problem = self._on_hello(msg)
        if problem is not None:
            self._reject(problem, f"{msg.sender}/{msg.bot}", msg.sender, 0)
            return
        if msg.bot not in stats.bots and msg.bot not in stats.eval_bots:
            log.info("hello from %s/%s (%s%s)", msg.sender, msg.bot, msg.software or "unknown software",
                     ", eval" if msg.eval else "")
        (stats.eval_bots if msg.eval else stats.bots).add(msg.bot)

    def _stats(self, sender: str) -> SenderStats:
        now = time.monotonic()
        stats = self.senders.get(sender)
        if stats is None:
            stats = self.senders[sender] = SenderStats(sender, now, now)
        stats.last_seen = now
        stats.said_bye = False
        return stats

    @staticmethod
    def _track_seq(stats: SenderStats, msg) -> None:
        if msg.seq > stats.last_seq + 1 and stats.last_seq >= 0:
            stats.lost_msgs += msg.seq - stats.last_seq - 1
        elif msg.seq <= stats.last_seq and not (isinstance(msg, Hello) and msg.seq == 0):
            stats.late_msgs += 1
            return
        stats.last_seq = max(stats.last_seq, msg.seq)

    def _reject(self, reason: str, detail: str, sender: str | None, steps: int) -> None:
        seen = reason in self.rejects
        self.rejects[reason] += 1
        self._log.reject(reason, detail, seen)
        if sender is not None and sender in self.senders:
            self.senders[sender].rejected += steps
            self.senders[sender].rejected_msgs += 1


def _blame(frame: bytes | memoryview) -> tuple[str | None, int]:
    """Best effort: which known sender sent a rejected frame, and how many steps it claimed."""
    try:
        obj = msgpack.unpackb(frame, raw=False, strict_map_key=False)
        sender = obj.get("sender") if isinstance(obj, dict) else None
        if not isinstance(sender, str):
            return None, 0
        reward = obj.get("reward")
        steps = len(reward["data"]) // 4 if isinstance(reward, dict) and isinstance(reward.get("data"), bytes) else 0
        return sender, steps if obj.get("kind") == "experience" else 0
    except Exception:
        return None, 0


def store(replay: SequenceReplay, msg: Experience) -> None:
    """An accepted experience batch into replay: what the learner does with each (its ingest benchmark too).
    Actions stay in the bot's units; replay.sample scales them."""
    state = (msg.h0, msg.c0) if msg.h0 is not None and msg.c0 is not None else None
    # In StepBatch's field order, not by keyword: keywords cost about a microsecond more per batch, on the ingest path.
    replay.add(StepBatch((msg.sender, msg.bot), msg.episode, msg.t0, msg.obs, msg.action, msg.reward, msg.next_obs,
                         bool(msg.terminated[-1]), bool(msg.truncated[-1]), msg.prev_action, msg.prev_reward, state,
                         msg.target))
