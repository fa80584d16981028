"""Flow control: does the rate limiter hold the UTD it is asked for? Real processes, and the model.

    .venv/bin/python tests/bench/bench_flow.py [--span 3000] [--tank-s 240] [--sim-runs 300] [--skip tank,...]

Parts (each prints its figures; the last line is one JSON object):
- achieved_utd_ratio_1, _4, _8: a learner (h=64, UTD 1, learning_starts 1000, one thread) and 1, 4 or 8
  rate-limited actor daemons, on Pendulum-v1 and on TankRoyale-v0 (both step far faster than the learner
  trains), until `--span` env steps past learning_starts: achieved UTD / target over that span, by the
  learner's own counters. The figure is the game farther from 1; `detail` holds both, with the lowest and
  highest ratio over any 2,000-step stretch (health maps and pass lines) and the seconds actors were held.
- achieved_utd_ratio_restart: 2 rate-limited actors on Pendulum-v1; the learner is SIGKILLed half way
  through `--span` steps past learning_starts, resumes from its checkpoint (save_interval 100) and runs
  `--span` more. The ratio across both sessions by the resumed learner's counters (the backlog the dead one
  received and never trained on, and what came before the new replay could be sampled, count against it).
- achieved_utd_ratio_tank_auto_pace, settle_s_tank_auto_pace: `saclstm tank-train` with its defaults
  (2 realtime tanks, tps = 0: the server's pace holds their UTD, a turn never waits) for `--tank-s` seconds:
  the ratio over the second half of the training time, and seconds from the first gradient step until every
  later 2,000-step stretch stays within 10% of the target (from the learner's metrics.jsonl).
- stop_s_waiting_actor: an actor waiting on steps a learner SIGKILLed 2 s before will never settle: SIGINT
  to exit.
- simulated_runs, deadlocks (waits on a learner that was up and idle, or released only by the timeout),
  simulated_worst_ratio (over the worlds with faults none, tolerance at most 64): the model
  (protocol/flow_model.py) over `--sim-runs` random worlds.

Targets (issue 29): every ratio 0.95-1.05 (auto pace 0.9-1.1), stop <= 1 s, deadlocks 0.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from protocol.flow_model import deadlocks, random_world, simulate, stretch_ratios, window_ratios  # noqa: E402
from tests.procs import Procs, Watch, actor_stats, endpoints  # noqa: E402

STARTS = 1000
LEARNER = ("--hidden", "64", "--fc", "64", "--utd-ratio", "1", "--learning-starts", str(STARTS))
GAMES = {"Pendulum-v1": ("--env", "Pendulum-v1"), "TankRoyale-v0": ("--env", "TankRoyale-v0")}


def ratios(points: list[tuple[int, int]], start: int, span: int = 2000) -> tuple[float, float, float]:
    """(overall, lowest, highest) achieved / target UTD (target 1) past `start`, by (env_steps, grad_steps)."""
    pts = sorted(set(p for p in points if p[0] >= start))
    (r0, g0), (r1, g1) = pts[0], pts[-1]
    windows = stretch_ratios(pts, span)
    return (g1 - g0) / max(1, r1 - r0), min(windows, default=float("nan")), max(windows, default=float("nan"))


class Run:
    """A learner and its actors, watched; every point (env_steps, grad_steps) it reports is kept."""

    def __init__(self, tmp: Path, *learner_args: str) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        self.procs, self.eps = Procs(tmp), endpoints()
        self.learner = self.procs.learner(self.eps, *LEARNER, *learner_args)
        self.watch = Watch(self.eps["metrics"])
        self.points: list[tuple[int, int]] = []
        self.last: dict[str, Any] = {}
        self.until(lambda h: True, 120, "the learner")

    def until(self, done: Any, timeout: float, what: str) -> dict[str, Any]:
        def note(h: dict[str, Any]) -> bool:
            self.points.append((h["env_steps"], h["grad_steps"]))
            self.last = h
            return bool(done(h))

        h = self.watch.wait(note, timeout, what)
        self.points += [(p["env_steps"], p["steps"]) for p in self.watch.passes]
        self.watch.passes.clear()
        return h

    def close(self) -> None:
        self.watch.close()
        self.procs.close()


def utd_run(game: str, actors: int, span: int, tmp: Path) -> dict[str, Any]:
    run = Run(tmp)
    try:
        names = [f"a{i}" for i in range(actors)]
        for i, name in enumerate(names):
            run.procs.actor(run.eps, name, *GAMES[game], "--seed", str(i))
        began = time.monotonic()
        h = run.until(lambda h: h["env_steps"] >= STARTS + span, 1800, f"{span} steps past learning_starts")
        overall, low, high = ratios(run.points, STARTS)
        held = sum((actor_stats(h, n) or {}).get("held_s", 0.0) for n in names)
        out = {"ratio": round(overall, 4), "window_min": round(low, 4), "window_max": round(high, 4),
               "held_share": round(held / (actors * (time.monotonic() - began)), 3),
               "grad_steps_per_s": round(h["updates_per_s"], 1)}
        print(f"{game}, {actors} actor(s): achieved / target UTD {overall:.3f} over {span} steps past learning_starts "
              f"(2,000-step stretches {low:.3f}-{high:.3f}); actors held back {out['held_share']:.0%} of the time; "
              f"learner {out['grad_steps_per_s']} updates/s")
        return out
    finally:
        run.close()


def restart_run(span: int, tmp: Path) -> float:
    ckpt = ("--weights-path", str(tmp / "ckpt" / "live.sacl"), "--save-interval", "100")
    run = Run(tmp, *ckpt)
    try:
        names = ("r0", "r1")
        for i, n in enumerate(names):
            run.procs.actor(run.eps, n, "--env", "Pendulum-v1", "--seed", str(i), "--flow-timeout-s", "60")
        h = run.until(lambda h: h["env_steps"] >= STARTS + span // 2 and (h.get("saver") or {}).get("saves", 0) >= 1,
                      900, "half the span and a checkpoint")
        first = [p for p in run.points if p[0] >= STARTS]
        run.learner.send_signal(signal.SIGKILL)
        run.learner.wait(10)
        run.watch.close()
        run.watch = Watch(run.eps["metrics"])
        run.learner = run.procs.learner(run.eps, *LEARNER, *ckpt, name="learner2")
        resumed_from = h["env_steps"]
        h = run.until(lambda h: h["env_steps"] >= resumed_from + span, 1800, f"{span} steps after the restart")
        backlog = re.search(r"resume: (\d+) steps", run.procs.log("learner2"))
        (r0, g0), (r1, g1) = min(first), (h["env_steps"], h["grad_steps"])
        ratio = (g1 - g0) / (r1 - r0)
        print(f"restart: the resumed learner left out a backlog of {backlog.group(1) if backlog else 0} steps; "
              f"achieved / target UTD across both sessions {ratio:.3f} ({g1 - g0} updates for {r1 - r0} steps)")
        return ratio
    finally:
        run.close()


def stop_run(tmp: Path) -> float:
    run = Run(tmp)
    try:
        actor = run.procs.actor(run.eps, "w", "--env", "Pendulum-v1", "--flow-timeout-s", "60")
        run.until(lambda h: (actor_stats(h, "w") or {}).get("held_s", 0) > 0, 120, "the actor held back")
        run.learner.send_signal(signal.SIGKILL)
        run.learner.wait(10)
        time.sleep(2.0)  # the actor now waits on steps the dead learner will never settle
        actor.send_signal(signal.SIGINT)
        sent = time.monotonic()
        actor.wait(30)
        took = time.monotonic() - sent
        print(f"an actor waiting on a dead learner: SIGINT to exit {took:.2f} s")
        return took
    finally:
        run.close()


def tank_run(seconds: float, tmp: Path) -> tuple[float, float]:
    """tank-train at auto pace; (ratio over the second half of training, seconds until it settled)."""
    run_dir = tmp / "tank"
    proc = subprocess.Popen([sys.executable, "-m", "deploy", "tank-train", "--run-dir", str(run_dir), "--rounds", "0",
                             "--progress", "false"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        metrics = run_dir / "metrics.jsonl"
        deadline = time.monotonic() + 600
        while not (metrics.exists() and metrics.stat().st_size):  # timing starts at the first gradient step
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("tank-train did not start training")
            time.sleep(1.0)
        time.sleep(seconds)  # the measured span itself
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(600)
    lines = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    utd = lines[0]["utd_target"]
    t0, t1 = lines[0]["time"], lines[-1]["time"]
    mid = min(lines, key=lambda p: abs(p["time"] - (t0 + t1) / 2))
    half = (lines[-1]["steps"] - mid["steps"]) / max(1, lines[-1]["env_steps"] - mid["env_steps"]) / utd
    settled_at = t0
    for i, p in enumerate(lines):
        later = next((q for q in lines[i:] if q["env_steps"] - p["env_steps"] >= 2000), None)
        if later is None:
            break
        if not 0.9 <= (later["steps"] - p["steps"]) / (later["env_steps"] - p["env_steps"]) / utd <= 1.1:
            settled_at = later["time"]
    print(f"tank-train at auto pace: achieved / target UTD {half:.3f} over the second half of {t1 - t0:.0f} s of "
          f"training; every 2,000-step stretch within 10% after {settled_at - t0:.0f} s")
    return half, settled_at - t0


def sim_runs(n: int) -> dict[str, Any]:
    rng, stuck, worst = random.Random(29), 0, 1.0
    began = time.monotonic()
    for i in range(n):
        s = random_world(rng, i)
        out = simulate(s)
        stuck += len(deadlocks(out))
        plain = not (s.kills or s.death_at is not None or s.modes or s.leaves) and s.tolerance <= 64 \
            and s.max_debt >= 4 * s.utd * (max(s.tolerance, 4) + s.actors * s.bots)
        for r in window_ratios(out) if plain else []:
            worst = r if abs(r - 1) > abs(worst - 1) else worst
    print(f"the model: {n} random worlds in {time.monotonic() - began:.0f} s, {stuck} deadlocked waits; worst "
          f"2,000-step achieved / target UTD in the fault-free ones {worst:.3f}")
    return {"simulated_runs": n, "deadlocks": stuck, "simulated_worst_ratio": round(worst, 4)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--span", type=int, default=3000, help="env steps measured past learning_starts")
    ap.add_argument("--tank-s", type=float, default=240, help="seconds of tank-train at auto pace")
    ap.add_argument("--sim-runs", type=int, default=300)
    ap.add_argument("--skip", default="", help="parts to leave out: utd,restart,tank,stop,sim")
    args = ap.parse_args()
    skip = set(args.skip.split(","))
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-flow-") as tmp_name:
        tmp = Path(tmp_name)
        if "sim" not in skip:
            result.update(sim_runs(args.sim_runs))
        if "stop" not in skip:
            result["stop_s_waiting_actor"] = round(stop_run(tmp / "stop"), 3)
        if "utd" not in skip:
            detail: dict[str, dict[str, Any]] = {}
            for actors in (1, 4, 8):
                by_game = {g: utd_run(g, actors, args.span, tmp / f"{g}-{actors}") for g in GAMES}
                detail[str(actors)] = by_game
                result[f"achieved_utd_ratio_{actors}"] = max((r["ratio"] for r in by_game.values()),
                                                             key=lambda r: abs(r - 1))
            result["detail"] = detail
        if "restart" not in skip:
            result["achieved_utd_ratio_restart"] = round(restart_run(args.span, tmp / "restart"), 4)
        if "tank" not in skip:
            ratio, settle = tank_run(args.tank_s, tmp)
            result["achieved_utd_ratio_tank_auto_pace"] = round(ratio, 4)
            result["settle_s_tank_auto_pace"] = round(settle, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
