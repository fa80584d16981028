"""Flow control over time, on the model (protocol/flow_model.py: one learner, N actors, a simulated clock,
the real rule): it holds the ratio, it never waits on a learner that is up and idle, and a silent learner
lets its actors go on. Property tests over random worlds, and the grid the issue names.

The ratio: achieved UTD / target over every stretch of 2,000 env steps, from where the learner could train
past learning_starts, within one session. It holds within 5% where the books leave room for it: the
tolerance at most the default (64: the stretch from learning_starts sees the debt rise from 0 to
utd x tolerance) and max_debt above what the actors may run ahead (else the excess is not owed, by design).
"""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from protocol.flow_model import Outcome, Setting, deadlocks, simulate, window_ratios

SPAN = 2000
# SACLSTM_FLOW_EXAMPLES=2000 explores further (random, not the suite's fixed draw): a few minutes.
EXAMPLES = int(os.environ.get("SACLSTM_FLOW_EXAMPLES", "0"))


def _time_limit(s: Setting) -> float:
    """Enough simulated time for the learner to take `steps` in at its pace, or the actors at theirs."""
    rate_limited = max(1, sum(s.mode(i) != "eval" for i in range(s.actors)))
    return s.steps * (s.utd * s.grad_s + s.env_step_s / rate_limited) * 3 + 60


@st.composite
def worlds(draw: st.DrawFn, faults: bool) -> Setting:
    actors = draw(st.sampled_from([1, 2, 3, 4, 8]))
    fast = draw(st.booleans())
    kw: dict = dict(
        seed=draw(st.integers(0, 2**16)), actors=actors, bots=draw(st.sampled_from([1, 1, 2, 4])),
        utd=draw(st.sampled_from([0.25, 0.5, 1.0, 2.0, 4.0])),
        learning_starts=draw(st.sampled_from([8, 64, 500, 1000])), seq_len=draw(st.sampled_from([4, 16, 32, 288])),
        flush_steps=draw(st.sampled_from([1, 7, 16, 32, 64])),
        env_step_s=draw(st.sampled_from([1e-5, 1e-4] if fast else [5e-3, 2e-2])),
        grad_s=draw(st.sampled_from([0.004, 0.01])), episode_len=draw(st.sampled_from([10, 200, 100_000])),
        latency_s=draw(st.sampled_from([1e-4, 5e-4, 5e-3])))
    if faults:
        kw.update(tolerance=draw(st.sampled_from([0, 1, 16, 64, 512])), max_debt=draw(st.sampled_from([20, 2000])),
                  reject_every=draw(st.sampled_from([0, 3, 10])))
        kind = draw(st.sampled_from(["none", "restarts", "death", "churn", "mixed"]))
        if kind == "restarts":
            kw["kills"] = tuple(sorted(draw(st.lists(st.floats(0.5, 30.0), min_size=1, max_size=3))))
            kw["down_s"] = draw(st.sampled_from([0.1, 1.0, 5.0]))
        elif kind == "death":
            kw["death_at"] = draw(st.floats(0.2, 20.0))
        elif kind == "churn":
            kw["joins"] = tuple(draw(st.lists(st.sampled_from([0.0, 0.0, 2.5, 7.0]), min_size=actors, max_size=actors)))
            kw["leaves"] = tuple(draw(st.lists(st.sampled_from([None, None, 5.0, 20.0]), min_size=actors,
                                               max_size=actors)))
        elif kind == "mixed":
            kw["modes"] = tuple(draw(st.lists(st.sampled_from(["rate-limited", "1.1", "realtime", "eval"]),
                                              min_size=actors, max_size=actors)))
            if "1.1" in kw["modes"]:
                kw["reject_every"] = 0  # the 1.1 books leave rejected steps in flight: 1.1's own limit
    else:
        kw.update(tolerance=draw(st.sampled_from([0, 16, 64])))
    # Training starts past learning_starts once some stream holds a chunk: with seq_len 288 and 8 streams of
    # long episodes that can take a couple of thousand steps (received before it, they are not owed).
    start = max(kw["learning_starts"], actors * kw["bots"] * kw["seq_len"])
    kw["steps"] = start + SPAN + 500
    s = Setting(**kw)
    return Setting(**{**kw, "time_limit_s": _time_limit(s)})


