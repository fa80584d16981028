"""The windowed UTD (learner/metrics.py's UtdWindow), the figure the monitor shows as what flow control holds:
while its window fills it reads what training does from its first gradient step, not a learner behind its
target; before that step it is warming up, and the monitor says so."""

from __future__ import annotations

import pytest

from deploy.monitor import utd_window_cell
from learner.metrics import UTD_WINDOW_STEPS, UtdWindow
from protocol.health import Health


def test_while_filling_the_window_reads_from_the_first_training_step() -> None:
    """learning_starts 1,000; the learner's first gradient step comes after step 1,200 (its first pass takes
    a while), then one gradient step per env step: the target, from the start of training."""
    w = UtdWindow(1000)
    assert w.add(900, 0) == (0.0, 0)  # before learning_starts
    for received in (1000, 1100, 1200):
        assert w.add(received, 0) == (0.0, 0), "no gradient step yet: warming up, no figure"
    for received in range(1300, 3300, 100):
        figure, span = w.add(received, received - 1200)
        assert figure == pytest.approx(1.0) and span == received - 1200, (received, figure, span)
    figure, span = w.add(3300, 2100)
    assert figure == pytest.approx(1.0) and span >= UTD_WINDOW_STEPS  # full: it slides as before


def test_once_training_has_begun_a_stall_counts_and_counts_that_go_back_start_again() -> None:
    w = UtdWindow(0, steps=1000)
    w.add(0, 0)
    assert w.add(100, 100) == (1.0, 100)
    figure, span = w.add(300, 100)  # 200 steps with no training: the learner is behind, and it shows
    assert figure == pytest.approx(100 / 300) and span == 300
    assert w.add(50, 5) == (0.0, 0)  # a new run of counts (a restarted learner): warming up again
    assert w.add(150, 105) == (1.0, 100)


def test_a_resumed_learner_starts_its_window_at_its_first_new_gradient_step() -> None:
    w = UtdWindow(100)
    assert w.add(150, 50_000) == (0.0, 0) and w.add(400, 50_000) == (0.0, 0)
    assert w.add(500, 50_100) == (1.0, 100)


def test_the_monitor_says_the_window_is_warming_up_until_it_is_full() -> None:
    assert utd_window_cell(Health(utd_target=1.0)) == "UTD window warming up (no training yet) / 1"
    filling = utd_window_cell(Health(utd_target=1.0, utd_window=0.98, utd_window_steps=350))
    assert filling == "UTD last 350 steps 0.98 / 1 (warming up)"
    full = utd_window_cell(Health(utd_target=1.0, utd_window=0.99, utd_window_steps=2016))
    assert full == "UTD last 2,016 steps 0.99 / 1"
