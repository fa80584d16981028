"""Does the tank learn to win? `saclstm tank-train` for a time budget, then `saclstm tank-eval`, as a user runs them.

    .venv/bin/python tests/bench/bench_tank_learning.py --minutes 60
    .venv/bin/python tests/bench/bench_tank_learning.py --minutes 240 --run-dir runs/tank-4h   # in pieces:
        # stop it (or let a session end) and run the same line again: training resumes from the run's
        # checkpoint and its clock (tank-train counts training time across resumes); the evaluation
        # runs once the budget is spent, and goes in pieces too (an opponent evaluated is not played again).

Training is tank-train with `--config` (deploy/tank.toml: ten opponents, StopAndGo among them, the gf form with a
surfing body and the gun learned, taught by each shot's hindsight label) and `--minutes`; evaluation is tank-eval with the same `--config`, `--rounds` rounds against
each opponent (SittingDuck, SpinBot, the four training movers Oscillator, Dodger, Orbiter, StopAndGo and the four
held-out movers Pulse, Surfer, Reverser, Profiler, Wanderer, Matcher; with --minutes 240 or more, every
training opponent and every held-out one: the samples Crazy, Corners, VelociBot, MyFirstBot, Fire, the
baselines HeadOnBot and RandomBot, and the held-out movers), with the constant
action of our tank's form (tank-eval's "constant-action" side: one action every decision through the same
controls, no network) and HeadOnBot in our tank's place in the same battles. Much of a win rate comes from
the controls alone: the constant action is the figure learning has to beat. Opponents named in `--adaptive`
(default: the ten movers, which dodge, keep a habit or aim where a predictable mover goes) are summed up
apart: learned_minus_fixed_min is the least, over them, of our destroyed rate minus the constant action's,
and held_out_adaptive_min_win_rate our least destroyed rate over those of them the run never trained
against (not in its summary's opponents); both null when no adaptive opponent was evaluated. Targets
(60 minutes): SittingDuck >= 0.9 with the 95% interval's lower end >= 0.8, SpinBot >= 0.6 and above
HeadOnBot's rate, >= 0.6 against each training mover; (240 minutes) >= 0.8 against each training opponent
(the six >= 0.95), >= 0.7 against each held-out mover and learned >= constant action + 0.3 on them. Win rates count rounds in which the opponent was destroyed
by our bullets or rams (`win_rate_destroyed` in tank-eval's JSON), not rounds merely outlasted.

Last line: one JSON object (minutes, rounds, rounds_per_hour, grad_steps_per_s, win_rate_sittingduck,
win_rate_sittingduck_ci95, win_rate_spinbot, headon_win_rate_spinbot, hit_rate, and per opponent
win_rate_<opponent>, fixed_win_rate_<opponent> and headon_win_rate_<opponent>; held_out_min_win_rate,
learned_minus_fixed_min and held_out_adaptive_min_win_rate).

An evaluation a stopped run already made is read back (eval-<opponent>.json) when it is of the same checkpoint
file and round count and has the constant-action side; one made before tank-eval played that side is played again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from deploy.tank.battle import OURS, wilson  # noqa: E402
from deploy.tank.evaluate import FIXED  # noqa: E402
from deploy.tank.train import CLOCK_FILE, TrainingClock  # noqa: E402

SIX = ("SittingDuck", "SpinBot", "Walls", "RamFire", "Tracker", "TrackFire")
MOVERS = ("Oscillator", "Dodger", "Orbiter", "StopAndGo")  # in deploy/tank.toml's pool (StopAndGo since 2026-12-07)
HELD_OUT_MOVERS = ("Pulse", "Surfer", "Reverser", "Profiler", "Wanderer", "Matcher")  # Wanderer, Matcher: 2026-12-08
HELD_OUT = ("Crazy", "Corners", "VelociBot", "MyFirstBot", "Fire", "HeadOnBot", "RandomBot", *HELD_OUT_MOVERS)
ADAPTIVE = MOVERS + HELD_OUT_MOVERS  # they dodge, keep a habit, or aim where a predictable mover goes
DEFAULT_CONFIG = "deploy/tank.toml"


def train(run_dir: Path, minutes: float, extra: list[str], config: str = DEFAULT_CONFIG) -> dict[str, Any]:
    """tank-train until its clock reaches `minutes` (resuming the run in `run_dir`); its summary.json."""
    cmd = [sys.executable, "-m", "deploy", "tank-train", "--run-dir", str(run_dir), "--minutes", str(minutes),
           "--rounds", "0", "--progress", "false", "--config", config, *extra]
    print("$", " ".join(cmd[2:]), flush=True)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate()
    except KeyboardInterrupt:  # Ctrl-C: tank-train saves and writes its summary; killing it would lose that
        stop(proc)
        trained = TrainingClock(run_dir / CLOCK_FILE).before  # tank-train's own clock, kept across its pieces
        print(f"interrupted: tank-train stopped at {trained / 60:.1f} of {minutes:g} minutes (exit "
              f"{proc.returncode}); run the same line again to go on", file=sys.stderr)
        sys.exit(130)
    print("\n".join(stdout.splitlines()[-14:]), flush=True)
    if proc.returncode != 0:
        print(stderr[-3000:], file=sys.stderr)
    return json.loads((run_dir / "summary.json").read_text())


def stop(proc: subprocess.Popen, timeout: float = 300.0) -> None:
    """A child stops as Ctrl-C stops it (its own summary, its saves), then is waited for; killed only if it hangs."""
    proc.send_signal(signal.SIGINT)  # a no-op second signal when the terminal sent it to both of us
    try:
        proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


def interrupt(signum: int, frame: object) -> None:
    """SIGINT and SIGTERM stop the bench as Ctrl-C does, however it was started: a shell starting it in the
    background makes it ignore SIGINT, and a SIGTERM would otherwise end it with tank-train left running."""
    raise KeyboardInterrupt


def evaluate(checkpoint: Path, digest: str, opponent: str, rounds: int, run_dir: Path,
             config: str = DEFAULT_CONFIG) -> dict[str, Any]:
    """tank-eval's results against `opponent`; an evaluation a stopped run already made of this same checkpoint
    file and round count is read back, so the evaluation too goes in pieces."""
    out_path = run_dir / f"eval-{opponent}.json"
    if (done_before := read_back(out_path, digest, rounds)) is not None:
        print(f"{opponent}: evaluated before, this checkpoint ({out_path})", flush=True)
        return done_before
    cmd = [sys.executable, "-m", "deploy", "tank-eval", "--checkpoint", str(checkpoint), "--opponent", opponent,
           "--rounds", str(rounds), "--out", str(out_path), "--config", config]  # the form it was trained in
    print("$", " ".join(cmd[2:]), flush=True)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate()
    except KeyboardInterrupt:  # tank-eval stops its battles and keeps what it finished; the next run plays the rest
        stop(proc)
        print(f"interrupted: evaluation stopped at {opponent}; run the same line again to go on", file=sys.stderr)
        sys.exit(130)
    print(stdout.strip(), flush=True)
    if proc.returncode != 0:
        raise SystemExit(f"tank-eval failed ({proc.returncode}): {stderr[-2000:]}")
    result = json.loads(out_path.read_text())
    out_path.write_text(json.dumps(result | {"checkpoint_sha256": digest}, indent=1))
    return result["results"]


def read_back(path: Path, digest: str, rounds: int) -> dict[str, Any] | None:
    """The results of an evaluation already made of this checkpoint file and round count, with every side this
    bench reports (an older one, made before tank-eval played the constant action, has none: it is played again);
    None when there is no such evaluation."""
    try:
        done_before = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(done_before, dict) or done_before.get("checkpoint_sha256") != digest:
        return None
    results = done_before.get("results")
    if done_before.get("rounds") != rounds or not isinstance(results, dict):
        return None
    return results if all(side in results for side in (OURS, FIXED, "HeadOnBot")) else None


def destroyed(side: dict[str, Any]) -> tuple[int, int]:
    """(rounds won by destroying the opponent, rounds) of one side of tank-eval's results: the wins the targets count."""
    return round(side["win_rate_destroyed"] * side["rounds"]), side["rounds"]


