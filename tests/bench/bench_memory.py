"""How far back saclstm remembers: the memory tasks (actor/envs/memory.py), trained in-process.

Each task is learned from scratch with the learner's own parts (SequenceReplay,
SAC.update) and a loop that acts like the actor daemon: `bots` episodes side by
side, the newest weights at every step, experience sent every `flush` steps
with the actor's LSTM state at the start of the batch (what use_stored_state
reads), and UTD 1 (one gradient step per transition once learning_starts is
reached). No sockets: what is measured is learning, not transport.

Score: the deterministic eval return (20 episodes, fixed seeds) as a fraction
of the way from the memoryless return (0) to perfect (1), printed beside both.
Targets: recall_k16 and recall_k32 >= 0.9, recall_k64 >= 0.7 within 100k steps.
recall_k64 plays 128-step episodes (64 would leave nothing to answer); its
memoryless return is -32. Settings are LearnerConfig's defaults with hidden =
fc = 64 (deploy/demo.toml's widths; hidden 128 for recall_k64, which must hold
64 values at once) and each task's memory_horizon (the span it
needs, up to 64, as docs/memory.md tells a user to set it), then --set over them; mapped to
the update's settings as the learner maps them (learner.model.sac_config).

    python tests/bench/bench_memory.py --tasks recall_k4,recall_k16 --steps 40000
    python tests/bench/bench_memory.py --tasks recall_k16 --set recall_weight=0   # without the recall loss

Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import gymnasium as gym
import torch

torch.set_num_threads(1)  # a shared machine: one core per run

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actor.envs.memory import DELAYED_RECALL, FIRST_RECALL, fraction  # noqa: E402
from tests.bench.inprocess import Bots, Run, evaluate, run_settings, to_batch, train  # noqa: E402,F401 - re-exported

# name -> (env id, kwargs, default step budget, the task's own settings: memory_horizon = the span it needs,
# up to 64, as docs/memory.md tells a user to set it; --set goes over them)
TASKS: dict[str, tuple[str, dict[str, int], int, list[str]]] = {
    "recall_k4": (DELAYED_RECALL, {"k": 4}, 40_000, ["memory_horizon=4"]),
    "recall_k16": (DELAYED_RECALL, {"k": 16}, 100_000, ["memory_horizon=16"]),
    "recall_k32": (DELAYED_RECALL, {"k": 32}, 100_000, ["memory_horizon=32"]),
    # a delay line of 64 values: hidden 64 holds 32 (k = 32 learned), not 64; hidden 128 learned it (0.91 at 100k).
    "recall_k64": (DELAYED_RECALL, {"k": 64, "length": 128}, 100_000, ["memory_horizon=64", "hidden=128"]),
    "first_64": (FIRST_RECALL, {"length": 64}, 100_000, ["memory_horizon=63"]),
    # 255 would make 271-step chunks (8x the update); stored state carries the one held value across 80-step ones.
    "first_256": (FIRST_RECALL, {"length": 256}, 100_000, ["memory_horizon=64"]),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default=",".join(TASKS), help=f"comma-separated subset of {', '.join(TASKS)}")
    ap.add_argument("--steps", type=int, default=0, help="env steps per task (0 = each task's budget)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a learner setting (LearnerConfig key), or bots/flush; repeatable")
    ap.add_argument("--log-every", type=int, default=5000)
    args = ap.parse_args()
    out: dict[str, object] = {}
    for name in args.tasks.split(","):
        if name not in TASKS:
            raise SystemExit(f"--tasks: unknown task {name!r} (known: {', '.join(TASKS)})")
        env_id, kwargs, budget, own = TASKS[name]
        run = run_settings(own + args.set)
        out[f"{name}_settings"] = own + args.set
        steps = args.steps or budget
        start = time.time()
        sac = train(env_id, kwargs, steps, run, args.seed, args.log_every)
        ret = evaluate(sac, env_id, kwargs)
        memoryless = gym.make(env_id, **kwargs).unwrapped.memoryless_return
        out[name] = round(fraction(ret, memoryless), 3)
        out[f"{name}_return"], out[f"{name}_memoryless"], out[f"{name}_perfect"] = round(ret, 2), memoryless, 0.0
        out[f"{name}_steps"] = steps
        print(f"{name}: return {ret:.2f} (memoryless {memoryless}, perfect 0) -> fraction {out[name]:.3f} "
              f"after {steps} steps, {time.time() - start:.0f} s", flush=True)
    print("targets: recall_k16 >= 0.9, recall_k32 >= 0.9, recall_k64 >= 0.7 within 100k steps each")
    print(json.dumps(out | {"settings": args.set, "seed": args.seed}))


if __name__ == "__main__":
    main()
