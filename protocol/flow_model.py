"""A discrete-event model of flow control: one learner, N actors, on a simulated clock.

It runs the real rule: the learner keeps `protocol.flow.LearnerBooks`, each actor decides with
`protocol.flow.Pacer` (and so `may_step`). Around them it models what the rule's promises depend on,
as the daemons do it (learner/service.py, actor/link.py, actor/daemon.py, actor/client.py):

- the learner: a pass drains everything that arrived, then trains min(debt, 32) gradient steps (at most
  0.25 s), publishing `progress` once it read frames (at most every 20 ms, in a pass too), every 50 ms of
  a pass and at least every second; it waits for frames when it owes less than one step. Its replay has something to
  sample once a stream holds `seq_len` steps or an episode ended. It checkpoints every `save_every`
  gradient steps; killed, it loses what it had not read; restarted, it resumes from its last checkpoint
  in a new session, with an empty replay, and meets every actor afresh (experience before a new hello is
  rejected as `unknown_sender`, and settles so).
- an actor: K bots stepping in rounds; before each round a rate-limited one asks its Pacer, and while it
  waits it sends what it buffered. Bots flush at episode steps that are multiples of `flush_steps`, at an
  episode's end and after 250 ms. It says hello at the start and again in each new session, and bye when
  it leaves. Realtime actors never wait; eval actors send no experience and never wait; a "1.1" actor
  follows the 1.1 rule (it reads no `settled`).
- the wire: every message takes `latency_s`; what is sent while the learner is down reaches the next one.

`simulate` returns the learner's counts over time and every wait of every actor, so tests can check the
promises (tests/test_flow_sim.py): the ratio holds, no actor waits on a learner that is up and idle, a
waiting actor goes on after `flow_timeout_s` of silence.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import heapq
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from protocol.flow import STEP, WAIT, LearnerBooks, Pacer
from protocol.messages import Progress

PASS_STEPS, PASS_S, IDLE_WAIT_S, DUE_WAIT_S, PUBLISH_EVERY_S, PASS_PUBLISH_S = 32, 0.25, 0.05, 0.02, 1.0, 0.05
FLUSH_S, POLL_S = 0.25, 0.05


@dataclass(frozen=True)
class Setting:
    """One run's world. Times are simulated seconds."""

    seed: int = 0
    actors: int = 2
    bots: int = 1
    utd: float = 1.0
    learning_starts: int = 1000
    seq_len: int = 32
    flush_steps: int = 32
    tolerance: int = 64
    env_step_s: float = 1e-4  # one bot step
    grad_s: float = 0.01  # one gradient step
    episode_len: int = 200
    max_debt: int = 2000
    latency_s: float = 5e-4
    reject_every: int = 0  # every n-th experience batch is rejected (0: none)
    kills: tuple[float, ...] = ()  # the learner is killed at these times ...
    down_s: float = 0.5  # ... and restarted this long after (a kill at or after `death_at` is for good)
    death_at: float | None = None
    joins: tuple[float, ...] = ()  # per actor: when it starts (default 0)
    leaves: tuple[float | None, ...] = ()  # per actor: when it stops (default never)
    modes: tuple[str, ...] = ()  # per actor: "rate-limited" (default), "1.1" (the 1.1 rule), "realtime" or "eval"
    flow_timeout_s: float = 10.0
    save_every: int = 50
    steps: int = 6000  # stop once the learner has received this many in all
    time_limit_s: float = 600.0

    def mode(self, i: int) -> str:
        return self.modes[i] if i < len(self.modes) else "rate-limited"


@dataclass
class Wait:
    actor: str
    start: float
    end: float | None = None
    how: str = ""  # STEP, SILENT, STANDSTILL, or "stop" (the actor left while waiting)


@dataclass
class Outcome:
    """What happened: the learner's (time, received, grad_steps, session, trainable) after every read and pass,
    every wait of every rate-limited actor, the learner's up intervals, and each actor's steps."""

    setting: Setting
    samples: list[tuple[float, int, int, int, bool]] = field(default_factory=list)
    waits: list[Wait] = field(default_factory=list)
    up: list[list[float]] = field(default_factory=list)  # [start, end] of each session (end inf while up)
    steps: dict[str, int] = field(default_factory=dict)
    end_time: float = 0.0

    def up_during(self, start: float, end: float) -> bool:
        return any(a <= start and end <= b for a, b in self.up)

    def grad_steps_at(self, t: float) -> int:
        """Gradient steps by time t (the last sample at or before it)."""
        i = bisect.bisect_right(self.samples, t, key=lambda p: p[0])
        return self.samples[i - 1][2] if i else 0


