"""Flow control's one rule (protocol/flow.py), as both sides of the wire use it: the actor's step rule, the
learner's books and the actor's clock. The rule over time, with many actors, is tests/test_flow_sim.py; with
real processes, tests/test_flow_live.py."""

from __future__ import annotations

from protocol import Progress, flow
from protocol.flow import SILENT, STANDSTILL, STEP, WAIT, LearnerBooks, Pacer, may_step, slack


def progress(received: int, grad_steps: int, settled: dict[str, int] | None, utd: float = 1.0,
             per_sender: dict[str, int] | None = None, session: int = 1) -> Progress:
    return Progress("learner", 1, received=received, grad_steps=grad_steps, utd=utd, learning_starts=100, version=1,
                    session=session, per_sender=per_sender if per_sender is not None else settled, settled=settled)


def test_an_actor_steps_while_its_unsettled_steps_fit_its_share_of_the_slack() -> None:
    p = progress(received=300, grad_steps=200, settled={"a": 150, "b": 150})  # slack 100 + 200 + 64 - 300 = 64
    assert slack(p, 64) == 64
    assert may_step(p, "a", 150 + 31, 0, 64)  # 31 unsettled < 64 / 2
    assert not may_step(p, "a", 150 + 32, 0, 64)
    assert not may_step(p, "a", 150 + 20, 12, 64), "steps still buffered count: the learner has not settled them"
    alone = progress(received=300, grad_steps=200, settled={"a": 150})
    assert may_step(alone, "a", 150 + 63, 0, 64), "one sender: the whole slack is its share"


def test_a_share_is_at_most_the_tolerance_even_where_the_slack_is_larger() -> None:
    """Before learning_starts the slack is large; progress is a little old when read, so shares of it taken while
    the others' steps are on their way would overrun it. A share is of min(slack, tolerance)."""
    early = progress(received=0, grad_steps=0, settled={"a": 0, "b": 0})  # slack 164, tolerance 64
    assert may_step(early, "a", 31, 0, 64) and not may_step(early, "a", 32, 0, 64)


def test_a_slower_utd_leaves_less_slack() -> None:
    assert slack(progress(received=300, grad_steps=200, settled={}, utd=4.0), 64) == 100 + 50 + 64 - 300


def test_nothing_in_flight_is_no_pass_to_step_while_the_learner_owes_training() -> None:
    """The exemption 1.1 had: a learner that takes everything in at once but trains slowly never held an actor
    back, so the UTD was whatever the learner's speed allowed (0.23 of 1 for the tank)."""
    owing = progress(received=5000, grad_steps=100, settled={"t": 5000})  # slack 100 + 100 + 64 - 5000 < 0
    assert not may_step(owing, "t", 5000, 0, 64)
    caught_up = progress(received=5000, grad_steps=4880, settled={"t": 5000})  # slack 44
    assert may_step(caught_up, "t", 5000 + 43, 0, 64) and not may_step(caught_up, "t", 5000 + 44, 0, 64)


def test_rejected_steps_settle_so_nothing_stays_in_flight() -> None:
    """SPEC 1.1 counted accepted steps only: after one rejected batch an actor's in_flight never came back to 0.
    The learner's `settled` counts rejected steps too."""
    p = progress(received=200, grad_steps=100, settled={"t": 200 + 8}, per_sender={"t": 200})  # 8 rejected
    assert may_step(p, "t", 208, 0, 0), "all 208 sent are settled, and the slack (100 + 100 + 1 - 200) is open"
    old_learner = progress(received=200, grad_steps=100, settled=None, per_sender={"t": 200})
    assert not may_step(old_learner, "t", 208, 0, 0), "the 1.1 books leave the 8 rejected steps in flight"


def test_a_learner_without_settled_gets_the_1_1_rule() -> None:
    """A 1.1 learner neither settles rejects nor leaves out what it cannot train on: with it an actor keeps the
    exemption, and is no worse off than before."""
    old = progress(received=5000, grad_steps=100, settled=None, per_sender={"t": 64})
    assert may_step(old, "t", 64, 500, 64), "nothing sent in flight: 1.1 lets it step (buffered steps do not count)"
    assert not may_step(old, "t", 80, 0, 64)


