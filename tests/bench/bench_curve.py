"""What CURVE costs: ingest transitions per second through the learner's ingest path, with CURVE on and off.

Same harness as bench_ingest.py (a sender process, 64 steps per message, the
real decode-validate-insert path), run twice in this process: plain, then with
CURVE (ZAP authenticator, allow list, encryption on the PUSH/PULL pair).
Last line: one JSON object.
"""

from __future__ import annotations

import json
import tempfile

from bench_ingest import measure, ours

from protocol.curve import generate


def main() -> None:
    with tempfile.TemporaryDirectory() as keys:
        generate(keys, clients=1)
        plain = measure(ours)
        curve = measure(ours, keys)
    figures = {"tps_plain": plain, "tps_curve": curve, "ratio": curve / plain}
    print(f"ingest, plain:  {plain:>12,.0f} transitions/s")
    print(f"ingest, CURVE:  {curve:>12,.0f} transitions/s")
    print(f"ratio {figures['ratio']:.2f} (target >= 0.7 at 64 steps per message)")
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
