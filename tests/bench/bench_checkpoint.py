"""What checkpointing costs training: updates per second at h=256 with a save every 20 steps, beside none.

The real saver subprocess writes real files (temp + fsync + rename) into a
temp directory; the learner thread pays only for the snapshot copy and the
pipe writes of a sender thread. Plain and saving runs alternate in rounds,
so drift on this noisy machine hits both alike; each plain run starts with
no save in flight. Last line: one JSON object.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import torch

from learner.networks import Arch
from learner.sac import SAC, Batch, SACConfig
from learner.saver import Saver
from learner.state import snapshot

B, T, OBS, ACT, H = 16, 32, 35, 4, 256


def batch() -> Batch:
    g = torch.Generator().manual_seed(0)
    return Batch(torch.randn(B, T + 1, OBS, generator=g), torch.rand(B, T, ACT, generator=g) * 2 - 1,
                 torch.zeros(B, ACT), torch.zeros(B), torch.randn(B, T, generator=g), torch.zeros(B, T), torch.ones(B, T))


def run(sac: SAC, b: Batch, steps: int, saver: Saver | None, every: int, base: int) -> float:
    start = time.perf_counter()
    for i in range(1, steps + 1):
        sac.update(b)
        if saver is not None and (base + i) % every == 0:
            saver.request({"grad_steps": base + i, "game": "bench"}, snapshot(sac))
    return steps / (time.perf_counter() - start)


def main() -> None:
    torch.set_num_threads(2)
    sac = SAC(Arch(OBS, ACT, hidden=H, act_low=(-1.0,) * ACT, act_high=(1.0,) * ACT), SACConfig())
    b = batch()
    plain, saving = [], []
    with tempfile.TemporaryDirectory() as tmp:
        saver = Saver(Path(tmp) / "live.sacl", keep=3)
        run(sac, b, 5, None, 20, 0)
        base = 0
        for _ in range(4):
            saver.wait_idle(30)  # the plain side starts with no save in flight, or it would pay for the last one
            plain.append(run(sac, b, 60, None, 20, base))
            saving.append(run(sac, b, 60, saver, 20, base))
            base += 60
        saver.wait_idle(30)
        stats = saver.stats()
        saver.close()
        size = (Path(tmp) / "live.sacl").stat().st_size
    figures = {
        "updates_per_s_plain": sum(plain) / len(plain), "updates_per_s_saving": sum(saving) / len(saving),
        "save_ms": stats["last_ms"],
    }
    figures["slowdown_pct"] = 100 * (1 - figures["updates_per_s_saving"] / figures["updates_per_s_plain"])
    print(f"h={H}: plain {figures['updates_per_s_plain']:.1f} updates/s, saving every 20 steps "
          f"{figures['updates_per_s_saving']:.1f} updates/s: slowdown {figures['slowdown_pct']:.1f}% (target <= 5)")
    print(f"saver: {stats['saves']} saves, {stats['skipped']} skipped while busy, {stats['failures']} failed; "
          f"last save {figures['save_ms']:.0f} ms in the saver process, file {size / 2**20:.1f} MiB")
    print(json.dumps({k: round(v, 3) for k, v in figures.items()} | {"saves": stats["saves"], "skipped": stats["skipped"]}))


if __name__ == "__main__":
    main()
