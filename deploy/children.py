"""A run's child processes: started with a lifeline, logged to files, stopped the way Ctrl-C stops them.

Every launcher (`saclstm run`, `tank-train`, `tank-eval`) starts its learner, actors, tanks and
opponents here, as `python -m MODULE ...` with this interpreter, in this directory, each in its own
session (a terminal's Ctrl-C reaches only the launcher, which stops them in order) and holding a
lifeline (protocol/lifeline.py): if the launcher dies, even by SIGKILL, each child gets SIGTERM and
stops as it would on Ctrl-C. A child's output goes to `<dir>/<name>.log`, appended, so a
restarted child or a resumed run keeps what came before.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

from protocol.lifeline import child_env

# Ports this process handed out lately: each is free when picked but not yet bound (a child binds it seconds
# later), and the kernel may hand a released port out again at once. A later pick avoids them (seen: a test's
# Prometheus port picked after its learner's endpoints came back as the learner's ingest port).
_RECENT: deque[int] = deque(maxlen=4096)


def _pick(held: list[socket.socket]) -> int:
    """Bind a new socket (kept in `held`, open) to a free loopback port no recent pick has handed out."""
    for _ in range(64):
        s = socket.socket()
        held.append(s)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        if port not in _RECENT:
            _RECENT.append(port)
            return port
    raise RuntimeError("no free loopback port that was not handed out lately, in 64 tries")


def free_port() -> int:
    """A TCP port free on loopback now (for a local run's endpoints), and none handed out lately by this process."""
    held: list[socket.socket] = []
    try:
        return _pick(held)
    finally:
        for s in held:
            s.close()


def loopback(*names: str) -> dict[str, str]:
    """A free loopback endpoint for each name: {"ingest": "tcp://127.0.0.1:PORT", ...}, every port a different one
    and none handed out lately. The ports are held until all are picked: a port released at once may be handed out
    again by the next bind (seen: a learner given one port for ingest and weights could not bind, about once in
    20,000 picks)."""
    held: list[socket.socket] = []
    try:
        return {name: f"tcp://127.0.0.1:{_pick(held)}" for name in names}
    finally:
        for s in held:
            s.close()


class Children:
    """Named child processes, their logs under `dir`. Starting a name again replaces its process (a restart)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, module: str, *args: str) -> subprocess.Popen:
        """`python -m module args...`, output appended to `<dir>/<name>.log`."""
        log = open(self.dir / f"{name}.log", "ab")  # noqa: SIM115 - the child owns it
        proc = subprocess.Popen([sys.executable, "-m", module, *args], stdout=log, stderr=subprocess.STDOUT,
                                env=child_env({**os.environ, "PYTHONUNBUFFERED": "1"}), start_new_session=True)
        log.close()
        self.procs[name] = proc
        return proc

    def exited(self, name: str) -> int | None:
        """The child's exit status, or None while it runs (or was never started)."""
        proc = self.procs.get(name)
        return None if proc is None else proc.poll()

    def tail(self, name: str, lines: int = 15) -> str:
        path = self.dir / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def stop(self, names: list[str] | None = None, timeout: float = 30.0) -> dict[str, int]:
        """SIGTERM to each (all when `names` is None), then up to `timeout` seconds in all for them to end; one
        still running then is killed, with a line saying so. Their exit statuses."""
        chosen = [(n, p) for n, p in self.procs.items() if names is None or n in names]
        for _, proc in chosen:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for name, proc in chosen:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"{name} did not stop within {timeout:.0f} s; killing it", file=sys.stderr)
                proc.kill()
                proc.wait()
        return {name: proc.returncode for name, proc in chosen}
