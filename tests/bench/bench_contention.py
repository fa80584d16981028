"""The learner on a shared machine: its real service loop alone, beside CPU hogs, and under a flood.

One real learner process per width (sockets, replay, updates, its default
thread policy) is fed by one real rate-limited actor (Pendulum-v1), and
measured in phases of the same run, updates per second from its own health
maps:

    solo    the learner and its paced actor
    hog1    + one busy loop (`while True: pass`): its fair share is one core of two
    hog2    + two busy loops: a third of the machine
    flood   + one realtime actor stepping flat out into the same learner (one more
            CPU-bound process, and far more experience than the learner can train on)

During the flood every health map is checked for actors marked dead (none
may be: the flooding one and the paced one both live), and the steps beyond
what the learner can train on must show up as untrained (max_debt) or as
the realtime actor's own dropped steps, never silently. Then SIGINT while
the debt is large: seconds to exit (no checkpoint path, so no final save).
The learner runs with --dead-after-s 3 here (10 by default), so a 20 s flood
spans six death windows; --flood-s 60 runs a full minute.

Ratios are against solo of the same width in the same run (targets: hog1 >=
0.45, hog2 >= 0.3, flood >= 0.45, false deaths 0, stop <= 2 s). Last line:
one JSON object.

    .venv/bin/python tests/bench/bench_contention.py [--hidden 256 64] [--phase-s 10] [--flood-s 20] [--threads 0]
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.procs import Procs, Watch, actor_stats, endpoints  # noqa: E402

HOG = "while True: pass"


class Phase:
    """Updates per second over a window of health maps, and what happened to the actors meanwhile."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.deaths: set[str] = set()
        self.maps: list[dict[str, Any]] = []

    def run(self, settle_s: float, measure_s: float) -> float:
        self._collect(settle_s)
        self.maps.clear()
        self._collect(measure_s)
        first, last = self.maps[0], self.maps[-1]
        span = last["uptime_s"] - first["uptime_s"]
        return (last["grad_steps"] - first["grad_steps"]) / span if span > 0 else 0.0

    def _collect(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end or not self.maps:
            h = self.watch.wait(lambda h: True, 30, "a health map")
            self.maps.append(h)
            self.deaths |= {a["sender"] for a in h["actors"] if not a["alive"] and not a["bye"]}


def hogs(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(n)]


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
        p.wait()


def one_width(hidden: int, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    eps = endpoints()
    procs = Procs(tmp)
    watch = Watch(eps["metrics"])
    busy: list[subprocess.Popen] = []
    try:
        learner = procs.start(f"learner-h{hidden}", "learner", "--ingest", eps["ingest"], "--weights", eps["weights"],
                              "--metrics", eps["metrics"], "--hidden", str(hidden), "--threads", str(args.threads),
                              "--dead-after-s", str(args.dead_after_s), "--learning-starts", "1000")
        actor_args = ("--env", "Pendulum-v1", "--obs-mask", "2")
        procs.actor(eps, "paced", *actor_args, "--flow", "rate-limited")
        watch.wait(lambda h: h["grad_steps"] > 50, 180, "training to start")
        phase = Phase(watch)
        out: dict[str, Any] = {"solo": phase.run(args.settle_s, args.phase_s)}
        out["solo_threads"] = phase.maps[-1]["threads"]["threads"]
        out["solo_debt"] = sum(m["debt"] for m in phase.maps) / len(phase.maps)
        for n in (1, 2):
            busy = hogs(n)
            out[f"hog{n}"] = phase.run(args.settle_s, args.phase_s)
            out[f"hog{n}_threads"] = phase.maps[-1]["threads"]["threads"]
            stop(busy)
        out["deaths_before_flood"] = sorted(phase.deaths)
        out["tuner"] = phase.maps[-1]["threads"]
        phase.deaths.clear()
        procs.actor(eps, "flood", *actor_args, "--flow", "realtime")
        out["flood"] = phase.run(args.settle_s, args.flood_s)
        last = phase.maps[-1]
        flood = actor_stats(last, "flood") or {}
        out |= {"false_deaths": len(phase.deaths), "dead": sorted(phase.deaths), "flood_threads": last["threads"]["threads"],
                "flood_sent": flood.get("sent", 0), "flood_dropped": flood.get("dropped", 0),
                "untrained_steps": last["untrained_steps"], "debt": last["debt"], "unread_s": last["unread_s"]}
        start = time.monotonic()
        learner.send_signal(signal.SIGINT)
        learner.wait(timeout=120)
        out["stop_s"] = time.monotonic() - start
        out["exit"] = learner.returncode
        return out
    finally:
        stop(busy)
        watch.close()
        procs.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hidden", type=int, nargs="+", default=[256, 64])
    p.add_argument("--phase-s", type=float, default=10.0, help="measured seconds per phase")
    p.add_argument("--settle-s", type=float, default=3.0, help="seconds before each phase's window")
    p.add_argument("--flood-s", type=float, default=20.0, help="measured seconds of flood (60 for the full test)")
    p.add_argument("--dead-after-s", type=float, default=3.0, help="the learner's dead_after_s")
    p.add_argument("--threads", type=int, default=0, help="the learner's --threads (0: its default policy)")
    args = p.parse_args()
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for h in args.hidden:
            r = one_width(h, args, Path(tmp))
            solo = r["solo"]
            print(f"h={h}: solo {solo:.1f} updates/s ({r['solo_threads']} threads, mean debt {r['solo_debt']:.0f}) | beside 1 hog {r['hog1']:.1f} (x{r['hog1'] / solo:.2f}, "
                  f"target >= 0.45; {r['hog1_threads']} threads) | beside 2 hogs {r['hog2']:.1f} "
                  f"(x{r['hog2'] / solo:.2f}, target >= 0.3; {r['hog2_threads']} threads)")
            print(f"h={h}: flood {r['flood']:.1f} updates/s (x{r['flood'] / solo:.2f}, target >= 0.45; "
                  f"{r['flood_threads']} threads): flooding actor sent {r['flood_sent']:,} steps, dropped "
                  f"{r['flood_dropped']:,} at its side; learner untrained_steps {r['untrained_steps']:,}, "
                  f"debt {r['debt']:.0f}; false deaths {r['false_deaths']} {r['dead']} over {args.flood_s:.0f} s "
                  f"(dead_after_s {args.dead_after_s}); SIGINT to exit {r['stop_s']:.2f} s (exit {r['exit']}, "
                  "target <= 2)")
            print(f"h={h}: thread tuner before the flood {r['tuner']}; actors dead before the flood: "
                  f"{r['deaths_before_flood'] or 'none'}")
            figures |= {f"solo_updates_per_s_h{h}": solo, f"hog1_updates_per_s_h{h}": r["hog1"],
                        f"ratio_hog1_h{h}": r["hog1"] / solo, f"hog2_updates_per_s_h{h}": r["hog2"],
                        f"ratio_hog2_h{h}": r["hog2"] / solo, f"flood_updates_per_s_h{h}": r["flood"],
                        f"ratio_flood_h{h}": r["flood"] / solo, f"flood_false_deaths_h{h}": r["false_deaths"],
                        f"flood_untrained_steps_h{h}": r["untrained_steps"], f"stop_s_h{h}": r["stop_s"]}
    h0 = args.hidden[0]
    figures |= {"ratio_hog1": figures[f"ratio_hog1_h{h0}"], "ratio_hog2": figures[f"ratio_hog2_h{h0}"],
                "ratio_flood": figures[f"ratio_flood_h{args.hidden[-1]}"],
                "flood_false_deaths": sum(figures[f"flood_false_deaths_h{h}"] for h in args.hidden),
                "stop_s": max(figures[f"stop_s_h{h}"] for h in args.hidden), "flood_s": args.flood_s}
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}))


if __name__ == "__main__":
    main()
