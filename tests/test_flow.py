"""Flow control's one rule (protocol/flow.py), as both sides of the wire use it."""

from __future__ import annotations

from protocol import Progress
from protocol.flow import backlog, may_step, slack


def progress(received: int, grad_steps: int, per_sender: dict[str, int], utd: float = 1.0) -> Progress:
    return Progress("learner", 1, received=received, grad_steps=grad_steps, utd=utd, learning_starts=100, version=1,
                    session=1, per_sender=per_sender)


def test_an_actor_steps_while_its_steps_in_flight_fit_its_share_of_the_slack() -> None:
    p = progress(received=300, grad_steps=200, per_sender={"a": 150, "b": 150})  # slack 100 + 200 + 128 - 300
    assert slack(p, 128) == 128
    assert may_step(p, "a", 150 + 63, 128)  # 63 in flight < 128 / 2
    assert not may_step(p, "a", 150 + 64, 128)
    alone = progress(received=300, grad_steps=200, per_sender={"a": 150})
    assert may_step(alone, "a", 150 + 127, 128), "one sender: the whole slack is its share"


def test_a_slower_utd_leaves_less_slack() -> None:
    assert slack(progress(received=300, grad_steps=200, per_sender={}, utd=4.0), 128) == 100 + 50 + 128 - 300


def test_nothing_in_flight_may_always_step_even_far_ahead() -> None:
    """A learner whose counters say the actors are far ahead (it received much and trained little) must not
    hold back an actor it has all the steps of: both would wait."""
    behind = progress(received=5000, grad_steps=100, per_sender={"t": 64})  # slack < 0
    assert may_step(behind, "t", 64, 128)
    assert not may_step(behind, "t", 80, 128)


def test_a_restarted_learner_does_not_owe_its_predecessors_backlog() -> None:
    assert backlog(received=5000, learning_starts=100, grad_steps=900, utd=1.0) == 4000
    assert backlog(received=500, learning_starts=100, grad_steps=900, utd=1.0) == 0
