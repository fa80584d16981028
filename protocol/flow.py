"""Flow control, both sides of the wire (SPEC.md, "Flow control"): one rule, kept in one place.

The learner keeps the books (`LearnerBooks`): what it received, how much of that it owes training at its
target UTD, and what it trained. It does not owe what it cannot or will not train on: a restarted session's
untrained backlog, steps that came while its replay held nothing to sample, steps past `max_debt`. A resumed
session does not owe the steps that refill its replay to `learning_starts` either (`refill_steps`): as in a
fresh start, training begins once the replay holds them. Every
`progress` carries `received` (the owed part), `grad_steps`, and per sender what this session has *settled*
of that sender's steps (accepted or rejected: a rejected step is as finished as an accepted one).

A rate-limited actor (`may_step`) steps while the steps it took this session that the learner has not
settled, sent or still buffered, fit in its share of the learner's slack. A waiting actor sends what it
has buffered, so everything it took can settle. `Pacer` adds the clock: silence, or books that stand still
while it waits, for `timeout_s` lets it go on.

Why waiting cannot last: when every rate-limited actor waits, each has sent all it took and the learner
settles it, so each waits with nothing unsettled, which the rule allows only while `slack <= 0`, that is
`received >= consumed + tolerance`, with the tolerance at least one gradient step's worth of steps
(`effective_tolerance`). Then the learner owes at least one gradient step, and trains it (a learner that
cannot sample does not count what arrives as owed, so it never gets there); training raises `consumed`
and the actors go on. Everything else (a dead learner, lost frames, a learner of another build) ends at
the timeout. `tests/test_flow_sim.py` checks this on `flow_model.py`, a simulation that calls these
functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from protocol.messages import Progress


def consumed_steps(learning_starts: int, grad_steps: int, utd: float) -> float:
    """Steps a learner has used up: learning_starts, then grad_steps / utd."""
    return learning_starts + grad_steps / max(utd, 1e-9)


def backlog(received: int, learning_starts: int, grad_steps: int, utd: float) -> int:
    """Steps received beyond what training has used up: after a restart the new learner does not owe them
    (nothing would ever pay them), so its `received` leaves them out."""
    return max(0, int(received - consumed_steps(learning_starts, grad_steps, utd)))


def refill_steps(learning_starts: int, replayed: int) -> int:
    """Steps a resumed learner must receive before it trains: what its replay (`replayed` transitions restored)
    lacks of learning_starts. Without them its first batches are drawn from the first chunk or two again and
    again, and the critic fits those few."""
    return max(0, learning_starts - replayed)


def effective_tolerance(tolerance: int, utd: float) -> int:
    """At least the steps that earn one gradient step (ceil(1 / utd)): with less, actors could all wait on a
    learner that owes less than one step and so never trains."""
    return max(tolerance, math.ceil(1.0 / max(utd, 1e-9) - 1e-9))


def slack(progress: Progress, tolerance: int) -> float:
    """Steps the learner may still take in before it is `tolerance` ahead of its target UTD (the 1.2 rule
    raises `tolerance` to `effective_tolerance` first)."""
    return consumed_steps(progress.learning_starts, progress.grad_steps, progress.utd) + tolerance - progress.received


def may_step(progress: Progress, sender: str, sent: int, buffered: int, tolerance: int) -> bool:
    """Whether an actor may take its next step. `sent`: steps it sent since the learner's `session` last changed;
    `buffered`: steps it took and has not sent yet.

    A learner that settles (`progress.settled`, 1.2): the steps taken and not settled must fit in an equal share,
    among the senders it settles for, of the slack or the tolerance, whichever is less; nothing else lets an actor
    step. The tolerance caps a share because `progress` is a little old when it is read: an actor taking a large
    share of an old slack (before learning_starts it is large) while the others' steps were on their way would
    overrun it. A sender the learner does not list yet (its hello is on the way) waits, for the same reason.

    A learner without `settled` (1.1) counts accepted steps only (a rejected one stays in flight for good) and
    owes even what it cannot train on, so its own rule applies: the steps sent and not accepted against the
    share, and with none of them an actor may always step."""
    if progress.settled is None:
        per_sender = progress.per_sender or {}
        in_flight = max(0, sent - per_sender.get(sender, 0))
        return in_flight == 0 or in_flight < slack(progress, tolerance) / max(1, len(per_sender))
    if sender not in progress.settled:
        return False
    unsettled = max(0, sent + buffered - progress.settled[sender])
    tol = effective_tolerance(tolerance, progress.utd)
    return unsettled < min(slack(progress, tol), tol) / max(1, len(progress.settled))


@dataclass
class LearnerBooks:
    """The learner's side: what it received, what of that it owes training, what it trained.

    Invariant once training may begin (`received` past `starts_at`): owed_received - consumed = debt / utd (a
    resume starts it at most one step above 0), so an actor held by the rule always leaves the learner something
    to train. Before it, owed_received - consumed is minus the steps still to come before training, which is
    the slack that lets actors fill the replay."""

    utd: float
    learning_starts: int
    max_debt: float
    received: int = 0  # accepted in total, a resumed checkpoint's count included
    grad_steps: int = 0
    debt: float = 0.0  # gradient steps owed
    backlog: int = 0  # received before a restart and never trained on: not owed by this session
    refill: int = 0  # a resume's steps that refill its replay to learning_starts: not owed, as learning_starts' are
    untrained: float = 0.0  # received past max_debt or while nothing could be sampled: kept, never owed
    starts_at: int = field(init=False)  # `received` past which steps are owed training (learning_starts at first)

    def __post_init__(self) -> None:
        self.starts_at = self.learning_starts

    def resume(self, received: int, grad_steps: int, replayed: int | None = None) -> int:
        """Carry on a checkpoint's counts; its untrained backlog is not owed. `replayed`: the transitions the
        resumed replay holds (None: all it received, which trains at once past learning_starts). Training waits
        until the steps it lacks of learning_starts have come (`refill_steps`), and `owed_received` leaves them
        out as a fresh start leaves out learning_starts, so the rule's slack lets actors send them. Returns the
        untrained backlog."""
        refill = refill_steps(self.learning_starts, received if replayed is None else replayed)
        self.received, self.grad_steps, self.debt = received, grad_steps, 0.0
        self.starts_at = received + refill
        self.backlog = backlog(received, self.learning_starts, grad_steps, self.utd)
        # Clamped, as the backlog is: a checkpoint that trained past its steps (utd changed) owes from starts_at on.
        self.refill = backlog(received + refill, self.learning_starts, grad_steps, self.utd) - self.backlog
        return self.backlog

    @property
    def waiting(self) -> int:
        """Steps still to come before any is owed training (learning_starts, or a resume's refill)."""
        return max(0, self.starts_at - self.received)

    def take(self, added: int, trainable: bool) -> None:
        """`added` steps accepted. Past `starts_at` (learning_starts, or a resume's refill) each is owed `utd`
        gradient steps, unless the learner has nothing it could sample (then none are: actors must not wait on
        training that cannot happen) or the debt would pass max_debt (the excess is not owed)."""
        before, self.received = self.received, self.received + added
        counted = max(0, self.received - max(before, self.starts_at))
        if not trainable:
            self.untrained += counted
            return
        self.debt += self.utd * counted
        if self.debt > self.max_debt:
            self.untrained += (self.debt - self.max_debt) / self.utd
            self.debt = float(self.max_debt)

    def trained(self, steps: int = 1) -> None:
        self.grad_steps += steps
        self.debt -= steps

    def cannot_train(self) -> None:
        """The replay holds nothing to sample (a clear emptied it): what is owed cannot be paid, so it is not
        owed; it counts as untrained."""
        if self.debt > 0:
            self.untrained += self.debt / self.utd
            self.debt = 0.0

    @property
    def owed_received(self) -> int:
        """`progress.received`: steps received less those never owed training."""
        return self.received - self.backlog - self.refill - int(self.untrained)


STEP, WAIT, SILENT, STANDSTILL = "step", "wait", "silent", "standstill"


class Pacer:
    """An actor's rule over time. `decide` says STEP or WAIT by `may_step`, or lets the actor go on when its
    learner has been silent for `timeout_s` (SILENT: none yet since the actor started, or none lately) or its
    books (session, received, grad_steps, this sender's settled count) stood still for `timeout_s` of waiting
    (STANDSTILL: steps lost on the way, a learner that cannot train, one of another build). Once released by a
    standstill the actor stays released until the books move. Pure: the clock is an argument."""

    def __init__(self, timeout_s: float, born: float) -> None:
        self.timeout_s, self.born = timeout_s, born
        self._books: tuple[int, int, int, int] | None = None
        self._moved_at = born
        self._released: tuple[int, int, int, int] | None = None

    def decide(self, now: float, progress: Progress | None, heard_at: float, sender: str, sent: int, buffered: int,
               tolerance: int, waiting_since: float) -> str:
        if progress is None:
            return WAIT if now - self.born < self.timeout_s else SILENT
        if now - heard_at > self.timeout_s:
            return SILENT
        settled = progress.settled if progress.settled is not None else progress.per_sender or {}
        # Books that move for others do not move for a sender the learner does not list (a hello lost or refused).
        books = (progress.session, progress.received, progress.grad_steps, settled[sender]) if sender in settled \
            else (progress.session, -1, -1, -1)
        if books != self._books:
            self._books, self._moved_at, self._released = books, now, None
        if may_step(progress, sender, sent, buffered, tolerance):
            return STEP
        if books == self._released:
            return STANDSTILL
        if now - max(self._moved_at, waiting_since) >= self.timeout_s:
            self._released = books
            return STANDSTILL
        return WAIT
