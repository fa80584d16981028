"""What the periodic replay file costs training: updates lost to one write, as a share of a replay_save_s interval.

    .venv/bin/python tests/bench/bench_replay_save.py                      # 300,000 and 1,000,000 transitions
    .venv/bin/python tests/bench/bench_replay_save.py --transitions 20000 --window-s 2 --rounds 1   # a smoke run

With save_replay the learner writes replay.sacl every replay_save_s (learner/persistence.py,
`Persistence.replay_due`): it copies the replay's arrays on the updating thread (`_snapshot`, the
stall), then hashes, packs, writes and fsyncs them on a thread of its own, unniced (`_write_replay`),
which competes with the updates for the cores and the GIL while it runs. Here a real SequenceReplay
with the tank's shapes (observation 40, action 4, seq_len 32, overlap 16, no stored state; filled
by 2 streams in batches of 32 steps, episodes of 30-300 steps, random data) holds N transitions at
capacity N; a SAC of the tank's width (hidden = fc = 128, batch 16) trains on batches sampled from it.

Each round measures, side by side (the order alternates from round to round, so drift on this
noisy machine hits both alike):

    (a) plain:  SAC updates for --window-s seconds;
    (b) write:  the same window with one replay write started at its beginning through the real code
                path: `Persistence.replay_due` on the updating thread (the copy), the write on its thread
                into a temp directory (the system's: TMPDIR chooses it). (b) starts with no write in
                flight and (a) after (b)'s write has ended; a write that outlives the window keeps (b)
                going until it ends (said, and `write_inside_window_<n>` false: raise --window-s).

Updates lost to one write = (a)'s rate over (b)'s elapsed time - (b)'s updates, paired within the
round; it includes the stall of the copy and everything the write's thread takes from the updates.
The figure that matters is that loss as a share of the training one replay_save_s interval holds:
lost / (plain rate * replay_save_s), against the checkpoint's own bar, 5 %. Also printed: the copy's
stall in ms, the write's own seconds (wall and its thread's CPU), the file's size per transition, and
the standard error of the loss over the rounds (a window's update count moves by 10-20 % on this
machine, so the loss is only resolved to within that; the bar is 15 s of updates per write).

Run it alone: anything else on the cores moves both sides and the loss with them. The updates use
--threads torch threads (2, the cores here, which the learner's tuner keeps alone). The default run
takes about 4-5 minutes: the imports and the saver process's start (~10 s), then per size a few
seconds of filling and --rounds x 2 x --window-s (4 x 2 x 15 s), a little more while a write runs
past a window. At 1,000,000 transitions it holds about 1 GB at its peak (the replay, the copy, the
packed file's bytes) and writes a ~200 MiB file.

Last line: one JSON object (replay_write_cost_fraction_<n>, snapshot_copy_ms_<n>, write_s_<n>, ...,
plain_updates_per_s, bar).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from learner.config import LearnerConfig  # noqa: E402
from learner.networks import Arch  # noqa: E402
from learner.persistence import Persistence, ReplaySnapshot  # noqa: E402
from learner.replay import SequenceReplay, StepBatch  # noqa: E402
from learner.sac import SAC  # noqa: E402
from learner.threads import apply as apply_threads  # noqa: E402
from tests.bench.inprocess import Run, new_replay, to_batch  # noqa: E402

OBS, ACT, H, B, T, OVERLAP = 40, 4, 128, 16, 32, 16  # the tank's (deploy/tank.toml, observe = "duel")
STREAMS, FLUSH, EPISODE = 2, 32, (30, 300)  # two tanks, the actor's flush_steps, episode lengths in steps
BAR = 0.05  # the checkpoint's own: <= 5 % of training


class TimedPersistence(Persistence):
    """The learner's Persistence, timing the copy on the updating thread and the write on its own."""

    def __init__(self, cfg: LearnerConfig) -> None:
        super().__init__(cfg)
        self.copy_s = 0.0
        self.write_wall_s = self.write_cpu_s = 0.0
        self.write_end = 0.0  # perf_counter when the last write ended

    def _snapshot(self, replay: SequenceReplay, grad_steps: int) -> ReplaySnapshot:
        start = time.perf_counter()
        snap = super()._snapshot(replay, grad_steps)
        self.copy_s = time.perf_counter() - start
        return snap

    def _write_replay(self, snap: ReplaySnapshot) -> None:
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            super()._write_replay(snap)
        finally:
            self.write_cpu_s = time.thread_time() - cpu
            self.write_end = time.perf_counter()
            self.write_wall_s = self.write_end - start

    def writer(self) -> threading.Thread | None:
        return self._replay_writer