@dataclass
class _Bot:
    t: int  # step in the episode
    buffered: int = 0
    since: float = 0.0  # when the buffer began


@dataclass
class _Message:
    kind: str  # experience, hello, bye
    sender: str
    bot: int = 0
    steps: int = 0
    ended: bool = False
    eval: bool = False


class _Sim:
    def __init__(self, s: Setting) -> None:
        self.s, self.now, self.rng = s, 0.0, random.Random(s.seed)
        self.events: list[tuple[float, int, Callable[[], None]]] = []
        self.seq = 0
        self.out = Outcome(s)
        self.learner = _Learner(self)
        self.actors = [_Actor(self, i) for i in range(s.actors)]

    def at(self, t: float, fn: Callable[[], None]) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, fn))

    def run(self) -> Outcome:
        self.learner.start()
        for a in self.actors:
            self.at(a.join, a.begin)
            if a.leave is not None:
                self.at(a.leave, a.end)
        for t in self.s.kills:
            self.at(t, self.learner.kill)
        if self.s.death_at is not None:
            self.at(self.s.death_at, self.learner.kill)
        limit = self.s.time_limit_s
        if self.s.death_at is not None:  # then the actors carry on alone: long enough to see them released
            limit = min(limit, self.s.death_at + self.s.flow_timeout_s + 0.5)
        while self.events:
            t, _, fn = heapq.heappop(self.events)
            if t > limit or self.learner.books.received >= self.s.steps:
                break
            self.now = t
            fn()
        self.out.end_time = self.now
        for a in self.actors:
            if a.wait is not None:
                a.wait.end = self.now
            self.out.steps[a.name] = a.taken
        for span in self.out.up:
            span[1] = min(span[1], self.now)
        return self.out


