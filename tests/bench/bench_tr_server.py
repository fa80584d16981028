"""Turns per second of our Tank Royale server at TPS -1 with official-API bots, each its own process.

The server runs as its own process (`python -m actor.bots.tankroyale.server`), N bots
(tests/tankroyale/bots.py: spin and walk, on the official Python bot API) connect to it, and our
controller starts one long game and times the observer ticks; after --turns ticks it stops the game.
Beside the rate: CPU seconds per turn of the server process and of the bots together, to show which
side limits the rate. Last line: one JSON object.

    .venv/bin/python tests/bench/bench_tr_server.py --bots 4 --turns 3000
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actor.bots.tankroyale.controller import Controller, GameAborted  # noqa: E402
from actor.bots.tankroyale.engine import Setup  # noqa: E402
from tests.procs import ROOT, free_port  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process and its waited-for children, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / TICKS


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bots", type=int, default=4)
    ap.add_argument("--turns", type=int, default=3000)
    args = ap.parse_args()
    port, tmp = free_port(), Path(tempfile.mkdtemp(prefix="bench_tr_"))
    url = f"ws://127.0.0.1:{port}"
    procs = []

    def spawn(*cmd: str, log: str) -> subprocess.Popen:
        out = open(tmp / log, "wb")  # noqa: SIM115 - the child owns it
        proc = subprocess.Popen([sys.executable, "-m", *cmd], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                start_new_session=True)
        procs.append(proc)
        return proc
    try:
        server = spawn("actor.bots.tankroyale.server", "--port", str(port), "--log-level", "WARNING", log="server.log")
        deadline = time.monotonic() + 30
        while "listening on" not in (tmp / "server.log").read_text():  # the bot API does not retry a connect
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("the server did not start: " + (tmp / "server.log").read_text())
            time.sleep(0.05)
        names = [f"Bench{i}" for i in range(args.bots)]
        bots = [spawn("tests.tankroyale.bots", "spin" if i % 2 == 0 else "walk", "--name", name, "--url", url,
                      "--log", str(tmp / f"{name}.jsonl"), log=f"{name}.log") for i, name in enumerate(names)]
        ctl = Controller(url)
        stamps: list[float] = []
        cpu: dict[str, float] = {}

        def on_tick(_: dict) -> None:
            stamps.append(time.monotonic())
            if len(stamps) == 100:  # warmed up: start the clocks
                cpu["server"] = cpu_seconds(server.pid)
                cpu["bots"] = sum(cpu_seconds(b.pid) for b in bots)
            elif len(stamps) == 100 + args.turns:
                cpu["server"] = cpu_seconds(server.pid) - cpu["server"]
                cpu["bots"] = sum(cpu_seconds(b.pid) for b in bots) - cpu["bots"]
                ctl.stop_game()
        with ctl:
            ctl.wait_for_bots(names, 30)
            try:
                ctl.play(Setup(number_of_rounds=10_000, turn_timeout_us=30_000, ready_timeout_us=10_000_000), names,
                         on_tick=on_tick, timeout=600)
            except GameAborted:
                pass
        span = stamps[100 + args.turns - 1] - stamps[100]
        rate = (args.turns - 1) / span
        result = {"bots": args.bots, "turns": args.turns, "turns_per_s": round(rate, 1),
                  "server_cpu_ms_per_turn": round(1000 * cpu["server"] / args.turns, 3),
                  "bots_cpu_ms_per_turn": round(1000 * cpu["bots"] / args.turns, 3), "cpus": os.cpu_count()}
        print(f"{args.bots} official-API bots, TPS -1: {rate:.0f} turns/s; server {result['server_cpu_ms_per_turn']} "
              f"ms CPU a turn, bots {result['bots_cpu_ms_per_turn']} ms CPU a turn (all {args.bots} together)")
        print(json.dumps(result))
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


if __name__ == "__main__":
    main()