def fill(replay: SequenceReplay, n: int, seed: int = 0) -> None:
    """n steps into `replay` as the actors bring them: STREAMS streams, FLUSH steps a batch, episodes that end."""
    rng = np.random.default_rng(seed)
    pool = 4096
    obs = rng.standard_normal((pool + FLUSH + 1, OBS), dtype=np.float32)
    act = rng.uniform(-1, 1, (pool + FLUSH, ACT)).astype(np.float32)
    rew = rng.standard_normal(pool + FLUSH, dtype=np.float32)
    episode, t, left = [0] * STREAMS, [0] * STREAMS, [int(rng.integers(*EPISODE)) for _ in range(STREAMS)]
    added, i = 0, 0
    while added < n:
        s = i % STREAMS
        k = min(FLUSH, left[s], n - added)
        o = int(rng.integers(pool))
        ends = k == left[s]
        replay.add(StepBatch(("bench", f"tank{s}"), episode[s], t[s], obs[o:o + k], act[o:o + k], rew[o:o + k],
                             obs[o + 1:o + k + 1], terminated=ends, truncated=False))
        added, t[s], left[s], i = added + k, t[s] + k, left[s] - k, i + 1
        if ends:
            episode[s], t[s], left[s] = episode[s] + 1, 0, int(rng.integers(*EPISODE))


def window(sac: SAC, replay: SequenceReplay, seconds: float, files: TimedPersistence | None) -> dict[str, float]:
    """SAC updates on sampled batches for `seconds`; with `files`, one replay write started at the beginning
    (the window goes on until it has ended). Returns updates, elapsed seconds and, with a write, its figures."""
    out: dict[str, float] = {}
    start = time.perf_counter()
    if files is not None:
        files.replay_due(replay, grad_steps=1)  # due at every call (replay_save_s tiny): the copy, then the thread
        out["due_s"] = time.perf_counter() - start
        writer = files.writer()
        assert writer is not None and writer.is_alive() or files.write_end > start, "replay_due started no write"
    done = 0
    while True:
        sac.update(to_batch(replay.sample(B)))
        done += 1
        now = time.perf_counter()
        if now - start >= seconds and (files is None or not files.writer().is_alive()):  # type: ignore[union-attr]
            break
    out |= {"updates": done, "elapsed": now - start}
    if files is not None:
        out |= {"copy_s": files.copy_s, "write_wall_s": files.write_wall_s, "write_cpu_s": files.write_cpu_s,
                "inside": float(files.write_end - start <= seconds)}
    return out


