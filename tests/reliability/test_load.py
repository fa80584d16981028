"""Load: 8 actor processes pushing as fast as they can. The learner's own memory stays bounded; the books close.

The bound is on what the learner owns: its private (anonymous) memory's growth over its baseline once
started, against the replay's computed size plus a stated margin. Raw RSS would mostly measure which
torch wheel is installed (the CUDA build maps ~420 MB of shared libraries, the CPU build far less).

CI runs 10 s; SACLSTM_SOAK_S=60 (or more) makes it a real soak.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.procs import Procs, Watch, actor_stats

pytestmark = pytest.mark.slow

ACTORS = 8
SECONDS = float(os.environ.get("SACLSTM_SOAK_S", "10"))
# Beyond the replay: the model, its Adam moments and autograd buffers, the allocator's slack and the
# ZMQ receive queues of 8 flat-out actors (their high-water marks bound them).
MARGIN_MB = 128


def private_mb(pid: int) -> float:
    """RssAnon: the learner's own pages, not the shared libraries it maps."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no RssAnon for pid {pid}")


def test_eight_actors_flat_out(procs: Procs, eps: dict[str, str], tmp_path: Path) -> None:
    learner = procs.learner(eps, "--hidden", "32", "--fc", "32", "--seq-len", "16", "--overlap", "8", "--batch-size", "8",
                            "--learning-starts", "500", "--capacity", "200000")
    watch = Watch(eps["metrics"])
    try:
        watch.wait(lambda h: True, 60, "the learner")
        baseline = private_mb(learner.pid)  # torch imported, sockets bound, no model or replay yet
        names = [f"load{i}" for i in range(ACTORS)]
        actors = [procs.actor(eps, n, "--env", "Pendulum-v1", "--flow", "realtime", "--flush-steps", "64",
                              "--report", str(tmp_path / f"{n}.json")) for n in names]
        watch.wait(lambda h: all((actor_stats(h, n) or {}).get("received", 0) > 0 for n in names), 120, "all actors")
        peak, end = 0.0, time.monotonic() + SECONDS
        while time.monotonic() < end:
            peak = max(peak, private_mb(learner.pid))
            time.sleep(0.5)
        for a in actors:
            a.send_signal(signal.SIGTERM)
        for n, a in zip(names, actors):
            assert a.wait(timeout=60) == 0, procs.log(n)
        h = watch.wait(lambda h: all((actor_stats(h, n) or {}).get("bye") and
                                     actor_stats(h, n)["received"] + actor_stats(h, n)["rejected"] >= actor_stats(h, n)["sent"]
                                     for n in names), 120, "every actor's steps accounted")
        peak = max(peak, private_mb(learner.pid))
        total = {"sent": 0, "received": 0, "dropped": 0}
        for n in names:
            rep, st = json.loads((tmp_path / f"{n}.json").read_text()), actor_stats(h, n)
            assert rep["steps"] == rep["sent"] + rep["dropped"], rep
            assert st["sent"] == rep["sent"] and st["received"] + st["rejected"] == rep["sent"], (n, st, rep)
            for key in total:
                total[key] += rep[key] if key != "received" else st["received"]
        replay_mb = h["replay"]["bytes"] / 2**20
        growth = peak - baseline
        print(json.dumps({"actors": ACTORS, "seconds": SECONDS, "baseline_private_mb": round(baseline),
                          "peak_private_mb": round(peak), "growth_mb": round(growth), "replay_mb": round(replay_mb, 1),
                          "bound_mb": round(replay_mb + MARGIN_MB), **total, "grad_steps": h["grad_steps"]}))
        assert replay_mb > 0, "the learner reports its replay's size"
        assert growth < replay_mb + MARGIN_MB, (f"learner private memory grew {growth:.0f} MB over its baseline "
                                                f"{baseline:.0f} MB: more than the replay ({replay_mb:.0f} MB) "
                                                f"+ {MARGIN_MB} MB")
        assert learner.poll() is None
    finally:
        watch.close()
