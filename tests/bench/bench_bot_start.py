"""How long a bot process that embeds the client takes to start, against what its libraries alone take.

Three fresh interpreters, started in turn --runs times each (medians; this machine is noisy, so the three
are interleaved and compared side by side):

    bot        `from actor.client import BotClient`, then BotClient.connect(...) for a 3-in, 2-out bot and one
               act(): everything a bot does before its first tick (no learner is there: the act is the
               uniform one, as before the first weights)
    libraries  `import numpy, zmq, msgpack`: what the client needs and cannot do without
    python     an empty interpreter (`-c pass`) with the same venv

Each is timed from spawn to exit. Last line: one JSON object (`bot_start_s`, `libraries_s`, `python_s`, and
`bot_over_libraries`).

    .venv/bin/python tests/bench/bench_bot_start.py --runs 15
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BOT = """
from actor.client import BotClient
from actor.config import ActorConfig
client = BotClient.connect(ActorConfig(ingest="tcp://127.0.0.1:9", weights="tcp://127.0.0.1:9", actor_id="b"),
                           "bot", [-1, -1, -1], [1, 1, 1], [-1, -1], [1, 1])
client.act([0.0, 0.0, 0.0])
import os; os._exit(0)
"""
PROGRAMS = {"bot": BOT, "libraries": "import numpy, zmq, msgpack", "python": "pass"}


def once(program: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", program], cwd=ROOT, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    for program in PROGRAMS.values():  # warm the page cache: the first start of each reads its files from disk
        once(program)
    times: dict[str, list[float]] = {k: [] for k in PROGRAMS}
    for _ in range(args.runs):
        for name, program in PROGRAMS.items():
            times[name].append(once(program))
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, t in med.items():
        print(f"{name:<10} median {t * 1000:6.0f} ms   (min {min(times[name]) * 1000:.0f}, max "
              f"{max(times[name]) * 1000:.0f}, {args.runs} runs)")
    print(f"a bot that embeds the client starts in {med['bot']:.3f} s; its libraries alone take {med['libraries']:.3f} s")
    print(json.dumps({"bot_start_s": round(med["bot"], 3), "libraries_s": round(med["libraries"], 3),
                      "python_s": round(med["python"], 3),
                      "bot_over_libraries": round(med["bot"] / med["libraries"], 2), "runs": args.runs,
                      "loadavg_1m": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
