"""Die with the parent: a process the project starts ends when whoever started it ends, however that ends.

A launcher killed with SIGKILL runs no cleanup, so its children must notice by
themselves. Linux can tell them: prctl(PR_SET_PDEATHSIG, SIGTERM) asks the
kernel to send SIGTERM when the parent dies, and a daemon stops on SIGTERM the
way it always does (the learner writes its final checkpoint, an actor flushes
and says bye). Torch-free and dependency-free, so bots and tools may call it.

    spawner:  Popen(cmd, env=lifeline.child_env())       # or preexec_fn=lifeline.preexec() for a non-Python program
    child:    lifeline.hold()                            # first thing in the entry point

Opt-in: `hold()` binds only a process whose spawner set SACLSTM_PARENT_PID, so
a daemon started by hand (nohup, systemd, a shell) is left alone. The variable
is removed from the environment once read, so the child's own children are not
bound to their grandparent by mistake.

Two rules of the kernel's: the signal follows the parent *thread* that forked
the child, so spawn from a thread that lives as long as the child (the main
thread); and the setting does not survive fork, so each generation holds its
own lifeline (survives exec, so `preexec` works for any program).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

ENV = "SACLSTM_PARENT_PID"
PR_SET_PDEATHSIG = 1


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) plus the variable that asks the child to hold a lifeline to us."""
    return {**(os.environ if env is None else env), ENV: str(os.getpid())}


def _prctl() -> Callable[[int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.prctl
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_ulong], ctypes.c_int
    return lambda option, value: fn(option, value)


def _gone(pid: int) -> bool:
    """True when `pid` no longer runs (absent, or a zombie waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def hold(sig: int = signal.SIGTERM) -> bool:
    """Bind this process to its spawner: `sig` arrives when the spawner dies.

    Returns False when no spawner asked for it (started by hand) or the platform
    cannot do it. The race: a spawner that died before the prctl sent nothing,
    so the parent is checked after it; if it is gone, `sig` is raised here now.
    """
    raw = os.environ.pop(ENV, None)
    if raw is None:
        return False
    try:
        parent = int(raw)
    except ValueError:
        return False
    prctl = _prctl()
    if prctl is None or prctl(PR_SET_PDEATHSIG, int(sig)) != 0:
        return False
    # Reparented already (to init or a subreaper): the spawner died first. A wrapper in between that
    # forks (ppid differs, spawner alive) is bound instead; it is expected to die with the spawner.
    if os.getppid() != parent and _gone(parent):
        os.kill(os.getpid(), sig)
    return True


def preexec(sig: int = signal.SIGTERM) -> Callable[[], None]:
    """A `preexec_fn` for Popen that holds the lifeline for a program that cannot call `hold` (a JVM, a
    server binary): runs in the child between fork and exec, and the setting survives the exec."""
    parent = os.getpid()
    prctl = _prctl()  # resolved before the fork: the child only calls it

    def bind() -> None:
        if prctl is not None and prctl(PR_SET_PDEATHSIG, int(sig)) == 0 and os.getppid() != parent:
            os.kill(os.getpid(), sig)

    return bind


__all__ = ["ENV", "child_env", "hold", "preexec"]