class _Learner:
    def __init__(self, sim: _Sim) -> None:
        self.sim, s = sim, sim.s
        self.books = LearnerBooks(s.utd, s.learning_starts, s.max_debt)
        self.checkpoint = (0, 0)  # (received, grad_steps)
        self.up, self.session, self.generation = False, 0, 0
        self.queue: list[_Message] = []
        self.pending: list[_Message] = []  # sent while it was down: they wait in the senders' sockets
        self.waiting = False  # for frames (idle), until `generation`'s timer
        self.last_progress, self.due = -1.0, False
        self.reset_session()

    def reset_session(self) -> None:
        self.stats: dict[str, list[int]] = {}  # sender -> [received, rejected]
        self.bots: dict[str, set[int]] = {}
        self.eval_only: set[str] = set()
        self.bye: set[str] = set()
        self.streams: dict[tuple[str, int], int] = {}
        self.trainable, self.batches = False, 0

    def start(self) -> None:
        sim = self.sim
        self.up, self.session = True, self.session + 1
        self.reset_session()
        if self.session > 1:
            self.books = LearnerBooks(sim.s.utd, sim.s.learning_starts, sim.s.max_debt)
            self.books.resume(*self.checkpoint, replayed=0)  # its replay starts empty: learning_starts again
        sim.out.up.append([sim.now, float("inf")])
        self.queue, self.pending = self.pending, []
        self.publish()
        self.schedule(sim.now)

    def kill(self) -> None:
        sim = self.sim
        if not self.up:
            return
        self.up, self.queue, self.generation = False, [], self.generation + 1
        sim.out.up[-1][1] = sim.now
        death = sim.s.death_at
        if death is None or sim.now < death:
            sim.at(sim.now + sim.s.down_s, self.start)

    def schedule(self, t: float) -> None:
        self.generation += 1
        gen = self.generation
        self.sim.at(t, lambda: self.step() if gen == self.generation and self.up else None)

    def arrive(self, msg: _Message) -> None:
        if not self.up:
            return
        self.queue.append(msg)
        if self.waiting:
            self.waiting = False
            self.schedule(self.sim.now)

    def step(self) -> None:
        """One pass, as Learner.step: read, say what settled, train, publish, wait."""
        sim, s = self.sim, self.sim.s
        self.waiting = False
        if self.queue:
            for msg in self.queue:
                self.handle(msg)
            self.queue = []
            self.due = True
            self.sample()
        if self.due and sim.now - self.last_progress >= 0.02:
            self.publish()
        t = sim.now
        if self.books.debt >= 1 and self.trainable:
            n, t0 = min(int(self.books.debt), PASS_STEPS), t
            for _ in range(n):
                t += s.grad_s
                self.books.trained()
                if self.books.grad_steps % s.save_every == 0:
                    self.checkpoint = (self.books.received, self.books.grad_steps)
                if t - self.last_progress >= (0.02 if self.due else PASS_PUBLISH_S):
                    self.publish(at=t)
                if t - t0 >= PASS_S:
                    break
            self.publish(at=t)
            self.sim.at(t, self.sample)
            self.schedule(t)
            return
        if sim.now - self.last_progress >= PUBLISH_EVERY_S:
            self.publish()
        self.waiting = True
        self.schedule(t + (DUE_WAIT_S if self.due else IDLE_WAIT_S))

    def handle(self, msg: _Message) -> None:
        s = self.sim.s
        stats = self.stats.setdefault(msg.sender, [0, 0])
        self.bye.discard(msg.sender)
        if msg.kind == "hello":
            if msg.eval:
                self.eval_only.add(msg.sender)
            else:
                self.bots.setdefault(msg.sender, set()).add(msg.bot)
        elif msg.kind == "bye":
            self.bye.add(msg.sender)
        elif msg.bot not in self.bots.get(msg.sender, set()):
            stats[1] += msg.steps  # unknown_sender: rejected, and settled
        else:
            self.batches += 1
            if s.reject_every and self.batches % s.reject_every == 0:
                stats[1] += msg.steps
                return
            stats[0] += msg.steps
            key = (msg.sender, msg.bot)
            self.streams[key] = self.streams.get(key, 0) + msg.steps
            self.trainable = self.trainable or msg.ended or self.streams[key] >= s.seq_len
            self.books.take(msg.steps, self.trainable)

    def settled(self) -> dict[str, int]:
        return {name: r + j for name, (r, j) in self.stats.items()
                if name not in self.bye and (name in self.bots or r + j)}

    def publish(self, at: float | None = None) -> None:
        sim = self.sim
        t = sim.now if at is None else at
        self.last_progress, self.due = t, False
        p = Progress("learner", 0, self.books.owed_received, self.books.grad_steps, sim.s.utd,
                     sim.s.learning_starts, 0, self.session,
                     {n: r for n, (r, _) in self.stats.items()}, self.settled())
        for a in sim.actors:
            sim.at(t + sim.s.latency_s, functools.partial(self.deliver, a, p))

    def deliver(self, actor: _Actor, p: Progress) -> None:
        if self.up and self.session == p.session:
            actor.hear(p)

    def sample(self) -> None:
        self.sim.out.samples.append((self.sim.now, self.books.received, self.books.grad_steps, self.session,
                                     self.trainable))


