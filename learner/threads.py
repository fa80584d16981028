"""How the learner threads torch, so that a shared machine costs it its fair share of the CPU, not 100x its speed.

torch's CPU ops run on an OpenMP pool (libgomp here). A thread that reaches
a barrier first spins there; when another process holds the core its partner
needs, the spinner burns its own time slice waiting for a thread that cannot
run, and an update can take ten to twenty times as long (the figures, and
`tests/bench/bench_threads.py` that measures them: docs/performance.md).
No fixed choice keeps both promises: one thread never collapses but is slower
alone at large hidden sizes; PASSIVE (sleep at barriers) survives contention
but every parallel region then pays a futex wake-up, which makes it slower
alone. So the default (`threads = 0`)
chooses at run time: it starts with torch's count (the cores), keeps
libgomp's spinning wait (fastest alone), times every update, and tries the
next count down or up now and then (every 5 s, backing off to 60 s while the
other keeps losing) or at once when updates turn 1.5x slower; it keeps
whichever is faster now. A probe that loses its first update by 2x ends
there, so a collapse costs one slow update per probe. `threads = N` fixes N
threads (no tuning); with N = 1 the pool also sleeps instead of spinning.
Inter-op threads are 1: the update never forks work, and each extra pool is
one more thread to schedule. An OMP_WAIT_POLICY already in the environment is
left as the user set it.

`prepare()` runs at the learner's entry point before torch is imported (the
wait policy is read once, when libgomp loads); `apply()` after the import.
The daemon's entry point also calls `flush_denormals()` on the thread that
trains (not `Learner` itself: it would change the floating-point mode of a
process that embeds one, tests among them).
"""

from __future__ import annotations

import logging
import os
import statistics
import sys
import time
from collections import deque
from collections.abc import Callable

log = logging.getLogger("saclstm.learner")


def prepare(threads: int) -> None:
    """Environment for the OpenMP runtime, before torch loads. Only a fixed single thread changes it."""
    if threads == 1:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # one thread has no barriers: never spin, never wake
        if "torch" in sys.modules:
            log.warning("threads: torch was imported before the thread policy; OMP_WAIT_POLICY applies to "
                        "processes started from here on")


def ladder(top: int) -> tuple[int, ...]:
    """Thread counts the tuner moves between: top, halved down to 1 (2 cores: 2, 1)."""
    counts = [max(1, top)]
    while counts[-1] > 1:
        counts.append(counts[-1] // 2)
    return tuple(counts)


def apply(threads: int, tune: bool = True) -> ThreadTuner | None:
    """Set torch's pools after its import; with threads = 0 (and `tune`: the updates run on this CPU) return the
    tuner that owns the count from now on."""
    import torch

    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set, or inter-op work already ran in this process (tests, embedding)
        pass
    if threads:
        torch.set_num_threads(threads)
        return None
    counts = ladder(torch.get_num_threads())
    if len(counts) == 1 or not tune:
        return None
    return ThreadTuner(counts, torch.set_num_threads)


def flush_denormals() -> None:
    """Numbers below float32's normal range (1e-38) computed as zero, on this thread and the pool threads it
    starts (they inherit its floating-point mode). x86 computes denormals in microcode, dozens of times slower:
    as a network trains, tiny activations, gradients and Adam moments make them common, and one update at h = 64
    took 6.0-8.3 ms with them against 5.1 ms without (bench_update.py; its kernels alone 4.1 ms against 2.6).
    What they would have added is below 1e-38 of each value: nothing float32 training can see. Where the CPU
    cannot (no SSE3) torch says so, and nothing changes."""
    import torch

    if not torch.set_flush_denormal(True):
        log.info("this CPU cannot flush denormals: updates may slow where values get tiny")


class ThreadTuner:
    """Keeps the intra-op thread count whose updates are fastest now; `record` gets every update's seconds."""

    def __init__(self, counts: tuple[int, ...], set_threads: Callable[[int], None],
                 clock: Callable[[], float] = time.monotonic, window: int = 8, probe_len: int = 3,
                 base_interval_s: float = 5.0, max_interval_s: float = 60.0, slow_factor: float = 1.5,
                 gain: float = 0.9) -> None:
        self.counts, self._set, self._clock = counts, set_threads, clock
        self.probe_len, self.slow_factor, self.gain = probe_len, slow_factor, gain
        self.base_interval, self.max_interval = base_interval_s, max_interval_s
        self.index = 0  # counts[0], the most threads, is where torch starts
        self.recent: deque[float] = deque(maxlen=window)
        self.baseline: float | None = None
        self.interval = base_interval_s
        self.next_probe = clock() + base_interval_s
        self.probe: int | None = None  # index being tried
        self.probe_times: list[float] = []
        self._up_next = False  # periodic probes alternate directions where both exist
        self.switches = self.probes = 0
        self._set(self.threads)

    @property
    def threads(self) -> int:
        return self.counts[self.index]

    def record(self, seconds: float) -> None:
        if self.probe is not None:
            self._probe_step(seconds)
            return
        self.recent.append(seconds)
        if len(self.recent) < (self.recent.maxlen or 1):
            return
        level = statistics.median(self.recent)
        self.baseline = level if self.baseline is None else min(self.baseline, level)
        slow = level > self.slow_factor * self.baseline
        if slow or self._clock() >= self.next_probe:
            self._start_probe(down=slow or not self._up_next)

    def _start_probe(self, down: bool) -> None:
        step = 1 if down else -1  # a higher index is fewer threads
        target = self.index + step if 0 <= self.index + step < len(self.counts) else self.index - step
        self._up_next = not self._up_next
        self.probe, self.probe_times = target, []
        self.probes += 1
        self._set(self.counts[target])

    def _probe_step(self, seconds: float) -> None:
        self.probe_times.append(seconds)
        level = statistics.median(self.recent)
        if len(self.probe_times) == 1 and seconds > 2 * level:
            self._end_probe(won=False)  # hopeless (a collapse): back at once, one slow update spent
        elif len(self.probe_times) >= self.probe_len:
            self._end_probe(won=statistics.median(self.probe_times) < self.gain * level)

    def _end_probe(self, won: bool) -> None:
        assert self.probe is not None
        if won:
            log.info("threads: %d -> %d intra-op threads (median update %.1f -> %.1f ms)", self.threads,
                     self.counts[self.probe], statistics.median(self.recent) * 1000,
                     statistics.median(self.probe_times) * 1000)
            self.index = self.probe
            self.recent.clear()
            self.recent.extend(self.probe_times)
            self.baseline = None
            self.interval = self.base_interval
            self.switches += 1
        else:
            self.baseline = statistics.median(self.recent)  # the machine may be slower for both: judge from here
            self.interval = min(self.interval * 2, self.max_interval)
        self._set(self.threads)
        self.probe, self.probe_times = None, []
        self.next_probe = self._clock() + self.interval

    def stats(self) -> dict[str, float | int]:
        return {"threads": self.threads, "switches": self.switches, "probes": self.probes,
                "median_ms": round(statistics.median(self.recent) * 1000, 2) if self.recent else 0.0}
