"""The saver: a subprocess that writes checkpoints, so serialising and fsync never stall training.

The channel holds one snapshot. The learner copies its state to numpy (in
its own thread, so the snapshot is consistent), then a sender thread writes
the arrays' raw bytes down a pipe (no pickle, no copy in the learner); the
saver encodes them (hash, msgpack), writes the file atomically, updates the
live file, keeps the newest `keep` numbered files, and answers with one small
msgpack ack. A save asked for while one is in flight is skipped and counted.
A dead saver is restarted, counted and logged.

The saver yields to training: encoding and writing a checkpoint costs CPU
that a learner whose threads hold every core would otherwise lose from its
update rate (the figures: docs/performance.md). So all of it runs in the saver
process, at nice +SAVER_NICE, and the sender thread (only pipe writes) at the
same niceness.

    learner thread:   snapshot -> request()        (skipped if busy)
    sender thread:    header + raw arrays -> jobs pipe
    saver process:    encode -> write numbered file -> link live -> rotate -> ack
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from protocol.checkpoint import checkpoint_name, clean_temp, encode_checkpoint, fsync_dir, numbered, write_atomic

log = logging.getLogger("saclstm.saver")

SAVER_NICE = 10  # CFS weight 110 against the learner's 1024: a save takes the CPU training leaves over
PIPE_BYTES = 1 << 20  # fewer wake-ups per 16 MiB than the default 64 KiB pipe


def yield_cpu(nice: int = SAVER_NICE) -> None:
    """Lower this thread's priority (Linux: niceness is per thread; elsewhere, per process)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), min(19, os.getpriority(os.PRIO_PROCESS, 0) + nice))
    except (OSError, AttributeError):
        pass


def _link_live(numbered_path: Path, live: Path) -> None:
    """Point the live path at the new file atomically: hard link to a temp name, rename over."""
    tmp = live.parent / f".{live.name}.tmp-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    try:
        os.link(numbered_path, tmp)
    except OSError:  # no hard links here (some filesystems): write a copy instead
        write_atomic(live, numbered_path.read_bytes())
        return
    os.replace(tmp, live)
    fsync_dir(live.parent)


def saver_main(jobs: Connection, acks: Connection, live: str, keep: int, max_file_bytes: int) -> None:
    """The saver process: encode and write what arrives, ack each one, exit when the pipe closes."""
    yield_cpu()
    if max_file_bytes > 0:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-big write fails with EFBIG instead of killing us
    live_path = Path(live)
    directory = live_path.parent
    while True:
        try:
            meta, tensors = _receive(jobs)
        except (EOFError, OSError):
            return
        start = time.perf_counter()
        target = directory / checkpoint_name(int(meta.get("grad_steps", 0)))
        try:
            data = encode_checkpoint(meta, tensors)
            write_atomic(target, data)
            _link_live(target, live_path)
            for old in numbered(directory)[keep:]:
                old.unlink(missing_ok=True)
            ack = {"ok": True, "path": str(target), "ms": (time.perf_counter() - start) * 1000, "bytes": len(data)}
        except (OSError, TypeError, ValueError) as exc:
            ack = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "path": str(target)}
        try:
            acks.send_bytes(msgpack.packb(ack))
        except (BrokenPipeError, OSError):
            return


