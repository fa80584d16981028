"""Flow control, both sides of the wire (SPEC.md, `progress`): one rule, kept in one place.

The learner publishes what it has taken in (`received`, less what it will never train on) and how far its
training has got; a rate-limited actor steps while its own steps not yet received fit in its share of
the learner's slack, the steps the learner may still take in at its target UTD plus a tolerance.
"""

from __future__ import annotations

from protocol.messages import Progress


def consumed_steps(learning_starts: int, grad_steps: int, utd: float) -> float:
    """Steps a learner has used up: learning_starts, then grad_steps / utd."""
    return learning_starts + grad_steps / max(utd, 1e-9)


def backlog(received: int, learning_starts: int, grad_steps: int, utd: float) -> int:
    """Steps received beyond what training has used up: after a restart the new learner does not owe them
    (nothing would ever pay them), so its `received` leaves them out."""
    return max(0, int(received - consumed_steps(learning_starts, grad_steps, utd)))


def slack(progress: Progress, tolerance: int) -> float:
    """Steps the learner may still take in before it is `tolerance` ahead of its target UTD."""
    return consumed_steps(progress.learning_starts, progress.grad_steps, progress.utd) + tolerance - progress.received


def may_step(progress: Progress, sender: str, sent_this_session: int, tolerance: int) -> bool:
    """An actor's share of the slack is an equal part among the senders the learner knows. With nothing in
    flight it may always step: the learner holds all it sent, so waiting could only deadlock (a learner
    that cannot yet form a batch would wait on the very steps the actor holds back)."""
    per_sender = progress.per_sender or {}
    in_flight = max(0, sent_this_session - per_sender.get(sender, 0))
    return in_flight == 0 or in_flight < slack(progress, tolerance) / max(1, len(per_sender))
