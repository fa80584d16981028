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


def test_the_actor_daemon_runs_without_torch() -> None:
    """The daemon's own start-up path (flags, config, environment, client) stays torch-free too: an unknown
    environment id makes it stop right after building everything before the loop."""
    code = ("import sys; from actor.cli import main; rc = main(['--env', 'NoSuchEnv-v0', '--ingest', "
            "'tcp://127.0.0.1:1', '--weights', 'tcp://127.0.0.1:2']); "
            "assert 'torch' not in sys.modules, 'torch imported'; print('rc', rc)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "rc 2", out.stderr[-2000:]