def _send(jobs: Connection, meta: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
    """One job: a msgpack header (meta, then each array's name, dtype and shape), then each array's bytes."""
    arrays = [(name, arr if arr.flags.c_contiguous else arr.copy(order="C")) for name, arr in tensors.items()]
    jobs.send_bytes(msgpack.packb({"meta": meta, "arrays": [[n, a.dtype.str, list(a.shape)] for n, a in arrays]},
                                  use_bin_type=True))
    for _, arr in arrays:
        jobs.send_bytes(arr.reshape(-1).view(np.uint8).data)  # the array's own memory: the kernel copies, not Python


def _receive(jobs: Connection) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    head = msgpack.unpackb(jobs.recv_bytes(), raw=False, strict_map_key=False)
    tensors = {name: np.frombuffer(jobs.recv_bytes(), np.dtype(dtype)).reshape(shape)
               for name, dtype, shape in head["arrays"]}
    return head["meta"], tensors


def _widen(conn: Connection) -> None:
    try:
        import fcntl

        fcntl.fcntl(conn.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass  # not Linux, or over the user's pipe limit: the default pipe works, with more wake-ups


class Saver:
    """The learner's handle on the saver process."""

    def __init__(self, live: Path, keep: int = 3, max_file_bytes: int = 0) -> None:
        self.live, self.keep, self.max_file_bytes = live, keep, max_file_bytes
        self.live.parent.mkdir(parents=True, exist_ok=True)
        removed = clean_temp(self.live.parent)
        if removed:
            log.warning("removed %d temp file(s) left by a crash in %s", removed, self.live.parent)
        self.saves = self.skipped = self.failures = self.restarts = 0
        self.last_ms = 0.0
        self.last_path = ""
        self.busy = False
        self._busy_since = 0.0
        self._sender: threading.Thread | None = None
        self._unsent = False
        self._ctx = mp.get_context("spawn")
        self._start()

    def _start(self) -> None:
        job_r, self._jobs = self._ctx.Pipe(duplex=False)
        _widen(self._jobs)
        self._acks, ack_w = self._ctx.Pipe(duplex=False)
        self.proc = self._ctx.Process(target=saver_main, args=(job_r, ack_w, str(self.live), self.keep,
                                                               self.max_file_bytes), name="saclstm-saver", daemon=True)
        self.proc.start()
        job_r.close()
        ack_w.close()
        self.busy = False

    def request(self, meta: dict[str, Any], tensors: dict[str, np.ndarray]) -> bool:
        """Queue a save; False (and counted) when one is still in flight."""
        self.poll()
        if self.busy:
            self.skipped += 1
            return False
        self.busy, self._busy_since = True, time.monotonic()
        self._sender = threading.Thread(target=self._send, args=(meta, tensors), name="saclstm-save-send", daemon=True)
        self._sender.start()
        return True

    def _send(self, meta: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        yield_cpu()
        try:
            _send(self._jobs, meta, tensors)
        except (BrokenPipeError, OSError):
            pass  # the saver died; poll() restarts it and the next request goes through
        except (TypeError, ValueError) as exc:  # state msgpack cannot carry: this save is lost, not the saver
            log.error("checkpoint save not sent: %s", exc)
            self._unsent = True

    def poll(self) -> None:
        """Collect acks; restart a dead saver."""
        if self._unsent and self._sender is not None and not self._sender.is_alive():
            self._unsent, self.busy = False, False
            self.failures += 1
        while self._acks.poll(0):
            try:
                ack = msgpack.unpackb(self._acks.recv_bytes())
            except (EOFError, OSError):
                break
            self.busy = False
            if ack["ok"]:
                self.saves += 1
                self.last_ms, self.last_path = ack["ms"], ack["path"]
            else:
                self.failures += 1
                log.error("checkpoint save failed, training goes on, the previous checkpoint stays: %s", ack["error"])
        if not self.proc.is_alive():
            self.restarts += 1
            if self.busy:
                self.failures += 1
            log.error("the saver process died (exit %s); restarting it (restart %d)", self.proc.exitcode, self.restarts)
            self._close_pipes()
            self._start()

    def wait_idle(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.busy and time.monotonic() < deadline:
            self._acks.poll(0.05)
            self.poll()
        return not self.busy

    def final(self, meta: dict[str, Any], tensors: dict[str, np.ndarray], timeout: float) -> bool:
        """The shutdown save: wait for any save in flight, send this one, wait for its ack (bounded)."""
        if not self.wait_idle(timeout / 2):
            log.error("the saver is still busy after %.0f s; the final save is skipped", timeout / 2)
            return False
        before = self.saves
        self.request(meta, tensors)
        ok = self.wait_idle(timeout / 2) and self.saves > before
        if not ok:
            log.error("the final checkpoint save did not complete within %.0f s", timeout / 2)
        return ok

    def stats(self) -> dict[str, Any]:
        return {"saves": self.saves, "skipped": self.skipped, "failures": self.failures, "restarts": self.restarts,
                "busy": self.busy, "last_ms": round(self.last_ms, 1), "last_path": self.last_path,
                "pid": self.proc.pid, "alive": self.proc.is_alive()}

    def _close_pipes(self) -> None:
        for conn in (self._jobs, self._acks):
            conn.close()

    def close(self) -> None:
        self._close_pipes()
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