def test_a_sender_the_learner_does_not_list_yet_waits() -> None:
    """Shares are of the senders the learner knows; a newcomer taking the whole slack would overrun it."""
    p = progress(received=0, grad_steps=0, settled={"a": 0})
    assert may_step(p, "a", 0, 0, 64)
    assert not may_step(p, "newcomer", 0, 0, 64)


def test_the_tolerance_covers_at_least_one_gradient_step() -> None:
    """At UTD 0.25 a learner trains once per 4 steps: with tolerance 0 actors would wait on a learner owing 3/4."""
    assert flow.effective_tolerance(0, 0.25) == 4 and flow.effective_tolerance(0, 1.0) == 1 and flow.effective_tolerance(0, 4.0) == 1
    assert flow.effective_tolerance(64, 0.25) == 64
    p = progress(received=100 + 12 + 3, grad_steps=3, settled={"t": 115}, utd=0.25)  # owes 3/4 of a step
    assert may_step(p, "t", 115, 0, 0)


def test_the_learners_books() -> None:
    b = LearnerBooks(utd=2.0, learning_starts=100, max_debt=50)
    b.take(90, trainable=False)
    assert b.debt == 0 and b.untrained == 0, "before learning_starts nothing is owed, nor untrained"
    b.take(20, trainable=False)
    assert b.debt == 0 and b.untrained == 10, "past it, steps nothing could be sampled from are not owed"
    b.take(20, trainable=True)
    assert b.debt == 40 and b.owed_received == 120
    b.take(10, trainable=True)
    assert b.debt == 50 and b.untrained == 15, "past max_debt the excess is not owed"
    b.trained(30)
    assert b.owed_received - (b.learning_starts + b.grad_steps / b.utd) == b.debt / b.utd, "the invariant"
    b.cannot_train()
    assert b.debt == 0 and b.untrained == 25
    resumed = LearnerBooks(utd=1.0, learning_starts=100, max_debt=2000)
    assert resumed.resume(received=5000, grad_steps=900) == 4000 == flow.backlog(5000, 100, 900, 1.0)
    assert resumed.owed_received == 1000, "a restarted learner owes nothing of the last session's backlog"


def test_the_pacer_waits_steps_and_lets_go_on_silence() -> None:
    pacer = Pacer(timeout_s=10.0, born=0.0)
    owing = progress(received=5000, grad_steps=100, settled={"t": 5000})
    assert pacer.decide(1.0, None, 0.0, "t", 0, 0, 64, 1.0) == WAIT, "no learner yet: wait for it, a while"
    assert pacer.decide(10.5, None, 0.0, "t", 0, 0, 64, 1.0) == SILENT
    assert pacer.decide(11.0, owing, 11.0, "t", 5000, 0, 64, 11.0) == WAIT
    assert pacer.decide(21.5, owing, 11.0, "t", 5000, 0, 64, 11.0) == SILENT, "heard nothing for 10 s"
    open_ = progress(received=5000, grad_steps=4990, settled={"t": 5000})
    assert pacer.decide(22.0, open_, 22.0, "t", 5000, 0, 64, 22.0) == STEP


def test_the_pacer_lets_go_when_the_books_stand_still_while_it_waits() -> None:
    """Steps lost on the way never settle: the learner keeps publishing the same books and the actor would wait
    for good. After timeout_s of waiting on unmoving books it goes on, until they move."""
    pacer = Pacer(timeout_s=10.0, born=0.0)
    stuck = progress(received=300, grad_steps=200, settled={"t": 250})
    assert pacer.decide(1.0, stuck, 1.0, "t", 250 + 64, 0, 64, 1.0) == WAIT
    assert pacer.decide(10.9, stuck, 10.9, "t", 250 + 64, 0, 64, 1.0) == WAIT
    assert pacer.decide(11.0, stuck, 11.0, "t", 250 + 64, 0, 64, 1.0) == STANDSTILL
    assert pacer.decide(11.5, stuck, 11.5, "t", 250 + 70, 0, 64, 11.5) == STANDSTILL, "released until they move"
    moved = progress(received=300, grad_steps=201, settled={"t": 250})
    assert pacer.decide(12.0, moved, 12.0, "t", 250 + 70, 0, 64, 12.0) == WAIT
    assert pacer.decide(21.0, moved, 21.0, "t", 250 + 70, 0, 64, 20.0) == WAIT, "the clock counts this wait only"