def opponent_figures(opponent: str, results: dict[str, Any]) -> dict[str, Any]:
    """One opponent's keys of the last line: our tank's destroyed rate with its interval, beside the constant
    action's and HeadOnBot's in the same battles, each counted the same way."""
    key, ours = opponent.lower(), results[OURS]
    wins, n = destroyed(ours)
    fixed_wins, fixed_n = destroyed(results[FIXED])
    headon_wins, headon_n = destroyed(results["HeadOnBot"])
    return {f"win_rate_{key}": round(wins / n, 3), f"win_rate_{key}_ci95": [round(v, 3) for v in wilson(wins, n)],
            f"win_rate_{key}_any": ours["win_rate"],  # outlasted wins too
            f"hit_rate_{key}": ours.get("hit_rate"),
            f"fixed_win_rate_{key}": round(fixed_wins / fixed_n, 3),
            f"headon_win_rate_{key}": round(headon_wins / headon_n, 3)}


def held_out_min(out: dict[str, Any], opponents: list[str], trained: set[str]) -> float | None:
    """Our least destroyed rate over the opponents evaluated that the run never played: read from the run's own
    pool, so that a config that trains on one of HELD_OUT (StopAndGo, say) is not credited with it."""
    held_out = [out[f"win_rate_{o.lower()}"] for o in opponents if o not in trained]
    return min(held_out) if held_out else None


