"""Real processes on real sockets for the integration tests, always cleaned up.

`Procs` starts daemons as child processes (logs to files under tmp_path),
and kills whatever is left when the test ends, pass or fail. `Watch`
subscribes to a learner's metrics socket and polls health maps with a
deadline: no sleeps as synchronisation.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import zmq

from deploy.children import free_port, loopback  # noqa: F401 - free_port: the tests take it from here
from protocol.lifeline import child_env

ROOT = Path(__file__).resolve().parent.parent


def endpoints() -> dict[str, str]:
    return loopback("ingest", "weights", "metrics")


class Procs:
    """Child processes of one test; `close()` kills all of them."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, module: str, *args: str, env: dict[str, str] | None = None,
              prefix: tuple[str, ...] = ()) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "ab")  # noqa: SIM115 - child owns it
        # A lifeline (protocol/lifeline.py): if pytest dies, even by SIGKILL, the child gets SIGTERM.
        full_env = child_env({**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        proc = subprocess.Popen([*prefix, sys.executable, "-m", module, *args], stdout=log, stderr=subprocess.STDOUT,
                                cwd=ROOT, env=full_env, start_new_session=True)
        log.close()
        self.procs.append((name, proc))
        return proc

    def learner(self, eps: dict[str, str], *args: str, name: str = "learner") -> subprocess.Popen:
        """A learner on `eps`; health maps every 0.25 s (not 1) so a Watch sees a change sooner (later args win)."""
        return self.start(name, "learner", "--ingest", eps["ingest"], "--weights", eps["weights"],
                          "--metrics", eps["metrics"], "--threads", "1", "--health-s", "0.25", *args)

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


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(ppid, start time in ticks, state) of `pid` from /proc, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), int(fields[19]), fields[0].decode()


def descendants(pid: int) -> dict[int, int]:
    """Every living process below `pid` (children, theirs, ...), as pid -> start time (so a reused pid
    is not mistaken for one of them later)."""
    table = {p: s for p in (int(d) for d in os.listdir("/proc") if d.isdigit()) if (s := _stat(p)) is not None}
    found: dict[int, int] = {}
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for child, (ppid, start, _) in table.items():
            if ppid == parent and child not in found:
                found[child] = start
                frontier.append(child)
    return found


def running(procs: dict[int, int]) -> list[int]:
    """Those of `procs` (pid -> start time) that still run (a zombie does not: it has ended)."""
    out = []
    for pid, start in procs.items():
        s = _stat(pid)
        if s is not None and s[1] == start and s[2] not in ("Z", "X"):
            out.append(pid)
    return out


def kill_all(procs: dict[int, int]) -> None:
    """SIGKILL those of `procs` still running: a test's last resort for processes outside its Procs."""
    for pid in running(procs):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