def _check_no_deadlock(out: Outcome) -> None:
    s = out.setting
    stuck = deadlocks(out)
    assert not stuck, f"{len(stuck)} waits on a learner that was up and idle, first {stuck[0]}"
    dead_at = s.death_at
    if dead_at is not None:  # a silent learner lets every actor go on after flow_timeout_s
        for w in out.waits:
            end = out.end_time if w.end is None else w.end
            if end > dead_at:
                assert end - max(w.start, dead_at) <= s.flow_timeout_s + 0.2, f"waited on a dead learner: {w}"
        return
    stepping = [i for i in range(s.actors) if s.mode(i) != "eval" and (i >= len(s.leaves) or s.leaves[i] is None)]
    if stepping and not any(s.mode(i) == "realtime" for i in range(s.actors)):
        assert out.samples[-1][1] >= s.steps, f"no progress: ran out of time at {out.samples[-1]}"


@settings(max_examples=EXAMPLES or 80, deadline=None, derandomize=not EXAMPLES,
          suppress_health_check=[HealthCheck.too_slow])
@given(worlds(faults=True))
def test_no_world_waits_for_good(s: Setting) -> None:
    """Start (fewer steps than a chunk), restarts from a checkpoint, actors joining and leaving, a learner that
    dies, rejected batches, realtime, eval and 1.1 actors beside rate-limited ones, tolerance 0 to 512."""
    _check_no_deadlock(simulate(s))


@settings(max_examples=EXAMPLES or 40, deadline=None, derandomize=not EXAMPLES,
          suppress_health_check=[HealthCheck.too_slow])
@given(worlds(faults=False))
# Found by a wider search: fast actors, each stepping a large share of the slack before learning_starts on
# progress 5 ms old, overran it by 120 steps (1.052) until a share was capped at the tolerance.
@example(Setting(seed=732, actors=3, bots=4, utd=0.5, learning_starts=1000, seq_len=4, flush_steps=64, tolerance=16,
                 env_step_s=1e-4, grad_s=0.004, episode_len=200, latency_s=0.005, steps=3500, time_limit_s=82.0))
def test_the_ratio_holds_in_any_world(s: Setting) -> None:
    out = simulate(s)
    _check_no_deadlock(out)
    ratios = window_ratios(out, SPAN)
    assert ratios, "no stretch of 2,000 steps to measure"
    assert 0.95 <= min(ratios) and max(ratios) <= 1.05, f"achieved / target UTD {min(ratios):.3f}-{max(ratios):.3f}"


# Update times alternate through the grid (0.007 s, h = 64 on this machine; 0.025 s, h = 256), so each count of
# actors, kind of environment, flush size and UTD meets one, and each of those settings meets both.
GRID = [(*g, (0.007, 0.025)[i % 2]) for i, g in
        enumerate(itertools.product([1, 2, 4, 8], [1e-5, 2e-2], [16, 7], [0.25, 1.0, 4.0]))]


@pytest.mark.parametrize("chunk", range(4))
def test_the_ratio_holds_on_the_issues_grid(chunk: int) -> None:
    """1, 2, 4, 8 actors; environments far faster than the learner and slower ones; flush sizes that divide the
    chunk stride (16) and that do not; UTD 0.25, 1, 4; a learner at h=64 and at h=256 (update times)."""
    worst: list[tuple[float, tuple]] = []
    for actors, env_s, flush, utd, grad_s in GRID[chunk::4]:
        s = Setting(seed=actors, actors=actors, env_step_s=env_s, flush_steps=flush, utd=utd, grad_s=grad_s,
                    seq_len=32, steps=1000 + SPAN + 500)
        out = simulate(Setting(**{**s.__dict__, "time_limit_s": _time_limit(s)}))
        _check_no_deadlock(out)
        ratios = window_ratios(out, SPAN)
        assert ratios
        worst.append((max(abs(r - 1) for r in ratios), (actors, env_s, flush, utd, grad_s)))
    dev, where = max(worst)
    assert dev <= 0.05, f"achieved UTD off its target by {dev:.3f} at (actors, env_s, flush, utd, grad_s) = {where}"