def adaptive_figures(out: dict[str, Any], opponents: list[str], adaptive: list[str],
                     trained: set[str]) -> dict[str, float | None]:
    """Over the adaptive opponents evaluated: the least margin of our destroyed rate over the constant action's,
    and our least destroyed rate over those of them never trained against; None where there are none."""
    evaluated = [o for o in opponents if o in adaptive]
    margins = [out[f"win_rate_{o.lower()}"] - out[f"fixed_win_rate_{o.lower()}"] for o in evaluated]
    held_out = [out[f"win_rate_{o.lower()}"] for o in evaluated if o not in trained]
    return {"learned_minus_fixed_min": round(min(margins), 3) if margins else None,
            "held_out_adaptive_min_win_rate": min(held_out) if held_out else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0, help="training budget (tank-train --minutes)")
    ap.add_argument("--run-dir", default="", help="the run to train or resume (default: runs/bench-tank-<date-time>)")
    ap.add_argument("--rounds", type=int, default=100, help="evaluation rounds per opponent")
    ap.add_argument("--opponents", default="", help="evaluate against these (default: SittingDuck, SpinBot, the "
                    "four training movers and the six held-out ones; with --minutes 240 or more every training "
                    "and held-out opponent)")
    ap.add_argument("--adaptive", default=",".join(ADAPTIVE), help="of the opponents evaluated, those that adapt to "
                    "our tank (comma-separated): learned_minus_fixed_min and held_out_adaptive_min_win_rate are over "
                    "these (default: the ten movers)")
    ap.add_argument("--config", default=DEFAULT_CONFIG, help="tank-train's and tank-eval's TOML (the form)")
    ap.add_argument("--train-arg", action="append", default=[], metavar="ARG", help="extra tank-train argument")
    args = ap.parse_args()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, interrupt)
    run_dir = Path(args.run_dir or f"runs/bench-tank-{time.strftime('%Y%m%d-%H%M%S')}")
    run_dir.mkdir(parents=True, exist_ok=True)
    summary = train(run_dir, args.minutes, args.train_arg, args.config)
    trained_s = float(summary.get("training_s", 0.0))
    health = summary.get("health", {})
    out: dict[str, Any] = {"minutes": round(trained_s / 60, 1), "budget_minutes": args.minutes,
                           "rounds": summary["rounds"],
                           "rounds_per_hour": round(3600 * summary["rounds"] / trained_s, 1) if trained_s else 0.0,
                           "grad_steps_per_s": round(health.get("grad_steps", 0) / trained_s, 1) if trained_s else 0.0,
                           "run_dir": str(run_dir)}
    if trained_s < 60 * args.minutes - 30:
        print(f"trained {trained_s / 60:.1f} of {args.minutes:g} minutes: run the same line again to go on")
        print(json.dumps(out | {"complete": False}))
        return
    opponents = args.opponents.split(",") if args.opponents else list(
        SIX + MOVERS + HELD_OUT if args.minutes >= 240 else SIX[:2] + MOVERS + HELD_OUT_MOVERS)
    checkpoint = run_dir / "checkpoints" / "live.sacl"
    digest = hashlib.sha256(checkpoint.read_bytes()).hexdigest()  # the evaluations read back are of this file
    shots = hits = 0.0
    adaptive = [o for o in args.adaptive.split(",") if o]
    if unplayed := [o for o in adaptive if o not in opponents]:
        print(f"--adaptive {','.join(unplayed)}: not among the opponents evaluated, left out", flush=True)
    for opponent in opponents:
        results = evaluate(checkpoint, digest, opponent, args.rounds, run_dir, args.config)
        out.update(opponent_figures(opponent, results))
        shots += results[OURS].get("shots", 0)
        hits += results[OURS].get("hits", 0)
    out["hit_rate"] = round(hits / shots, 3) if shots else None
    trained = set(summary.get("by_opponent") or SIX)  # the opponents the run played (tank-train's summary)
    if (least := held_out_min(out, opponents, trained)) is not None:
        out["held_out_min_win_rate"] = least
    out.update(adaptive_figures(out, opponents, adaptive, trained))
    print("targets: 60 min: SittingDuck >= 0.9 (CI low >= 0.8), SpinBot >= 0.6 and above HeadOnBot, >= 0.6 against "
          "each training mover; 240 min: >= 0.8 against each training opponent (the six >= 0.95), >= 0.7 against "
          "each held-out mover, learned >= constant action + 0.3 on those")
    print(json.dumps(out | {"complete": True}))


if __name__ == "__main__":
    main()
