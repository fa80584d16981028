"""Which thread policy survives a shared machine: the learner's SAC update under each option, alone and beside hogs.

Each option is a fresh process (OpenMP reads OMP_WAIT_POLICY and GOMP_SPINCOUNT
when torch loads, so they cannot change in one process); the hogs are busy
loops (`while True: pass`), one or two, started before the timed process and
killed after it. Options and contention levels take turns within each round,
so drift on this noisy machine hits them alike; the figure per cell is the
best round's median ms per update. learner/threads.py's default comes from
this table. Last line: one JSON object.

    .venv/bin/python tests/bench/bench_threads.py [--hidden 64 256] [--rounds 2] [--seconds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# (label, intra-op threads (0: tuned), environment); inter-op threads are 1 in every option (the update never forks)
OPTIONS: list[tuple[str, int, dict[str, str]]] = [
    ("2 threads, default wait", 2, {}),
    ("2 threads, PASSIVE", 2, {"OMP_WAIT_POLICY": "PASSIVE"}),
    ("2 threads, spin 10k", 2, {"GOMP_SPINCOUNT": "10000"}),
    ("1 thread, default wait", 1, {}),
    ("1 thread, PASSIVE", 1, {"OMP_WAIT_POLICY": "PASSIVE"}),
    ("auto (learner default)", 0, {}),  # learner/threads.py's tuner; it settles for one window first
]
HOG = "while True: pass"


def child(hidden: int, threads: int, seconds: float) -> None:
    """The timed side: build the learner's SAC, warm up, time single updates for `seconds`."""
    sys.path.insert(0, str(ROOT))
    from learner.threads import apply, prepare

    if threads == 0:
        prepare(threads)  # the learner's entry point does this; the other options set their environment as labelled
    import torch  # noqa: F401 - after prepare, as in the learner

    from learner.networks import Arch
    from learner.sac import SAC, SACConfig
    from tests.bench.bench_update import ACT, OBS, batch

    tuner = apply(threads)
    sac = SAC(Arch(OBS, ACT, hidden=hidden, act_low=(-1.0,) * ACT, act_high=(1.0,) * ACT), SACConfig())
    b = batch()

    def timed(seconds: float) -> list[float]:
        times: list[float] = []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end or len(times) < 3:
            start = time.perf_counter()
            sac.update(b)
            took = time.perf_counter() - start
            if tuner is not None:
                tuner.record(took)
            times.append(took * 1000)
        return sorted(times)

    timed(seconds if tuner is not None else 0.0)
    times = timed(seconds)
    print(json.dumps({"p50": times[len(times) // 2], "p90": times[int(len(times) * 0.9)], "n": len(times)}))


def measure(hidden: int, threads: int, env: dict[str, str], hogs: int, seconds: float) -> dict[str, float]:
    procs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(hogs)]
    try:
        full = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS")}
        out = subprocess.run([sys.executable, __file__, "--child", str(hidden), str(threads), str(seconds)],
                             env=full | env, capture_output=True, text=True, check=True, cwd=ROOT, timeout=seconds * 20 + 120)
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        for p in procs:
            p.kill()
            p.wait()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--hidden", type=int, nargs="+", default=[64, 256])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--hogs", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(int(args.child[0]), int(args.child[1]), float(args.child[2]))
        return
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.rounds):
        for h in args.hidden:
            for hogs in args.hogs:
                for label, threads, env in OPTIONS:
                    key = f"h{h}|{hogs}|{label}"
                    got = measure(h, threads, env, hogs, args.seconds)
                    if key not in best or got["p50"] < best[key]["p50"]:
                        best[key] = got
    figures: dict[str, float] = {}
    for h in args.hidden:
        print(f"\nh={h}: median ms per update (p90), best of {args.rounds} rounds; ratio = alone / contended "
              "(fair share: 0.5 beside one hog, 0.33 beside two)")
        print(f"{'option':<26}" + "".join(f"{f'{n} hog(s)':>22}" for n in args.hogs))
        solo_best = min(best[f"h{h}|0|{label}"]["p50"] for label, _, _ in OPTIONS) if 0 in args.hogs else None
        for label, _, _ in OPTIONS:
            cells = []
            for hogs in args.hogs:
                got = best[f"h{h}|{hogs}|{label}"]
                slug = f"h{h}_hog{hogs}_{label.replace(' ', '_').replace(',', '')}"
                figures[slug] = round(got["p50"], 2)
                ratio = f" x{solo_best / got['p50']:.2f}" if solo_best else ""
                cells.append(f"{got['p50']:.1f} ({got['p90']:.0f}){ratio}")
            print(f"{label:<26}" + "".join(f"{c:>22}" for c in cells))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
