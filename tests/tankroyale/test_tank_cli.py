"""`saclstm tank` as a user starts it: no server is one clear line, not a traceback."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from actor.bots.tankroyale.server import ServerHandle, run_server
from tests.procs import ROOT, Procs, free_port

pytest.importorskip("robocode_tank_royale")


def test_no_server_is_one_line_and_exit_1() -> None:
    port = free_port()  # nothing listens here
    out = subprocess.run([sys.executable, "-m", "deploy", "tank", "--server", f"ws://127.0.0.1:{port}",
                          "--ingest", f"tcp://127.0.0.1:{free_port()}", "--weights", f"tcp://127.0.0.1:{free_port()}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert lines == [f"saclstm tank: no game server answers at ws://127.0.0.1:{port}"], out.stderr


def _until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_server_that_shuts_down_is_waited_for_or_left(procs: Procs) -> None:
    """A server shutting down closes cleanly (code 1001), which the official bot API alone never notices:
    with --retry-s the tank joins the server that comes back at the same URL; without, it exits 0."""
    server = run_server(port=0)
    url, port = server.url, server.port
    sinks = ["--ingest", f"tcp://127.0.0.1:{free_port()}", "--weights", f"tcp://127.0.0.1:{free_port()}"]
    again: ServerHandle | None = None
    try:
        waits = procs.start("waits", "deploy", "tank", "--server", url, "--retry-s", "60", *sinks)
        leaves = procs.start("leaves", "deploy", "tank", "--server", url, *sinks)
        _until(lambda: server.stats["handshakes_bot"] == 2, 60, "both tanks to join")
        server.close()
        assert leaves.wait(30) == 0, procs.log("leaves")
        again = run_server(port=port)
        _until(lambda: again is not None and again.stats["handshakes_bot"] == 1, 60, "the waiting tank to rejoin")
        assert waits.poll() is None
    finally:
        server.close()
        if again is not None:
            again.close()
