"""A bot embeds the client (actor/client.py) and swaps weights in: none of that may import torch, which costs a
bot process 1.7 s and ~700 MB of RSS for nothing (its policy steps in numpy)."""

import subprocess
import sys

from tests.procs import ROOT


def test_the_bot_side_imports_leave_torch_out() -> None:
    code = ("import sys, actor.client, actor.weights, actor.policy, actor.store, actor.link; "
            "assert 'torch' not in sys.modules, 'torch imported'; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
