"""`saclstm tank` as a user starts it: no server is one clear line, not a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.procs import ROOT, free_port

pytest.importorskip("robocode_tank_royale")


def test_no_server_is_one_line_and_exit_1() -> None:
    port = free_port()  # nothing listens here
    out = subprocess.run([sys.executable, "-m", "deploy", "tank", "--server", f"ws://127.0.0.1:{port}",
                          "--ingest", f"tcp://127.0.0.1:{free_port()}", "--weights", f"tcp://127.0.0.1:{free_port()}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert lines == [f"saclstm tank: no game server answers at ws://127.0.0.1:{port}"], out.stderr
