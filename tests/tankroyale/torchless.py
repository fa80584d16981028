"""`python -m tests.tankroyale.torchless MODULE ARGS...`: run MODULE as `python -m MODULE ARGS...` does, and print at
exit whether torch was imported. A bot process that loads torch pays ~1.7 s and ~700 MB for nothing (its policy
steps in numpy; tests/test_bot_without_torch.py), so a test can check a real bot process stayed without it."""

from __future__ import annotations

import atexit
import runpy
import sys


def main() -> None:
    module = sys.argv[1]
    sys.argv = [module, *sys.argv[2:]]
    atexit.register(lambda: print(f"torch imported: {'torch' in sys.modules}", flush=True))
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
