"""Validated encode+decode of experience batches beside plain msgpack of the same map.

Tank Royale shapes: 35-dim observation, 4-dim action. The raw figure packs and
unpacks the very same wire map with no validation and no numpy, so the ratio
is what validation and typed messages cost. Last line: one JSON object.
"""

from __future__ import annotations

import json
import time

import msgpack
import numpy as np

from protocol import Experience, decode, encode


def batch(n: int) -> Experience:
    rng = np.random.default_rng(0)
    f = np.float32
    term = np.zeros(n, bool)
    term[-1] = True
    return Experience("bench", 1, "tank", 0, 0, 3, rng.standard_normal((n, 35)).astype(f),
                      rng.uniform(-1, 1, (n, 4)).astype(f), rng.standard_normal(n).astype(f),
                      rng.standard_normal((n, 35)).astype(f), term, np.zeros(n, bool))


def rates(fns: dict[str, tuple], rounds: int = 8, seconds: float = 0.25) -> dict[str, float]:
    """Transitions per second of each fn, best round of `rounds`. The candidates take turns
    round by round, so a slow patch of this noisy machine hits them alike, not one of them."""
    best = dict.fromkeys(fns, 0.0)
    for _ in range(rounds):
        for name, (fn, steps_per_call) in fns.items():
            calls, start = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - start) < seconds:
                for _ in range(100):
                    fn()
                calls += 100
            best[name] = max(best[name], calls * steps_per_call / elapsed)
    return best


def main() -> None:
    one, many = batch(1), batch(64)
    wire = msgpack.unpackb(encode(many))
    figures = rates({
        "validated_tps_b1": (lambda: decode(encode(one)), 1),
        "validated_tps_b64": (lambda: decode(encode(many)), 64),
        "raw_tps_b64": (lambda: msgpack.unpackb(msgpack.packb(wire, use_bin_type=True)), 64),
    })
    figures["ratio_b64"] = figures["validated_tps_b64"] / figures["raw_tps_b64"]
    print(f"validated encode+decode, 1 step/msg:   {figures['validated_tps_b1']:>14,.0f} transitions/s")
    print(f"validated encode+decode, 64 steps/msg: {figures['validated_tps_b64']:>14,.0f} transitions/s "
          f"({1e6 / figures['validated_tps_b64']:.3f} us/transition)")
    print(f"plain msgpack pack+unpack, 64 steps:   {figures['raw_tps_b64']:>14,.0f} transitions/s "
          f"({1e6 / figures['raw_tps_b64']:.3f} us/transition)")
    print(f"ratio validated/raw at 64 steps: {figures['ratio_b64']:.2f} (target >= 0.5)")
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
