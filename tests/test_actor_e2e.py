"""A real learner and real actor daemons on Pendulum: weights, accounting, eval, restarts, flow control."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.feed import Feeder
from tests.procs import Procs, Watch, actor_stats

LEARNER = ("--hidden", "16", "--fc", "16", "--seq-len", "8", "--overlap", "4", "--batch-size", "8",
           "--learning-starts", "300", "--publish-hz", "20")
ACTOR = ("--env", "Pendulum-v1", "--obs-mask", "2", "--flush-steps", "16")

pytestmark = pytest.mark.slow


def report(tmp: Path, name: str) -> dict:
    return json.loads((tmp / f"{name}.json").read_text())


def test_two_actors_and_an_eval_actor(procs: Procs, eps: dict[str, str], tmp_path: Path) -> None:
    watch = Watch(eps["metrics"])
    try:
        procs.learner(eps, *LEARNER)
        watch.wait(lambda h: True, 60, "the learner")
        actors = {name: procs.actor(eps, name, *ACTOR, "--max-steps", "1600", "--seed", str(i),
                                    "--report", str(tmp_path / f"{name}.json"))
                  for i, name in enumerate(("a1", "a2"))}
        actors["ev"] = procs.actor(eps, "ev", *ACTOR, "--eval", "--max-episodes", "2", "--report", str(tmp_path / "ev.json"))
        for name, proc in actors.items():
            assert proc.wait(timeout=240) == 0, procs.log(name)
        health = watch.wait(lambda h: all((actor_stats(h, n) or {}).get("bye") for n in actors), 30, "three byes")

        for name in ("a1", "a2"):
            rep, stats = report(tmp_path, name), actor_stats(health, name)
            assert rep["first_weights_s"] is not None and rep["first_weights_s"] < 1.0, rep
            assert rep["steps"] == rep["sent"] + rep["dropped"] == 1600
            assert stats["sent"] == rep["sent"] and stats["dropped"] == rep["dropped"]
            assert stats["received"] + stats["rejected"] == stats["sent"], stats
            seen = rep["versions_seen"]  # in the order they arrived at the actor
            assert len(seen) > 3 and all(a < b for a, b in zip(seen, seen[1:])), f"{name}: not rising: {seen}"

        ev, ev_stats = report(tmp_path, "ev"), actor_stats(health, "ev")
        assert len(ev["returns"]) == 2 and ev["sent"] == 0
        assert ev_stats["received"] == 0 and ev_stats["rejected"] == 0 and ev_stats["eval_bots"] == ["bot0"]
        assert "EVAL MODE" in procs.log("ev")

        # Rate-limited flow control: achieved UTD within 10% of the target while the actors ran.
        late = [p for p in watch.passes if p["env_steps"] >= 2000]
        assert late, "no training pass after 2000 steps"
        assert all(0.9 <= p["utd_achieved"] <= 1.1 for p in late), [p["utd_achieved"] for p in late]
    finally:
        watch.close()


def test_actors_survive_a_learner_restart(procs: Procs, eps: dict[str, str], tmp_path: Path) -> None:
    watch = Watch(eps["metrics"])
    try:
        first = procs.learner(eps, *LEARNER)
        watch.wait(lambda h: True, 60, "the learner")
        actors = [procs.actor(eps, name, *ACTOR, "--flow", "realtime") for name in ("r1", "r2")]
        watch.wait(lambda h: all((actor_stats(h, n) or {}).get("received", 0) > 300 for n in ("r1", "r2")),
                   60, "both actors feeding the first learner")
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        watch.close()
        watch = Watch(eps["metrics"])
        procs.learner(eps, *LEARNER, name="learner2")
        health = watch.wait(lambda h: all((actor_stats(h, n) or {}).get("received", 0) > 300 for n in ("r1", "r2"))
                            and h["version"] > 2, 90, "the same actors feeding the restarted learner")
        assert all(a.poll() is None for a in actors), "an actor died with the learner"
        assert health["grad_steps"] > 0
        for name in ("r1", "r2"):
            assert "learner restarted" in procs.log(name)
            assert "Traceback" not in procs.log(name)
        for a in actors:
            assert procs.stop(a) == 0
    finally:
        watch.close()


def test_stored_state_reaches_every_chunk_or_the_learner_says_why_not(procs: Procs, eps: dict[str, str]) -> None:
    """A learner with use_stored_state asks for the actors' LSTM state in its weights (state_every = seq_len -
    overlap = 4): an actor flushing every 3 steps still begins a batch wherever a chunk begins, so every chunk
    starts from the state the actor had there (health: replay.with_state). A bot that ignores the request (a
    scripted 1.1 sender) leaves every chunk without one, and the learner says so."""
    stored = ("--use-stored-state", "true", "--hidden", "16", "--fc", "16", "--seq-len", "8", "--overlap", "4",
              "--batch-size", "8", "--learning-starts", "300")
    watch = Watch(eps["metrics"])
    try:
        learner = procs.learner(eps, *stored)
        watch.wait(lambda h: True, 60, "the learner")
        actor = procs.actor(eps, "s1", "--env", "Pendulum-v1", "--flush-steps", "3", "--max-steps", "800")
        assert actor.wait(timeout=120) == 0, procs.log("s1")
        health = watch.wait(lambda h: h["grad_steps"] > 0 and h["env_steps"] == 800, 60, "training on 800 steps")
        # The chunks of the steps played before the first weights arrived have none.
        assert health["replay"]["with_state"] >= 0.9, health["replay"]
    finally:
        watch.close()
    assert procs.stop(learner) == 0
    assert "use_stored_state is on, but" not in procs.log("learner")

    watch = Watch(eps["metrics"])
    try:
        procs.learner(eps, *stored, name="learner2")
        watch.wait(lambda h: True, 60, "the second learner")
        with Feeder(eps["ingest"], "scripted"):
            health = watch.wait(lambda h: h["grad_steps"] > 0, 60, "training on the scripted steps")
    finally:
        watch.close()
    assert health["replay"]["with_state"] == 0.0
    assert "use_stored_state is on, but 0% of the chunks start from a stored state" in procs.log("learner2")
