"""The promise that rejected steps settle (SPEC.md, progress.settled; issue 29), kept at the learner: a
rate-limited actor half of whose batches a real learner rejects goes on at the pace of the learner's books,
never waiting out its flow timeout. With `settled` counting accepted steps only, the rejected steps would stay
unsettled for good and the actor would stand still until the timeout (120 s here) let it go."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from actor.client import BotClient
from actor.config import ActorConfig
from actor.link import ActorLink, BotSpec
from protocol.flow import SILENT, STANDSTILL
from tests.procs import Procs, Watch, actor_stats

pytestmark = pytest.mark.slow

LEARNER = ("--obs-dim", "3", "--act-dim", "1", "--act-low", "-2", "--act-high", "2", "--learning-starts", "64",
           "--seq-len", "8", "--overlap", "4", "--hidden", "16", "--fc", "16", "--batch-size", "4", "--publish-hz", "50")
STEPS = 400
FLUSH = 4  # batches of 4 steps; every other one has an action out of bounds, and the learner rejects it whole
TIMEOUT_S = 120.0


def test_an_actor_whose_steps_the_learner_rejects_goes_on_without_its_flow_timeout(procs: Procs,
                                                                                  eps: dict[str, str]) -> None:
    procs.learner(eps, *LEARNER)
    watch = Watch(eps["metrics"])
    link = None
    late = threading.Event()  # ends a wait that has run half the timeout: the test has failed by then
    timer = threading.Timer(TIMEOUT_S / 2, late.set)
    timer.daemon = True
    try:
        watch.wait(lambda h: True, 60, "the learner")
        cfg = ActorConfig(ingest=eps["ingest"], weights=eps["weights"], actor_id="rejected", flow="rate-limited",
                          flow_tolerance=8, flow_timeout_s=TIMEOUT_S, flush_steps=FLUSH, close_linger_s=2.0)
        link = ActorLink(cfg)
        released: list[str] = []
        decide = link.pacer.decide

        def noting(*args, **kwargs) -> str:  # type: ignore[no-untyped-def]
            decision = decide(*args, **kwargs)
            if decision in (SILENT, STANDSTILL):
                released.append(decision)
            return decision

        link.pacer.decide = noting  # type: ignore[method-assign]
        f32 = np.float32
        client = BotClient(link, BotSpec("bot", -np.ones(3, f32), np.ones(3, f32), -2 * np.ones(1, f32),
                                         2 * np.ones(1, f32)))
        rng = np.random.default_rng(0)
        obs = rng.standard_normal(3).astype(f32)
        start, bad = time.monotonic(), 0
        timer.start()
        for step in range(STEPS):
            link.wait_for_learner(late, buffered=lambda: client.buffered, flush=client.flush)
            assert not late.is_set(), f"{step} steps in {TIMEOUT_S / 2:.0f} s: the actor waits on rejected steps"
            action = client.act(obs)
            if (client.t // FLUSH) % 2:  # the whole batch is rejected: out_of_bounds
                action, bad = np.full(1, 3.0, f32), bad + 1
            nxt = rng.standard_normal(3).astype(f32)
            ends = (step + 1) % 50 == 0
            client.step(obs, action, float(rng.standard_normal()), nxt, False, ends)
            obs = nxt
            if ends:
                client.new_episode()
        client.flush()
        took = time.monotonic() - start
        health = watch.wait(lambda h: (actor_stats(h, "rejected") or {}).get("received", 0)
                            + (actor_stats(h, "rejected") or {}).get("rejected", 0) >= STEPS, 30,
                            "every step settled")
        books = actor_stats(health, "rejected")
        assert books is not None and (books["received"], books["rejected"]) == (STEPS - bad, bad), books
        assert set(health["rejects"]) == {"out_of_bounds"}, health["rejects"]
        print(f"{STEPS} steps in {took:.1f} s, {books['rejected']} of them rejected; held back {link.flow_waits} "
              f"times, {link.flow_wait_s:.1f} s in all")
        assert link.flow_waits > 0, "flow control never held the actor back: the test shows nothing"
        assert released == [], f"the actor went on by its timeout ({released}), not by the learner's books"
    finally:
        timer.cancel()
        if link is not None:
            link.close()
        watch.close()