class _Actor:
    def __init__(self, sim: _Sim, i: int) -> None:
        s = sim.s
        self.sim, self.name, self.mode = sim, f"a{i}", s.mode(i)
        self.join = s.joins[i] if i < len(s.joins) else 0.0
        self.leave = s.leaves[i] if i < len(s.leaves) else None
        self.active = False
        self.bots = [_Bot(sim.rng.randrange(s.episode_len)) for _ in range(s.bots)]  # episodes do not line up
        self.sent = self.base = self.taken = 0
        self.session: int | None = None
        self.progress: Progress | None = None
        self.heard_at = 0.0
        self.pacer = Pacer(s.flow_timeout_s, self.join)
        self.wait: Wait | None = None
        self.waking = False  # a round is scheduled for the next progress
        self.generation = 0
        self.down_queue: list[_Message] = []

    def begin(self) -> None:
        self.active = True
        self.pacer = Pacer(self.sim.s.flow_timeout_s, self.sim.now)
        self.say_hello()
        if self.mode != "eval":  # an eval actor sends no experience: nothing of it is flow control's
            self.round()

    def end(self) -> None:
        if not self.active:
            return
        self.flush_all()
        self.send(_Message("bye", self.name))
        self.active = False
        if self.wait is not None:
            self.wait.end, self.wait.how, self.wait = self.sim.now, "stop", None

    def say_hello(self) -> None:
        for b in range(self.sim.s.bots):
            self.send(_Message("hello", self.name, b, eval=self.mode == "eval"))

    def send(self, msg: _Message) -> None:
        sim = self.sim
        if msg.kind == "experience":
            self.sent += msg.steps
        sim.at(sim.now + sim.s.latency_s, lambda: self.deliver(msg))

    def deliver(self, msg: _Message) -> None:
        learner = self.sim.learner
        if learner.up:
            learner.arrive(msg)
        else:
            learner.pending.append(msg)

    def hear(self, p: Progress) -> None:
        if self.mode == "1.1":  # a bot written to the 1.1 text reads no `settled`
            p = dataclasses.replace(p, settled=None)
        self.progress, self.heard_at = p, self.sim.now
        if self.waking and self.active:
            self.waking = False
            self.schedule(self.sim.now)

    def schedule(self, t: float) -> None:
        self.generation += 1
        gen = self.generation
        self.sim.at(t, lambda: self.round() if gen == self.generation and self.active else None)

    def housekeeping(self) -> None:
        p = self.progress
        if p is not None and p.session != self.session:
            self.base = self.sent  # this learner has seen none of what went to the last one
            if self.session is not None:
                self.say_hello()
            self.session = p.session

    def round(self) -> None:
        sim, s = self.sim, self.sim.s
        self.housekeeping()
        if self.mode in ("rate-limited", "1.1"):
            start = self.wait.start if self.wait is not None else sim.now
            decision = self.pacer.decide(sim.now, self.progress, self.heard_at, self.name, self.sent - self.base,
                                         self.buffered(), s.tolerance, start)
            if decision == WAIT:
                if self.wait is None:
                    self.wait = Wait(self.name, sim.now)
                    sim.out.waits.append(self.wait)
                if self.mode != "1.1":  # the 1.1 text did not ask a waiting bot to send what it buffered
                    self.flush_all()
                self.waking = True
                self.schedule(sim.now + POLL_S)
                return
            if self.wait is not None:
                self.wait.end, self.wait.how, self.wait = sim.now, decision, None
            elif decision != STEP and self.progress is not None:
                sim.out.waits.append(Wait(self.name, sim.now, sim.now, decision))  # released without waiting
        for b, bot in enumerate(self.bots):
            self.step_bot(b, bot)
        self.schedule(sim.now + s.bots * s.env_step_s)

    def buffered(self) -> int:
        return sum(bot.buffered for bot in self.bots)

    def step_bot(self, b: int, bot: _Bot) -> None:
        s, now = self.sim.s, self.sim.now
        bot.t += 1
        self.taken += 1
        if bot.buffered == 0:
            bot.since = now
        bot.buffered += 1
        ended = bot.t >= s.episode_len
        if ended or bot.t % s.flush_steps == 0 or now - bot.since >= FLUSH_S:
            self.flush(b, bot, ended)
        if ended:
            bot.t = 0

    def flush(self, b: int, bot: _Bot, ended: bool = False) -> None:
        if bot.buffered:
            self.send(_Message("experience", self.name, b, bot.buffered, ended))
            bot.buffered = 0

    def flush_all(self) -> None:
        for b, bot in enumerate(self.bots):
            self.flush(b, bot)


def simulate(setting: Setting) -> Outcome:
    """Run one world to `steps` received (or its time limit); see the module's docstring."""
    return _Sim(setting).run()


def window_ratios(out: Outcome, span: int = 2000) -> list[float]:
    """Achieved UTD / target over every stretch of `span` env steps (from each sample to the first one `span`
    or more steps later) within one session, from the first sample where it could train past learning_starts."""
    s = out.setting
    points = [p for p in out.samples if p[1] >= s.learning_starts and p[4]]
    ratios, j = [], 0
    for i, (_, r0, g0, session, _) in enumerate(points):
        j = max(j, i)
        while j < len(points) and points[j][1] - r0 < span:
            j += 1
        if j == len(points):
            break
        _, r1, g1, session1, _ = points[j]
        if session1 == session:
            ratios.append((g1 - g0) / (r1 - r0) / s.utd)
    return ratios


