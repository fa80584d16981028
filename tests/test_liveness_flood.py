"""Liveness beside a flood: a sender that keeps the learner's queue from ever emptying must not keep a dead
sender beside it alive. A real learner process and two scripted senders on real sockets (tests/feed.py)."""

from __future__ import annotations

import signal

from tests.feed import SMALL_LEARNER, Feeder
from tests.procs import Procs, Watch, actor_stats
from tests.test_contention import flood, heartbeats

DEAD_AFTER_S = 1.0


def test_a_sender_that_stops_beside_a_flood_is_judged_dead(procs: Procs, eps: dict[str, str]) -> None:
    """Reads of 32 frames between passes of 0.5 s against a flood of thousands a second: the queue is never found
    empty. The quiet sender's heartbeats are read all the same (the socket fair-queues its connections), and once
    it stops, the learner judges it dead while the flood goes on; judged only from a read that empties the queue,
    it would stay alive for good."""
    learner = procs.learner(eps, *SMALL_LEARNER, "--hidden", "64", "--fc", "64", "--max-drain", "32",
                            "--max-steps-per-pass", "1000000", "--max-pass-s", "0.5",
                            "--dead-after-s", str(DEAD_AFTER_S))
    watch = Watch(eps["metrics"])
    try:
        with Feeder(eps["ingest"], "flood", period=0.0, frames=flood):
            with Feeder(eps["ingest"], "quiet", period=0.2, frames=heartbeats):
                watch.wait(lambda h: h["grad_steps"] > 0 and (actor_stats(h, "quiet") or {}).get("alive", False),
                           90, "training, and the quiet sender seen alive")
            # The quiet sender has stopped; the flood goes on and keeps the queue full.
            last = watch.wait(lambda h: not actor_stats(h, "quiet")["alive"], 60, "the stopped sender judged dead")
            assert actor_stats(last, "flood")["alive"], "the flooder itself stays alive"
    finally:
        watch.close()
    assert procs.stop(learner, signal.SIGINT) == 0
