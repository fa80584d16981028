from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.procs import Procs, endpoints

# A non-daemon thread left running keeps the interpreter from exiting after the summary line, and CI then
# waits out its whole time limit with every test green. So a test that leaves one fails, naming it, and a
# session that still has one at its end reports the stacks and exits with a failure instead of hanging.
THREAD_GRACE_S = 10.0
EXIT_WATCHDOG_S = 120.0


def _live_non_daemon(exclude: set[threading.Thread]) -> list[threading.Thread]:
    return [t for t in threading.enumerate()
            if t.is_alive() and not t.daemon and t is not threading.main_thread() and t not in exclude]


def _stacks(threads: list[threading.Thread]) -> str:
    frames = sys._current_frames()
    return "\n".join(f"thread {t.name!r}:\n" + "".join(traceback.format_stack(frames[t.ident]))
                     for t in threads if t.ident in frames)


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + THREAD_GRACE_S
    for t in _live_non_daemon(before):
        t.join(max(0.0, deadline - time.monotonic()))
    leaked = _live_non_daemon(before)
    if leaked:
        pytest.fail(f"the test left {len(leaked)} non-daemon thread(s) running, which would hang the "
                    f"interpreter's exit:\n{_stacks(leaked)}", pytrace=False)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Last hook: a session that cannot exit says why and exits failed, rather than running out CI's clock."""
    leaked = _live_non_daemon(set())
    if leaked:
        sys.stderr.write(f"\nnon-daemon threads still running at exit:\n{_stacks(leaked)}\n")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(1)
    faulthandler.dump_traceback_later(EXIT_WATCHDOG_S, exit=True)  # any other hang in shutdown: stacks, exit 1


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Procs]:
    p = Procs(tmp_path)
    try:
        yield p
    finally:
        p.close()


@pytest.fixture
def eps() -> dict[str, str]:
    return endpoints()
