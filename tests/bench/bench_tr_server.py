"""What a game turn costs in CPU on our Tank Royale server: scripted opponents as bot processes or in the server.

tank-train's game, measured three ways side by side in one run: our tank (`saclstm tank --fixed-action`, the
official bot API, the shipped deploy/tank.toml's form; no learner) against one scripted opponent, on our
server run as its own process at TPS -1 (as fast as the bots answer, turn timeout 30 ms). First with the
opponent as a bot process on the official bot API (`python -m actor.bots.tankroyale.opponents NAME`), then
played by the server itself (`--house NAME`, actor/bots/tankroyale/house.py), and that again with our tank on
the bot API as shipped (without botapi.cheaper_messages: each tick parsed asking every class's signature
again, each intent indented). For each: turns per second,
CPU ms per turn of the server and of the bot processes (utime + stime from /proc, over --turns turns after
100 of warm-up), skipped bot-turns. Last line: one JSON object.

    .venv/bin/python tests/bench/bench_tr_server.py --opponent Orbiter --turns 6000
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
OURS = "saclstm-tank"


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process and its waited-for children, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / TICKS


# Our tank with botapi.cheaper_messages made a no-op before tank.py takes its name: the bot API as shipped.
AS_SHIPPED = ("import sys; import actor.bots.tankroyale.botapi as b; b.cheaper_messages = lambda: None; "
              "from deploy.cli import main; sys.exit(main())")


def measure(opponent: str, house: bool, turns: int, tmp: Path, shipped_api: bool = False) -> dict[str, float]:
    """One game of our tank against `opponent`; its figures over `turns` turns after 100 of warm-up."""
    port = free_port()
    url = f"ws://127.0.0.1:{port}"
    kind = ("house" if house else "process") + ("-shipped" if shipped_api else "")
    procs: list[subprocess.Popen] = []

    def spawn(*cmd: str, log: str) -> subprocess.Popen:
        out = open(tmp / f"{kind}-{log}", "wb")  # noqa: SIM115 - the child owns it
        run = ["-c", AS_SHIPPED, *cmd[1:]] if shipped_api and cmd[0] == "deploy" else ["-m", *cmd]
        proc = subprocess.Popen([sys.executable, *run], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                start_new_session=True)
        procs.append(proc)
        return proc
    try:
        server = spawn("actor.bots.tankroyale.server", "--port", str(port), "--log-level", "WARNING",
                       *(["--house", opponent] if house else []), log="server.log")
        deadline = time.monotonic() + 30
        while "listening on" not in (tmp / f"{kind}-server.log").read_text():  # the bot API does not retry
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("the server did not start: " + (tmp / f"{kind}-server.log").read_text())
            time.sleep(0.05)
        bots = [spawn("deploy", "tank", "--fixed-action", "--config", "deploy/tank.toml", "--server", url, "--name", OURS,
                      log="tank.log")]
        if not house:
            bots.append(spawn("actor.bots.tankroyale.opponents", opponent, "--server", url, log="opponent.log"))
        stamps: list[float] = []
        cpu: dict[str, float] = {}
        ctl = Controller(url)

        def on_tick(_: dict) -> None:
            stamps.append(time.monotonic())
            if len(stamps) == 100:  # warmed up: start the clocks
                cpu["server"], cpu["bots"] = cpu_seconds(server.pid), sum(cpu_seconds(b.pid) for b in bots)
            elif len(stamps) == 100 + turns:
                cpu["server"] = cpu_seconds(server.pid) - cpu["server"]
                cpu["bots"] = sum(cpu_seconds(b.pid) for b in bots) - cpu["bots"]
                ctl.stop_game()
        with ctl:
            ctl.wait_for_bots([OURS, opponent], 60)
            try:
                ctl.play(Setup(number_of_rounds=10_000, turn_timeout_us=30_000, ready_timeout_us=10_000_000),
                         [OURS, opponent], on_tick=on_tick, timeout=900)
            except GameAborted:
                pass
        server.send_signal(signal.SIGTERM)  # it prints its stats as it ends
        server.wait(30)
        text = (tmp / f"{kind}-server.log").read_text()
        stats = json.loads(text[text.rindex('{"stats"'):].splitlines()[0])["stats"]
        skipped = stats.get("skipped_turns", 0)
        span = stamps[100 + turns - 1] - stamps[100]
        return {"turns_per_s": round((turns - 1) / span, 1),
                "server_cpu_ms_per_turn": round(1000 * cpu["server"] / turns, 3),
                "bots_cpu_ms_per_turn": round(1000 * cpu["bots"] / turns, 3),
                "cpu_ms_per_turn": round(1000 * (cpu["server"] + cpu["bots"]) / turns, 3),
                "skipped_bot_turns": skipped, "bot_turns": 2 * stats.get("turns", 0)}
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--opponent", default="Orbiter", help="the scripted opponent (a mover: rounds last)")
    ap.add_argument("--turns", type=int, default=6000)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_tr_"))
    runs = {"process": measure(args.opponent, False, args.turns, tmp),
            "house": measure(args.opponent, True, args.turns, tmp),
            "house_shipped_api": measure(args.opponent, True, args.turns, tmp, shipped_api=True)}
    wheres = {"process": "a bot process", "house": "in the server", "house_shipped_api": "the same, bot API as shipped"}
    for kind, r in runs.items():
        print(f"{args.opponent} {wheres[kind]:<28} {r['turns_per_s']:7.0f} turns/s   CPU a turn: server "
              f"{r['server_cpu_ms_per_turn']:.3f} ms + bots {r['bots_cpu_ms_per_turn']:.3f} ms = "
              f"{r['cpu_ms_per_turn']:.3f} ms   skipped {r['skipped_bot_turns']} of {r['bot_turns']} bot-turns")
    ratio = runs["process"]["cpu_ms_per_turn"] / runs["house"]["cpu_ms_per_turn"]
    print(f"in the server, a turn costs 1/{ratio:.2f} of its CPU with a bot process; turns/s x"
          f"{runs['house']['turns_per_s'] / runs['process']['turns_per_s']:.2f}")
    repaired = runs["house"]["bots_cpu_ms_per_turn"] / runs["house_shipped_api"]["bots_cpu_ms_per_turn"]
    print(f"our tank's CPU a turn with the bot API's repairs: x{repaired:.2f} of the bot API as shipped")
    result = {"opponent": args.opponent, "turns": args.turns, "cpus": os.cpu_count(),
              **{f"{k}_{kind}": v for kind, r in runs.items() for k, v in r.items()},
              "cpu_ratio_process_over_house": round(ratio, 2),
              "turns_per_s_ratio_house_over_process": round(runs["house"]["turns_per_s"]
                                                            / runs["process"]["turns_per_s"], 2),
              "tank_cpu_ratio_repaired_over_shipped_api": round(repaired, 2)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
