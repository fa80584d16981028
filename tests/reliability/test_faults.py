"""Faults: the learner killed and restarted mid-run; a learner that stops answering.

(The saver killed: tests/test_checkpoint_faults.py. An actor killed and marked
dead: tests/test_monitoring.py.)
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from actor.client import BotClient
from actor.config import ActorConfig
from tests.procs import Procs, Watch, actor_stats

pytestmark = pytest.mark.slow

LEARNER = ("--hidden", "16", "--fc", "16", "--seq-len", "8", "--overlap", "4", "--batch-size", "8",
           "--learning-starts", "300", "--save-interval", "50")


def test_learner_sigkill_and_restart_mid_run(procs: Procs, eps: dict[str, str], tmp_path: Path) -> None:
    live = tmp_path / "ckpt" / "live.sacl"
    first = procs.learner(eps, *LEARNER, "--weights-path", str(live))
    watch = Watch(eps["metrics"])
    try:
        watch.wait(lambda h: True, 60, "the learner")
        names = ("f1", "f2")
        # Rate-limited actors wait for a silent learner up to flow_timeout_s: long enough here that they are
        # still mid-run when the new learner is up, even on a loaded machine (a short one let them finish first).
        actors = [procs.actor(eps, n, "--env", "Pendulum-v1", "--max-steps", "1500", "--flow-timeout-s", "30",
                              "--report", str(tmp_path / f"{n}.json")) for n in names]
        h = watch.wait(lambda h: h["grad_steps"] >= 400 and (h.get("saver") or {}).get("saves", 0) >= 2, 120,
                       "training with checkpoints")
        steps_before = h["grad_steps"]
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        watch.close()
        watch = Watch(eps["metrics"])
        procs.learner(eps, *LEARNER, "--weights-path", str(live), name="learner2")
        h = watch.wait(lambda h: all((actor_stats(h, n) or {}).get("received", 0) > 100 for n in names), 120,
                       "the same actors feeding the restarted learner")
        assert h["grad_steps"] >= steps_before - 50, "training did not resume from the checkpoint"
        assert "resuming from" in procs.log("learner2")
        for n, a in zip(names, actors):
            assert a.wait(timeout=300) == 0, procs.log(n)
            order = json.loads((tmp_path / f"{n}.json").read_text())["versions_seen"]
            assert order == sorted(order) and len(set(order)) == len(order), f"{n}: versions went back: {order}"
            assert "learner restarted" in procs.log(n)
    finally:
        watch.close()


def test_a_stopped_learner_never_slows_the_game_loop(procs: Procs, eps: dict[str, str]) -> None:
    """SIGSTOP the learner for 3 s while a realtime bot ticks at ~500 Hz: no tick waits on it, the send queue
    fills (the 3 s hold ~50 MB of experience, more than the queue and the kernel's socket buffers take) and the
    bot drops whole batches, counted on both sides; everything not dropped reaches the learner."""
    obs_dim = 1024  # wide observations (32 KB a batch) so the stop fills the queue, whatever the TCP buffers
    learner = procs.learner(eps, *LEARNER, "--capacity", "4096")
    watch = Watch(eps["metrics"])
    cfg = ActorConfig(ingest=eps["ingest"], weights=eps["weights"], actor_id="ticker", flush_steps=4, queue=8,
                      close_linger_s=30.0)
    one = np.ones(1, np.float32)
    bot = BotClient.connect(cfg, "bot", -np.ones(obs_dim, np.float32), np.ones(obs_dim, np.float32), -2 * one, 2 * one)
    closed = False
    try:
        watch.wait(lambda h: True, 60, "the learner")
        deadline = time.monotonic() + 30
        while bot.link.weights.latest() is None and time.monotonic() < deadline:
            bot.act(np.zeros(obs_dim, np.float32))
            time.sleep(0.01)
        assert bot.link.weights.latest() is not None, "no weights"
        obs = np.zeros(obs_dim, np.float32)
        ticks: list[float] = []
        stopped_at = None
        dropped_before = dropped_stopped = 0
        start = time.monotonic()
        while time.monotonic() - start < 6.0:
            if stopped_at is None and time.monotonic() - start > 1.0:
                dropped_before = bot.link.dropped
                os.kill(learner.pid, signal.SIGSTOP)
                stopped_at = time.monotonic()
            if stopped_at and time.monotonic() - stopped_at > 3.0 and learner.poll() is None:
                dropped_stopped = dropped_stopped or bot.link.dropped - dropped_before
                os.kill(learner.pid, signal.SIGCONT)
            t0 = time.perf_counter()
            a = bot.act(obs)
            bot.step(obs, a, -1.0, obs, False, False)
            ticks.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.002)
        os.kill(learner.pid, signal.SIGCONT)
        p99, worst = float(np.percentile(ticks, 99)), max(ticks)
        assert p99 < 2.0 and worst < 20.0, f"tick p99 {p99:.2f} ms, worst {worst:.2f} ms"
        assert bot.link.sent + bot.link.dropped + bot.buffered == len(ticks), "a step went missing in the client"
        assert dropped_before == 0, f"drops before the stop: {dropped_before} (the queue should not fill then)"
        assert dropped_stopped > 0 and dropped_stopped % 4 == 0, f"the queue never filled: {dropped_stopped} dropped"
        sent, dropped = bot.link.sent, bot.link.dropped
        bot.close()  # flush, then bye with the final counts
        closed = True
        stats = watch.wait(lambda h: (actor_stats(h, "ticker") or {}).get("bye"), 60, "the bot's bye")
        stats = actor_stats(stats, "ticker")
        assert stats is not None and stats["dropped"] == bot.link.dropped >= dropped
        assert stats["received"] == stats["sent"] == bot.link.sent >= sent, f"sent but not received: {stats}"
        print(json.dumps({"ticks": len(ticks), "tick_p99_ms": round(p99, 3), "tick_max_ms": round(worst, 3),
                          "dropped_steps": bot.link.dropped, "dropped_while_stopped": dropped_stopped}))
    finally:
        os.kill(learner.pid, signal.SIGCONT)
        if not closed:
            bot.close()
        watch.close()
