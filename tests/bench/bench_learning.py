"""It must learn: saclstm against Stable-Baselines3 SAC on Pendulum-V and Pendulum-v1, same budgets, same run.

saclstm runs through the real launcher (`saclstm run`: one learner, two
actors, rate-limited at UTD 1, deploy/demo.toml) and is scored by the
launcher's deterministic eval (10 episodes). Steps and seconds to -200 are
read from the learner's metrics: the first pass whose mean return over the
last 10 training episodes reaches -200. SB3 SAC (MlpPolicy, its defaults)
is timed and scored the same way, in this process. Median over seeds.
Needs the `bench` extra (pip install -e '.[bench]'). Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
TASKS = {"pendulum_v": ([2], 30000), "pendulum": ([], 20000)}


def saclstm(task: str, seed: int, tmp: Path) -> dict[str, float | None]:
    mask, steps = TASKS[task]
    run_dir = tmp / f"{task}-{seed}"
    cmd = [sys.executable, "-m", "deploy.cli", "run", "--config", str(ROOT / "deploy" / "demo.toml"),
           "--env-steps", str(steps), "--progress", "false", "--run-dir", str(run_dir),
           f"--learner-arg=--seed={seed}", f"--actor-arg=--obs-mask={','.join(map(str, mask))}"]
    start = time.time()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    summary = json.loads((run_dir / "summary.json").read_text())
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    first = next((r for r in rows if r.get("recent_return") is not None and r["recent_return"] >= -200), None)
    return {"return": summary["eval_return"], "steps_to_minus200": first["env_steps"] if first else None,
            "seconds_to_minus200": first["time"] - start if first else None, "wall_s": time.time() - start}


def sb3(task: str, seed: int) -> dict[str, float | None]:
    import gymnasium as gym
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.evaluation import evaluate_policy

    mask, steps = TASKS[task]

    def make() -> gym.Env:
        env = gym.make("Pendulum-v1")
        if mask:
            low, high = env.observation_space.low[mask], env.observation_space.high[mask]
            env = gym.wrappers.TransformObservation(env, lambda o: o[mask], gym.spaces.Box(low, high, dtype=np.float32))
        return env

    class FirstMinus200(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.start, self.hit = time.time(), None

        def _on_step(self) -> bool:
            rets = [ep["r"] for ep in self.model.ep_info_buffer][-10:]
            if self.hit is None and len(rets) >= 1 and np.mean(rets) >= -200:
                self.hit = (self.num_timesteps, time.time() - self.start)
            return True

    model = SAC("MlpPolicy", make(), seed=seed, verbose=0, device="cpu")
    cb = FirstMinus200()
    start = time.time()
    model.learn(steps, callback=cb)
    wall = time.time() - start
    mean, _ = evaluate_policy(model, make(), n_eval_episodes=10, deterministic=True)
    return {"return": float(mean), "steps_to_minus200": cb.hit[0] if cb.hit else None,
            "seconds_to_minus200": cb.hit[1] if cb.hit else None, "wall_s": wall}


def median(results: list[dict], key: str) -> float | None:
    """Median over seeds; a seed that never reached -200 counts as infinitely slow."""
    vals = [r[key] if r[key] is not None else float("inf") for r in results]
    m = statistics.median(vals)
    return None if m == float("inf") else round(m, 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--only", choices=["saclstm", "sb3"], default=None)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds are first-seed .. first-seed + seeds - 1")
    args = ap.parse_args()
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    out: dict[str, float | None] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for task in TASKS:
            for system, fn in (("saclstm", lambda t, s: saclstm(t, s, Path(tmp))), ("sb3", sb3)):
                if args.only and system != args.only:
                    continue
                results = []
                for seed in seeds:
                    results.append(fn(task, seed))
                    print(f"{system:8} {task:11} seed {seed}: {results[-1]}", flush=True)
                prefix = "" if system == "saclstm" else "sb3_"
                for key in ("return", "steps_to_minus200", "seconds_to_minus200"):
                    out[f"{prefix}{task}_{key}"] = median(results, key)
    if out.get("pendulum_seconds_to_minus200") and out.get("sb3_pendulum_seconds_to_minus200"):
        out["seconds_ratio_vs_sb3"] = round(out["pendulum_seconds_to_minus200"] / out["sb3_pendulum_seconds_to_minus200"], 2)
    print("targets: pendulum_v_return >= -200, pendulum_return >= -200, "
          "pendulum_seconds_to_minus200 <= 1.5 x sb3_pendulum_seconds_to_minus200")
    print(json.dumps(out | {"seeds": args.seeds}))


if __name__ == "__main__":
    main()
