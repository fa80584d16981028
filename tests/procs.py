"""Real processes on real sockets for the integration tests, always cleaned up.

`Procs` starts daemons as child processes (logs to files under tmp_path),
and kills whatever is left when the test ends, pass or fail. `Watch`
subscribes to a learner's metrics socket and polls health maps with a
deadline: no sleeps as synchronisation.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import zmq

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def endpoints() -> dict[str, str]:
    return {name: f"tcp://127.0.0.1:{free_port()}" for name in ("ingest", "weights", "metrics")}


class Procs:
    """Child processes of one test; `close()` kills all of them."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, module: str, *args: str, env: dict[str, str] | None = None,
              prefix: tuple[str, ...] = ()) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "ab")  # noqa: SIM115 - child owns it
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        proc = subprocess.Popen([*prefix, sys.executable, "-m", module, *args], stdout=log, stderr=subprocess.STDOUT,
                                cwd=ROOT, env=full_env, start_new_session=True)
        log.close()
        self.procs.append((name, proc))
        return proc

    def learner(self, eps: dict[str, str], *args: str, name: str = "learner") -> subprocess.Popen:
        return self.start(name, "learner", "--ingest", eps["ingest"], "--weights", eps["weights"],
                          "--metrics", eps["metrics"], "--threads", "1", *args)

    def actor(self, eps: dict[str, str], name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        return self.start(name, "actor", "--ingest", eps["ingest"], "--weights", eps["weights"],
                          "--actor-id", name, *args, env=env)

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self, proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if proc.poll() is None:
            proc.send_signal(sig)
        return proc.wait(timeout=timeout)

    def close(self) -> None:
        for _, proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=10)


class Watch:
    """The learner's metrics socket, read with deadlines."""

    def __init__(self, endpoint: str, keys: Any = None) -> None:
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.SUB)
        if keys is not None:
            keys.apply(self.sock)
        self.sock.setsockopt(zmq.SUBSCRIBE, b"")
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)
        self.last: dict[str, Any] = {}
        self.passes: list[dict[str, Any]] = []

    def wait(self, predicate: Callable[[dict[str, Any]], bool], timeout: float, what: str) -> dict[str, Any]:
        """Poll health maps until `predicate(health)` holds; fail with the last one seen."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.sock.poll(100):
                topic, payload = self.sock.recv_multipart()
                data = msgpack.unpackb(payload, strict_map_key=False)
                if topic == b"metrics":
                    self.passes.append(data)
                    continue
                self.last = data
                if predicate(data):
                    return data
        raise AssertionError(f"timed out after {timeout} s waiting for {what}; last health: {self.last}")

    def close(self) -> None:
        self.sock.close(0)
        self.ctx.term()


def actor_stats(health: dict[str, Any], sender: str) -> dict[str, Any] | None:
    return next((a for a in health.get("actors", []) if a["sender"] == sender), None)
