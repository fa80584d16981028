"""`saclstm tank` as a user starts it: no server is one clear line, not a traceback; signals end it at once."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest
import zmq

from actor.bots.tankroyale.controller import Controller, GameAborted
from actor.bots.tankroyale.engine import Setup
from actor.bots.tankroyale.server import ServerHandle, run_server
from protocol import Bye, Experience, decode
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


def test_three_sigterms_end_a_playing_tank_within_5_s_with_one_line(procs: Procs) -> None:
    """Three SIGTERMs 50 ms apart (a launcher and a lifeline both stopping it, say) at a tank in a game: the
    first stops it, the others wait for that stop. It exits within 5 s, says bye once and logs one line, with
    no traceback (the handlers never send on the link the main thread is closing)."""
    setup = Setup(arena_width=400, arena_height=400, number_of_rounds=1000, gun_cooling_rate=0.5,
                  max_inactivity_turns=10_000, turn_timeout_us=300_000)  # a game that outlasts the test
    server = run_server(port=0, tps=-1, seed=5, setup=setup)
    ctx = zmq.Context()
    inbox = ctx.socket(zmq.PULL)  # the learner's end of the tank's socket
    port = inbox.bind_to_random_port("tcp://127.0.0.1")
    got: list[object] = []
    ctl = Controller(server.url)
    player = threading.Thread()

    def take(ms: int) -> None:
        if inbox.poll(ms):
            got.append(decode(inbox.recv()))

    try:
        tank = procs.start("tank", "deploy", "tank", "--server", server.url, "--ingest", f"tcp://127.0.0.1:{port}",
                           "--weights", f"tcp://127.0.0.1:{free_port()}", "--actor-id", "t", "--flush-steps", "4")
        procs.start("duck", "actor.bots.tankroyale.opponents", "SittingDuck", "--server", server.url)
        ctl.wait_for_bots(["saclstm-tank", "SittingDuck"], 60)

        def play() -> None:
            with contextlib.suppress(GameAborted):
                ctl.play(setup, ["saclstm-tank", "SittingDuck"])
        player = threading.Thread(target=play, daemon=True)
        player.start()
        deadline = time.monotonic() + 60
        while sum(isinstance(m, Experience) for m in got) < 3:  # playing, and sending
            assert time.monotonic() < deadline and tank.poll() is None, procs.log("tank")
            take(50)
        for _ in range(3):
            tank.send_signal(signal.SIGTERM)
            time.sleep(0.05)  # the spacing under test, not a wait for anything
        deadline = time.monotonic() + 5.0
        while tank.poll() is None and time.monotonic() < deadline:
            take(20)
        log = procs.log("tank")
        assert tank.poll() == 0, f"still running 5 s after three SIGTERMs:\n{log[-3000:]}"
        while inbox.poll(0):
            take(0)
        assert "Traceback" not in log and "Error" not in log, log[-3000:]
        stops = [line for line in log.splitlines() if "stopped by SIGTERM" in line]
        assert len(stops) == 1, log[-3000:]
        assert [m.sender for m in got if isinstance(m, Bye)] == ["t"], "one bye, the last word"
    finally:
        with contextlib.suppress(Exception):
            ctl.stop_game()
        player.join(10) if player.is_alive() else None
        ctl.close()
        procs.close()
        server.close()
        inbox.close(0)
        ctx.term()