def measure(n: int, args: argparse.Namespace, tmp: Path, files: TimedPersistence) -> dict[str, float]:
    cfg = LearnerConfig(hidden=H, fc=H, seq_len=T, overlap=OVERLAP, batch_size=B, capacity=n)
    run = Run(cfg)
    torch.manual_seed(0)
    sac = run.sac(Arch(OBS, ACT, cfg.hidden, cfg.fc, cfg.prev_action, cfg.prev_reward,
                       act_low=(-1.0,) * ACT, act_high=(1.0,) * ACT, memoryless=cfg.memoryless))
    replay = new_replay(run, sac)
    began = time.perf_counter()
    fill(replay, n)
    fill_s = time.perf_counter() - began
    transitions = replay.transitions
    print(f"n={n}: replay filled in {fill_s:.1f} s: {transitions} trainable transitions in {replay.n_live} chunks, "
          f"{replay.nbytes / 2**20:.1f} MiB held", flush=True)
    for _ in range(5):  # warm-up
        sac.update(to_batch(replay.sample(B)))
    path, size = tmp / "replay.sacl", 0
    rounds = []
    for r in range(args.rounds):
        got: dict[str, dict[str, float]] = {}
        for side in (("plain", "write") if r % 2 == 0 else ("write", "plain")):
            if side == "write":
                path.unlink(missing_ok=True)
            got[side] = window(sac, replay, args.window_s, files if side == "write" else None)
            if side == "write":
                if not path.exists():
                    raise SystemExit(f"n={n}: the replay write left no {path} (see the log line above)")
                size = path.stat().st_size
        plain, write = got["plain"], got["write"]
        rate = plain["updates"] / plain["elapsed"]
        lost = rate * write["elapsed"] - write["updates"]
        rounds.append({"rate": rate, "lost": lost, **{k: write[k] for k in
                                                      ("due_s", "copy_s", "write_wall_s", "write_cpu_s", "inside")}})
        print(f"  round {r + 1}: plain {plain['updates']} updates in {plain['elapsed']:.1f} s ({rate:.1f}/s); with a "
              f"write {write['updates']} in {write['elapsed']:.1f} s: {lost:.0f} updates lost; copy "
              f"{1000 * write['copy_s']:.0f} ms, write {write['write_wall_s']:.2f} s"
              f"{'' if write['inside'] else ' (OUTLIVED the window: raise --window-s)'}", flush=True)
    rate = statistics.fmean(x["rate"] for x in rounds)
    lost = statistics.fmean(x["lost"] for x in rounds)
    spread = statistics.stdev(x["lost"] for x in rounds) / len(rounds) ** 0.5 if len(rounds) > 1 else float("nan")
    per_interval = rate * args.replay_save_s
    fraction = lost / per_interval
    figures = {
        f"replay_write_cost_fraction_{n}": fraction,
        f"lost_updates_per_write_{n}": lost,
        f"snapshot_copy_ms_{n}": 1000 * statistics.fmean(x["copy_s"] for x in rounds),
        f"stall_ms_{n}": 1000 * statistics.fmean(x["due_s"] for x in rounds),
        f"write_s_{n}": statistics.fmean(x["write_wall_s"] for x in rounds),
        f"write_cpu_s_{n}": statistics.fmean(x["write_cpu_s"] for x in rounds),
        f"write_inside_window_{n}": all(x["inside"] for x in rounds),
        f"file_mib_{n}": size / 2**20,
        f"bytes_per_transition_{n}": size / transitions,
        f"plain_updates_per_s_{n}": rate,
        f"transitions_{n}": transitions,
    }
    print(f"n={n}: one write loses {lost:.0f} updates (standard error {spread:.0f} over {len(rounds)} rounds) of the "
          f"{per_interval:.0f} a {args.replay_save_s:g} s replay_save_s interval holds at {rate:.1f} updates/s: "
          f"{100 * fraction:.2f}% (bar <= {100 * BAR:g}%: {'met' if fraction <= BAR else 'NOT met'})")
    print(f"n={n}: the updating thread stalls {figures[f'stall_ms_{n}']:.0f} ms per write (the copy "
          f"{figures[f'snapshot_copy_ms_{n}']:.0f} ms) against an update's {1000 / rate:.1f} ms; the write takes "
          f"{figures[f'write_s_{n}']:.2f} s on its thread ({figures[f'write_cpu_s_{n}']:.2f} s of its CPU) against the "
          f"{args.window_s:g} s window; file {size / 2**20:.1f} MiB, {size / transitions:.0f} B a transition", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transitions", default="300000,1000000",
                        help="replay sizes to measure, comma-separated (each is also the replay's capacity)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds of (plain, write) windows per size")
    parser.add_argument("--window-s", type=float, default=15.0,
                        help="seconds per window; the write must end inside it (default 15)")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads for the updates (default 2)")
    parser.add_argument("--replay-save-s", type=float, default=LearnerConfig().replay_save_s,
                        help="the interval the cost is a share of (default: the learner's replay_save_s)")
    args = parser.parse_args()
    sizes = [int(x) for x in args.transitions.split(",") if x.strip()]
    apply_threads(args.threads, tune=False)
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-replay-save-") as tmp:
        # save_replay with a tiny replay_save_s: replay_due starts a write at every call, and the bench calls it once
        # a window. Its saver process (checkpoints) starts and idles: nothing here saves a checkpoint.
        files = TimedPersistence(LearnerConfig(weights_path=str(Path(tmp) / "live.sacl"), game="bench",
                                               save_replay=True, replay_save_s=1e-9))
        try:
            # One tiny checkpoint, waited for: the saver process (spawned, importing this script) is up and idle
            # before anything is timed, as a running learner's is.
            files.save({"grad_steps": 0, "game": "bench"}, {"x": np.zeros(1, np.float32)})
            if not files.saver.wait_idle(120):
                raise SystemExit("the saver process did not answer within 120 s")
            for n in sizes:
                figures |= measure(n, args, Path(tmp), files)
        finally:
            writer = files.writer()
            if writer is not None:
                writer.join(60)
            files.saver.close()
    rates = [v for k, v in figures.items() if k.startswith("plain_updates_per_s_")]
    summary = {"plain_updates_per_s": statistics.fmean(rates), "replay_save_s": args.replay_save_s, "bar": BAR,
               "threads": args.threads, "window_s": args.window_s, "rounds": args.rounds}
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in (figures | summary).items()}))


if __name__ == "__main__":
    main()
