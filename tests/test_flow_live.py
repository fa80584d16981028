"""Flow control with real processes: a learner slower than its actors holds them to the target UTD, a learner
restarted with a backlog does not stall them, and an actor waiting on a dead learner stops on SIGINT."""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from protocol.flow_model import stretch_ratios
from tests.procs import Procs, Watch, actor_stats

pytestmark = pytest.mark.slow

STARTS = 300
LEARNER = ("--hidden", "16", "--fc", "16", "--seq-len", "8", "--overlap", "4", "--batch-size", "8",
           "--learning-starts", str(STARTS), "--utd-ratio", "1")
ACTOR = ("--env", "Pendulum-v1", "--obs-mask", "2")  # flush_steps 32: two batches a pass outrun 32 updates a pass


def worst_window(points: list[tuple[int, int]], utd: float, span: int = 2000) -> tuple[float, float]:
    """The lowest and highest achieved / target UTD over stretches of `span` env steps, between any two
    (env_steps, grad_steps) points taken past learning_starts."""
    ratios = [r / utd for r in stretch_ratios((p for p in points if p[0] >= STARTS), span)]
    assert ratios, f"no stretch of {span} steps among {len(points)} points"
    return min(ratios), max(ratios)


def test_a_learner_slower_than_its_actors_holds_them_to_utd_1(procs: Procs, eps: dict[str, str]) -> None:
    """Pendulum steps thousands of times a second; this learner trains a few hundred steps a second. Rate-limited,
    two actors are held back so that every 2,000 env steps past learning_starts got 2,000 gradient steps, within
    5% (1.1's 'nothing in flight may step' let them run: the learner took everything in at once and fell behind)."""
    watch = Watch(eps["metrics"])
    points: list[tuple[int, int]] = []

    def note(h: dict[str, Any]) -> bool:
        points.append((h["env_steps"], h["grad_steps"]))
        return h["env_steps"] >= STARTS + 2600

    try:
        procs.learner(eps, *LEARNER)
        watch.wait(lambda h: True, 60, "the learner")
        for name in ("f1", "f2"):
            procs.actor(eps, name, *ACTOR)
        h = watch.wait(note, 120, "2,600 steps past learning_starts")
        points += [(p["env_steps"], p["steps"]) for p in watch.passes]
        low, high = worst_window(points, 1.0)
        held = {n: (actor_stats(h, n) or {}).get("held_s", 0.0) for n in ("f1", "f2")}
        print(f"achieved / target UTD over 2,000-step stretches: {low:.3f}-{high:.3f}; held back: {held}; "
              f"last window {h['utd_window']} over {h['utd_window_steps']} steps")
        assert all(s > 0 for s in held.values()), f"the actors were never held back: not faster than the learner {held}"
        assert 0.95 <= low and high <= 1.05, f"achieved UTD / target {low:.3f}-{high:.3f}, not within 5%"
        assert 0.95 <= h["utd_window"] <= 1.05 and h["utd_window_steps"] >= 2000
    finally:
        watch.close()


def test_a_learner_restarted_with_a_backlog_does_not_stall_its_actors(procs: Procs, eps: dict[str, str],
                                                                       tmp_path: Path) -> None:
    """A realtime actor floods the learner until it owes well over a thousand gradient steps, beside a
    rate-limited one; the learner is killed and the flood stops. The learner that resumes from the checkpoint
    owes none of that backlog (and has an empty replay at first): the rate-limited actor, which a backlog
    counted as owed would hold until its 60 s timeout, goes on at once."""
    live = tmp_path / "ckpt" / "live.sacl"
    ckpt = ("--weights-path", str(live), "--save-interval", "50", "--max-debt", "5000")
    first = procs.learner(eps, *LEARNER, *ckpt)
    watch = Watch(eps["metrics"])
    try:
        watch.wait(lambda h: True, 60, "the learner")
        flood = procs.actor(eps, "flood", *ACTOR, "--flow", "realtime")
        procs.actor(eps, "paced", *ACTOR, "--flow-timeout-s", "60")
        watch.wait(lambda h: h["debt"] >= 1500 and (h.get("saver") or {}).get("saves", 0) >= 1, 90,
                   "a backlog of 1,500 gradient steps and a checkpoint")
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        procs.stop(flood)
        watch.close()
        watch = Watch(eps["metrics"])
        killed_at = time.monotonic()
        procs.learner(eps, *LEARNER, *ckpt, name="learner2")
        watch.wait(lambda h: (actor_stats(h, "paced") or {}).get("received", 0) >= 600, 60,
                   "the rate-limited actor feeding the resumed learner")
        took = time.monotonic() - killed_at
        forgiven = re.search(r"resume: (\d+) steps received before the restart were not trained on",
                             procs.log("learner2"))
        assert forgiven and int(forgiven.group(1)) >= 1000, procs.log("learner2")[-2000:]
        assert "stood still" not in procs.log("paced") and "silent" not in procs.log("paced"), procs.log("paced")[-2000:]
        print(f"the resumed learner did not owe {forgiven.group(1)} steps; it had 600 from the rate-limited actor "
              f"{took:.1f} s after the kill")
        assert took < 30, "the actor waited on the dead learner's backlog"
    finally:
        watch.close()


def test_an_actor_waiting_on_a_dead_learner_stops_on_sigint_within_a_second(procs: Procs, eps: dict[str, str],
                                                                          tmp_path: Path) -> None:
    learner = procs.learner(eps, *LEARNER)
    watch = Watch(eps["metrics"])
    try:
        watch.wait(lambda h: True, 60, "the learner")
        actor = procs.actor(eps, "w", *ACTOR, "--flow-timeout-s", "60", "--report", str(tmp_path / "w.json"))
        watch.wait(lambda h: (actor_stats(h, "w") or {}).get("held_s", 0) > 0, 60, "the actor held back")
        learner.send_signal(signal.SIGKILL)
        learner.wait(10)
        time.sleep(2.0)  # the span under test: the actor waits on steps the dead learner will never settle
        assert actor.poll() is None, "the actor ended by itself"
        actor.send_signal(signal.SIGINT)
        sent_at = time.monotonic()
        assert actor.wait(10) == 0, procs.log("w")
        took = time.monotonic() - sent_at
        report = json.loads((tmp_path / "w.json").read_text())
        print(f"SIGINT to exit: {took:.2f} s; it had waited {report['flow_wait_s']:.1f} s in all")
        assert report["flow_wait_s"] >= 1.5, "it was not waiting on the dead learner"
        assert took <= 1.0, f"{took:.2f} s from SIGINT to exit"
    finally:
        watch.close()
