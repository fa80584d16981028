"""Tank Royale battles on this machine: server speed, env speed, skipped turns at 30 TPS, rounds per hour, win rates.

    .venv/bin/python tests/bench/bench_tank_battle.py --checkpoint runs/tank-env-1/checkpoints/live.sacl

Parts (each prints its figure beside what it is compared with; the last line is one JSON object):
- server_turns_per_s_4bots: our server, 4 official-API bots answering as fast as they can (bench_tr_server.py);
  env_steps_per_s: the in-process TankRoyale-v0 (bench_tr_env.py), beside the same game over the network.
- skipped_turn_pct_30tps: `saclstm tank-train` with a learner at h=256, 4 of our tanks and 4 opponents (SpinBot)
  at 30 TPS for --seconds; the share of bot-turns the servers played without an intent (target <= 1%).
- rounds_per_hour: the same command at auto pace (2 tanks, SittingDuck and SpinBot, the tank.toml defaults).
- with --checkpoint: win rates in `saclstm tank-eval` battles against SittingDuck (stationary) and SpinBot
  (spinner), beside the constant action of its form (fixed_win_rate_*: the controls alone), RandomBot and
  HeadOnBot in our tank's place in the same battles.
The thread policy is whatever the learner defaults to in this build (its log says which).
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


def last_json(cmd: list[str], timeout: float = 900) -> dict[str, Any]:
    out = subprocess.run([sys.executable, *cmd], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{cmd} failed ({out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    print("\n".join(out.stdout.splitlines()[:-1][-6:]))
    return json.loads(lines[-1])


def train_for(seconds: float, *args: str) -> dict[str, Any]:
    """`saclstm tank-train ...` for `seconds`, then Ctrl-C; its summary.json (and the wall time it played)."""
    run = Path(tempfile.mkdtemp(prefix="bench-tank-"))
    proc = subprocess.Popen([sys.executable, "-m", "deploy", "tank-train", "--run-dir", str(run), "--rounds", "0",
                             "--progress", "false", *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    log = run / "learner.log"
    deadline = time.monotonic() + 300
    while not (log.exists() and "hello from tank" in log.read_text()):  # timing starts once the tanks play
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError(f"tank-train did not start: {proc.communicate()[0][-3000:]}")
        time.sleep(0.5)
    started = time.monotonic()
    time.sleep(seconds)  # the measured span itself: nothing to poll
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=600)[0]
    played = time.monotonic() - started
    summary = json.loads((run / "summary.json").read_text())
    print("\n".join(out.splitlines()[-9:]))
    return {**summary, "played_s": played, "run_dir": str(run)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", help="a trained tank's checkpoint: adds the win rates")
    ap.add_argument("--eval-rounds", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=120, help="how long each tank-train measurement plays")
    ap.add_argument("--skip", default="", help="parts to leave out: speed,skipped,rounds")
    args = ap.parse_args()
    skip = set(args.skip.split(","))
    result: dict[str, Any] = {}
    if "speed" not in skip:
        server = last_json(["tests/bench/bench_tr_server.py", "--bots", "4", "--turns", "2000"])
        env = last_json(["tests/bench/bench_tr_env.py"])
        result["server_turns_per_s_4bots"] = server["turns_per_s"]
        result["env_steps_per_s"] = env["env_steps_per_s"]["SpinBot"]  # against the spinner (per opponent: below)
        result["env_steps_per_s_by_opponent"] = env["env_steps_per_s"]
        result["network_turns_per_s_2bots"] = env["network_turns_per_s_spinbot_vs_walls"]
        print(f"server, 4 bots at TPS -1: {server['turns_per_s']} turns/s; in-process env: "
              f"{result['env_steps_per_s']} steps/s against the network game's {result['network_turns_per_s_2bots']}")
    if "skipped" not in skip:
        s = train_for(args.seconds, "--tanks", "4", "--opponents", "SpinBot", "--tps", "30",
                      "--learner-arg=--hidden=256", "--learner-arg=--fc=256")
        pct = 100 * s["skipped_turns"] / max(1, 2 * s["turns"])  # two bots answer each server turn
        result["skipped_turn_pct_30tps"] = round(pct, 3)
        result["turns_30tps"] = s["turns"]
        print(f"1 learner (h=256) + 4 tanks + 4 opponents at 30 TPS for {s['played_s']:.0f} s: {s['turns']} server "
              f"turns, {s['skipped_turns']} bot-turns skipped = {pct:.2f}% (target <= 1%)")
    if "rounds" not in skip:
        s = train_for(args.seconds, "--tanks", "2")
        result["rounds_per_hour"] = round(s["rounds"] * 3600 / s["played_s"])
        h = s["health"]
        result["utd_achieved_auto_pace"] = round(h.get("utd_achieved", 0.0), 3)  # past learning_starts
        print(f"training at auto pace (2 tanks): {s['rounds']} rounds in {s['played_s']:.0f} s = "
              f"{result['rounds_per_hour']} rounds/hour, UTD {result['utd_achieved_auto_pace']} (target 1)")
    if args.checkpoint:
        from deploy.tank.evaluate import FIXED, evaluate

        for key, opponent in (("stationary", "SittingDuck"), ("spinner", "SpinBot")):
            r = evaluate(args.checkpoint, opponent, args.eval_rounds)
            result[f"win_rate_{key}"] = round(r["saclstm-tank"]["win_rate"], 3)
            result[f"win_rate_{key}_ci95"] = r["saclstm-tank"]["ci95"]
            result[f"random_win_rate_{key}"] = round(r["RandomBot"]["win_rate"], 3)
            result[f"headon_win_rate_{key}"] = round(r["HeadOnBot"]["win_rate"], 3)
            result[f"fixed_win_rate_{key}"] = round(r[FIXED]["win_rate"], 3)  # the controls alone, no network
            print(f"against {opponent}, {args.eval_rounds} rounds: ours {r['saclstm-tank']['win_rate']:.2f} "
                  f"(95% CI {r['saclstm-tank']['ci95']}), constant action {r[FIXED]['win_rate']:.2f}, "
                  f"RandomBot {r['RandomBot']['win_rate']:.2f}, "
                  f"HeadOnBot {r['HeadOnBot']['win_rate']:.2f}; mean score ours {r['saclstm-tank']['mean_score']:.1f}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
