"""What CURVE costs: ingest transitions per second through the learner's ingest path, with CURVE on and off.

Same harness as bench_ingest.py (a sender process, 64 steps per message, the
real decode-validate-insert path), timed from the first send to the last
receive so that encryption and decryption are inside the clock: plain, then
CURVE (ZAP authenticator, allow list, encryption on the PUSH/PULL pair), two
rounds each taking turns, best of each.
Last line: one JSON object.
"""

from __future__ import annotations

import json
import tempfile

from bench_ingest import best_taking_turns, measure, ours

from protocol.curve import generate


def main() -> None:
    with tempfile.TemporaryDirectory() as keys:
        generate(keys, clients=1)
        best = best_taking_turns({"plain": lambda: measure(ours, queued=False),
                                  "curve": lambda: measure(ours, keys, queued=False)}, rounds=2)
    plain, curve = best["plain"], best["curve"]
    figures = {"tps_plain": plain, "tps_curve": curve, "ratio": curve / plain}
    print(f"ingest, plain:  {plain:>12,.0f} transitions/s")
    print(f"ingest, CURVE:  {curve:>12,.0f} transitions/s")
    print(f"ratio {figures['ratio']:.2f} (target >= 0.7 at 64 steps per message)")
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