def stretch_ratios(points: Iterable[tuple[int, int]], span: int = 2000) -> list[float]:
    """Achieved UTD (grad steps per env step) over every stretch of `span` env steps, from each (env_steps,
    grad_steps) point to the first one `span` or more steps later: what a real run's health records show, for
    the benchmark and the live test to judge as the model's runs are (window_ratios)."""
    pts = sorted(set(points))
    ratios, j = [], 0
    for r0, g0 in pts:
        while j < len(pts) and pts[j][0] - r0 < span:
            j += 1
        if j == len(pts):
            break
        r1, g1 = pts[j]
        ratios.append((g1 - g0) / (r1 - r0))
    return ratios


def deadlocks(out: Outcome, idle_s: float = 1.0) -> list[Wait]:
    """Waits that are a deadlock: the learner up all along, and either the wait ended only by the timeout
    (SILENT or STANDSTILL) or it lasted more than `idle_s` without a gradient step."""
    bad = []
    for w in out.waits:
        end = out.end_time if w.end is None else w.end
        if not out.up_during(w.start, end):
            continue
        if w.how in ("silent", "standstill") or (
                end - w.start > idle_s and out.grad_steps_at(end) == out.grad_steps_at(w.start)):
            bad.append(w)
    return bad


def random_world(rng: random.Random, seed: int) -> Setting:
    """A world drawn over the settings the rule must survive (the bench's sweep; the tests draw theirs with
    hypothesis): 1-8 actors of 1-4 bots, fast and slow environments, UTD 0.25-4, learning_starts 8-2000,
    seq_len 4-288, flush 1-64, tolerance 0-512, rejected batches, and now and then restarts, a learner that
    dies, actors joining and leaving, realtime, eval and 1.1 actors."""
    actors = rng.choice([1, 2, 3, 4, 8])
    fast = rng.random() < 0.6
    kw: dict = dict(
        seed=seed, actors=actors, bots=rng.choice([1, 1, 2, 4]), utd=rng.choice([0.25, 0.5, 1.0, 2.0, 4.0]),
        learning_starts=rng.choice([8, 64, 500, 1000, 2000]), seq_len=rng.choice([4, 16, 32, 64, 288]),
        flush_steps=rng.choice([1, 7, 16, 32, 64]), tolerance=rng.choice([0, 1, 16, 64, 64, 128, 512]),
        env_step_s=rng.choice([1e-5, 1e-4, 5e-4] if fast else [5e-3, 2e-2]), grad_s=rng.choice([0.004, 0.01, 0.025]),
        episode_len=rng.choice([10, 200, 1000, 100_000]), max_debt=rng.choice([2000, 2000, 100]),
        latency_s=rng.choice([1e-4, 5e-4, 5e-3]), reject_every=rng.choice([0, 0, 0, 3, 10]))
    fault = rng.random()
    if fault < 0.2:
        kw["kills"] = tuple(sorted(rng.uniform(0.5, 30.0) for _ in range(rng.randint(1, 3))))
        kw["down_s"] = rng.choice([0.1, 1.0, 5.0])
    elif fault < 0.3:
        kw["death_at"] = rng.uniform(0.2, 20.0)
    elif fault < 0.45:
        kw["joins"] = tuple(rng.choice([0.0, 0.0, rng.uniform(0, 10)]) for _ in range(actors))
        kw["leaves"] = tuple(rng.choice([None, None, rng.uniform(5, 60)]) for _ in range(actors))
    elif fault < 0.6:
        kw["modes"] = tuple(rng.choice(["rate-limited", "rate-limited", "1.1", "realtime", "eval"])
                            for _ in range(actors))
        if "1.1" in kw["modes"]:
            kw["reject_every"] = 0  # the 1.1 books leave rejected steps in flight: 1.1's own limit
    start = max(kw["learning_starts"], actors * kw["bots"] * kw["seq_len"])
    kw["steps"] = start + 2500
    rate_limited = max(1, sum(m != "eval" for m in kw.get("modes", ("rate-limited",) * actors)))
    kw["time_limit_s"] = kw["steps"] * (kw["utd"] * kw["grad_s"] + kw["env_step_s"] / rate_limited) * 3 + 60
    return Setting(**kw)
