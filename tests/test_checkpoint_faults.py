"""Checkpoints under fire: kill -9 the saver and the learner across many saves; failing saves."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from protocol.checkpoint import decode_checkpoint, numbered
from tests.feed import SMALL_LEARNER, Feeder
from tests.procs import Procs, Watch, endpoints

pytestmark = pytest.mark.slow


def run_until(procs: Procs, predicate, what: str, *args: str) -> None:
    """A fed learner on fresh endpoints until `predicate(health)`, then SIGTERM (its final save) and exit 0."""
    eps = endpoints()
    learner = procs.learner(eps, *SMALL_LEARNER, *args, name=f"learner-{len(procs.procs)}")
    watch = Watch(eps["metrics"])
    try:
        with Feeder(eps["ingest"]):
            watch.wait(predicate, 60, what)
        assert procs.stop(learner) == 0
    finally:
        watch.close()


def verify_live(live: Path) -> dict:
    meta, _ = decode_checkpoint(live.read_bytes())
    return meta


def test_kill_saver_repeatedly_every_live_file_verifies(procs: Procs, eps: dict[str, str], tmp_path: Path) -> None:
    live = tmp_path / "ckpt" / "live.sacl"
    learner = procs.learner(eps, *SMALL_LEARNER, "--weights-path", str(live), "--save-interval", "5")
    watch = Watch(eps["metrics"])
    rng = random.Random(0)
    kills, checked = 0, 0
    try:
        with Feeder(eps["ingest"]):
            h = watch.wait(lambda h: (h.get("saver") or {}).get("saves", 0) >= 3, 60, "first saves")
            while h["saver"]["saves"] < 25 or kills < 8:
                time.sleep(rng.uniform(0.0, 0.3))
                os.kill(h["saver"]["pid"], signal.SIGKILL)
                kills += 1
                if live.exists():
                    verify_live(live)
                    checked += 1
                h = watch.wait(lambda h, k=kills: (h.get("saver") or {}).get("restarts", 0) >= k
                               and h["saver"]["alive"], 30, f"saver restart {kills}")
                watch.wait(lambda h, s=h["saver"]["saves"]: h["saver"]["saves"] > s, 30, "a save after the restart")
                h = watch.last
        assert kills >= 8 and checked >= 8 and h["saver"]["saves"] >= 25
        # The learner still trains off its debt and saves every 5 steps: between a save's write and its pruning
        # there are 4 files for a moment. Counted once it has stopped (its final save prunes like any other).
        assert procs.stop(learner) == 0
        assert len(numbered(live.parent)) <= 3
        meta = verify_live(live)
        assert meta["grad_steps"] > 0 and list(meta)[:5] == ["v", "game", "episodes", "rev", "updatedAt"]
        assert "the saver process died" in procs.log("learner")
    finally:
        watch.close()


def test_kill_learner_repeatedly_it_resumes_from_the_newest(procs: Procs, tmp_path: Path) -> None:
    live = tmp_path / "ckpt" / "live.sacl"
    rng = random.Random(1)
    last_version, last_steps = 0, 0
    for round_ in range(3):
        eps = endpoints()
        learner = procs.learner(eps, *SMALL_LEARNER, "--weights-path", str(live), "--save-interval", "5",
                                name=f"learner{round_}")
        watch = Watch(eps["metrics"])
        try:
            with Feeder(eps["ingest"]):
                h = watch.wait(lambda h, v=last_version: h["version"] > v and (h.get("saver") or {}).get("saves", 0) >= 3,
                               120, "training and saves")  # a bound: a loaded machine starts torch slowly
                if round_:  # resumed, not restarted from zero: at least where the last checkpoint stood
                    assert h["grad_steps"] >= last_steps, (h["grad_steps"], last_steps)
                time.sleep(rng.uniform(0.0, 1.0))
                learner.send_signal(signal.SIGKILL)
                learner.wait(10)
        finally:
            watch.close()
        meta = verify_live(live)
        assert meta["version"] >= last_version and meta["grad_steps"] >= last_steps
        last_version, last_steps = meta["version"], meta["grad_steps"]
        if round_:
            assert "resuming from" in procs.log(f"learner{round_}")


def test_failing_saves_are_counted_and_the_old_checkpoint_stays(procs: Procs, tmp_path: Path) -> None:
    live = tmp_path / "ckpt" / "live.sacl"
    run_until(procs, lambda h: (h.get("saver") or {}).get("saves", 0) >= 2, "saves",
              "--weights-path", str(live), "--save-interval", "20")
    before = live.read_bytes()
    eps = endpoints()
    procs.learner(eps, *SMALL_LEARNER, "--weights-path", str(live), "--save-interval", "5",
                  "--max-checkpoint-bytes", "4096", name="limited")
    watch = Watch(eps["metrics"])
    try:
        with Feeder(eps["ingest"]):
            h = watch.wait(lambda h: (h.get("saver") or {}).get("failures", 0) >= 3, 60, "failed saves")
            steps = h["grad_steps"]
            watch.wait(lambda h: h["grad_steps"] > steps + 50, 60, "training going on")
        assert live.read_bytes() == before
        assert "checkpoint save failed" in procs.log("limited")
    finally:
        watch.close()


def test_restart_resumes_bitwise_with_replay(procs: Procs, tmp_path: Path) -> None:
    """SIGTERM writes a final checkpoint (and the replay); the next learner publishes exactly those weights."""
    import numpy as np
    import zmq

    from learner.networks import Arch, actor_layout
    from protocol import Weights, decode

    live = tmp_path / "ckpt" / "live.sacl"
    run_until(procs, lambda h: h["grad_steps"] >= 200, "training", "--weights-path", str(live), "--save-replay", "true")
    meta, tensors = decode_checkpoint(live.read_bytes())
    assert (live.parent / "replay.sacl").exists()
    saved = np.concatenate([tensors[f"actor.{n}"].reshape(-1) for n, _ in actor_layout(Arch.from_wire(meta["arch"]))])

    eps = endpoints()
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"weights")
    sub.setsockopt(zmq.LINGER, 0)
    sub.connect(eps["weights"])
    try:
        procs.learner(eps, *SMALL_LEARNER, "--weights-path", str(live), "--save-replay", "true", name="second")
        assert sub.poll(60_000), "no weights from the resumed learner"
        msg = decode(sub.recv_multipart()[1])
        assert isinstance(msg, Weights)
        assert msg.version == meta["version"] + 1 and msg.grad_steps == meta["grad_steps"]
        assert np.array_equal(msg.params, saved), "resumed actor differs from the saved one"
        log = procs.log("second")
        assert "resuming from" in log and "transitions restored" in log
    finally:
        sub.close(0)
        ctx.term()


def test_a_killed_learner_resumes_with_the_replay_it_wrote_while_training(procs: Procs, tmp_path: Path) -> None:
    """With save_replay the replay file is also written while training (replay_save_s), so SIGKILL, which allows no
    shutdown save, still leaves a resume most of the experience: not the empty replay whose first thousands of
    steps undid a trained tank (docs/tank-experiments.md, cause 4)."""
    import re

    live = tmp_path / "run" / "live.sacl"
    eps = endpoints()
    args = ("--weights-path", str(live), "--save-replay", "true", "--replay-save-s", "0.5", "--save-interval", "5")
    learner = procs.learner(eps, *SMALL_LEARNER, *args, name="killed")
    watch = Watch(eps["metrics"])
    try:
        with Feeder(eps["ingest"]):
            watch.wait(lambda h: h["grad_steps"] >= 50 and (live.parent / "replay.sacl").exists(), 60,
                       "training, and a replay file written while it trains")
            learner.send_signal(signal.SIGKILL)
            learner.wait(10)
    finally:
        watch.close()
    procs.learner(endpoints(), *SMALL_LEARNER, *args, name="resumed")
    deadline, log = time.monotonic() + 60, ""
    while time.monotonic() < deadline and "transitions restored" not in log:
        log = procs.log("resumed")
        time.sleep(0.1)
    restored = re.search(r"replay: (\d+) transitions restored", log)
    assert restored and int(restored.group(1)) > 0, log


def restarted(procs: Procs, directories: dict[str, Path]) -> dict[str, Any]:
    """One learner per checkpoint directory, started together (each subscribed to first, so nothing is
    missed); the first Weights each publishes."""
    import zmq

    from protocol import Weights, decode

    ctx = zmq.Context()
    socks: dict[str, zmq.Socket] = {}
    try:
        for case, directory in directories.items():
            eps = endpoints()
            socks[case] = sock = ctx.socket(zmq.SUB)
            sock.setsockopt(zmq.SUBSCRIBE, b"weights")
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(eps["weights"])
            procs.learner(eps, *SMALL_LEARNER, "--weights-path", str(directory / "live.sacl"), name=f"restart{case}")
        out = {}
        for case, sock in socks.items():
            assert sock.poll(60_000), f"no weights from the restarted learner {case}"
            out[case] = decode(sock.recv_multipart()[1])
            assert isinstance(out[case], Weights)
        return out
    finally:
        for sock in socks.values():
            sock.close(0)
        ctx.term()


def actor_params(meta: dict, tensors: dict) -> np.ndarray:
    from learner.networks import Arch, actor_layout

    arch = Arch.from_wire(meta["arch"])
    return np.concatenate([tensors[f"actor.{n}"].reshape(-1) for n, _ in actor_layout(arch)])


def corrupt(path: Path) -> None:
    """A new file in its place (a hard link to it keeps the old bytes), one bit of its weights flipped."""
    import msgpack

    obj = msgpack.unpackb(path.read_bytes())
    name = next(n for n in obj["tensors"] if n.startswith("actor."))
    raw = bytearray(obj["tensors"][name]["data"])
    raw[0] ^= 0x01
    obj["tensors"][name]["data"] = bytes(raw)
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(msgpack.packb(obj, use_bin_type=True))
    os.replace(tmp, path)


def test_a_killed_learner_resumes_from_the_newest_valid_file(procs: Procs, tmp_path: Path) -> None:
    """Saving while fed, SIGKILLed, restarted: grad steps, weights and version continue from the newest valid file,
    the live file included; a corrupt newest falls back to the one before, with one log line. (And the saver
    ends with its learner.)"""
    import shutil

    from tests.procs import descendants, running

    live = tmp_path / "run" / "live.sacl"
    eps = endpoints()
    learner = procs.learner(eps, *SMALL_LEARNER, "--weights-path", str(live), "--save-interval", "5", name="fed")
    watch = Watch(eps["metrics"])
    try:
        with Feeder(eps["ingest"]):
            h = watch.wait(lambda h: (h.get("saver") or {}).get("saves", 0) >= 4, 60, "four saves")
            saver = {pid: start for pid, start in descendants(learner.pid).items() if pid == h["saver"]["pid"]}
            learner.send_signal(signal.SIGKILL)
            learner.wait(10)
    finally:
        watch.close()
    deadline = time.monotonic() + 10
    while running(saver) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert saver and not running(saver), "the saver outlived its learner"
    assert len(numbered(live.parent)) == 3

    # A: the newest numbered file is damaged (a new inode); the live file, linked to its old bytes, is newest.
    # B: the newest file is damaged under both names: the learner falls back to the one before.
    cases = {}
    for case in ("A", "B"):
        directory = tmp_path / case
        shutil.copytree(live.parent, directory)  # copies: no hard links between the names any more
        files = numbered(directory)
        corrupt(files[0])
        if case == "B":
            corrupt(directory / "live.sacl")
        want = directory / "live.sacl" if case == "A" else files[1]
        cases[case] = (directory, want, *decode_checkpoint(want.read_bytes()))
    assert cases["A"][2]["grad_steps"] > cases["B"][2]["grad_steps"]
    noted = {case: int((c[0] / "version").read_text()) for case, c in cases.items()}  # the killed one's last
    weights = restarted(procs, {case: c[0] for case, c in cases.items()})
    for case, (directory, want, meta, tensors) in cases.items():
        msg = weights[case]
        assert msg.grad_steps == meta["grad_steps"], (case, msg.grad_steps, meta["grad_steps"])
        assert np.array_equal(msg.params, actor_params(meta, tensors)), f"{case}: weights differ from {want.name}"
        assert msg.version == max(meta["version"], noted[case]) + 1 and msg.version > meta["version"], case
        lines = [line for line in procs.log(f"restart{case}").splitlines() if "saclstm.checkpoint" in line]
        assert len(lines) == 1 and f"resuming from {want}" in lines[0], (case, lines)
        if case == "B":
            skipped = numbered(directory)[0].name
            assert "WARNING" in lines[0] and "live.sacl: rev mismatch" in lines[0] and f"{skipped}: rev" in lines[0]
