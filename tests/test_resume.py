"""A resumed learner (issue 37, Resume): learning_starts holds after a resume as at a first start, and the
replay file's writes, periodic and final, never clobber or replace each other's newer copy.

Before the fix a resumed learner counted learning_starts against the steps its checkpoint carried, so it
trained as soon as one chunk was in its (empty) replay: 16 draws at a time from one 32-step chunk, its critic
fitting those few. And the periodic replay write and the final one shared one temp file name."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zmq

import learner.persistence as persistence
from learner.config import LearnerConfig
from learner.persistence import Persistence
from learner.replay import SequenceReplay, StepBatch
from protocol import Progress, decode
from protocol.checkpoint import decode_checkpoint
from protocol.flow import LearnerBooks, may_step, slack
from protocol.sockets import TOPIC_PROGRESS
from tests.feed import EPISODE, SMALL_LEARNER, Feeder, batch, hello
from tests.procs import Procs, Watch, endpoints

STARTS = 256  # learning_starts: 16 batches of 16 steps
TOLERANCE = 64  # an actor's flow_tolerance (the default)
LEARNER = (*SMALL_LEARNER, "--learning-starts", str(STARTS), "--utd-ratio", "1")  # the later flag wins
SENDER = "scripted"


# -- the books ------------------------------------------------------------------------------------------------


def progress(books: LearnerBooks, taken: int) -> Progress:
    """What the learner publishes, for one sender whose `taken` steps have all settled."""
    return Progress("learner", 1, books.owed_received, books.grad_steps, books.utd, books.learning_starts, 1, 1,
                    {SENDER: taken}, {SENDER: taken})


@pytest.mark.parametrize("replayed", [0, 100])
def test_resumed_books_owe_nothing_until_the_replay_holds_learning_starts(replayed: int) -> None:
    """Resumed at 5,000 steps received and 4,000 trained (learning_starts 1,000, UTD 1) with `replayed`
    transitions in the replay: the steps it lacks are not owed and the slack lets an actor send them all; the
    next is owed, and from there on the books keep flow control's invariant."""
    books = LearnerBooks(utd=1.0, learning_starts=1000, max_debt=2000)
    books.resume(received=5000, grad_steps=4000, replayed=replayed)
    lacking = 1000 - replayed
    for taken in range(0, lacking, 100):
        assert may_step(progress(books, taken), SENDER, taken, 0, TOLERANCE), f"held after {taken} of {lacking}"
        books.take(100, trainable=True)
    assert books.debt == 0 and slack(progress(books, lacking), TOLERANCE) == TOLERANCE
    books.take(1, trainable=True)
    assert books.debt == 1
    consumed = books.learning_starts + books.grad_steps / books.utd
    assert books.owed_received - consumed == books.debt / books.utd, "the invariant, once training may begin"


def test_resumed_books_with_a_replay_that_holds_learning_starts_owe_at_once() -> None:
    books = LearnerBooks(utd=2.0, learning_starts=1000, max_debt=2000)
    assert books.resume(received=5000, grad_steps=6000, replayed=1500) == 1000, "the untrained backlog"
    books.take(10, trainable=True)
    assert books.debt == 20 and books.owed_received == 4010


# -- a real learner, resumed ------------------------------------------------------------------------------


def train_and_stop(procs: Procs, live: Path, *args: str, until: Callable[[dict[str, Any]], bool]) -> None:
    """A learner fed by a Feeder until `until(health)`, then SIGTERM: its final save is the checkpoint (and,
    with --save-replay, the replay file) the test resumes from."""
    eps = endpoints()
    first = procs.learner(eps, *LEARNER, "--weights-path", str(live), *args, name="first")
    watch = Watch(eps["metrics"])
    try:
        with Feeder(eps["ingest"]):
            watch.wait(until, 120, "the first learner training")
        assert procs.stop(first) == 0, procs.log("first")[-2000:]
    finally:
        watch.close()
    assert live.exists(), procs.log("first")[-2000:]


class Scripted:
    """One sender's experience, counted: a hello, then 16-step batches of one episode after another; and the
    learner's `progress`, as an actor reads it."""

    def __init__(self, eps: dict[str, str]) -> None:
        self.ctx = zmq.Context()
        self.push = self.ctx.socket(zmq.PUSH)
        self.push.setsockopt(zmq.LINGER, 0)
        self.push.connect(eps["ingest"])
        self.sub = self.ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.SUBSCRIBE, TOPIC_PROGRESS)
        self.sub.setsockopt(zmq.LINGER, 0)
        self.sub.connect(eps["weights"])
        self.seq, self.episode, self.t, self.sent = 0, 0, 0, 0
        self.push.send(hello(SENDER, self._next()))

    def _next(self) -> int:
        self.seq += 1
        return self.seq

    def steps(self, n: int) -> None:
        """Send `n` steps (a multiple of 16)."""
        for _ in range(n // 16):
            self.push.send(batch(SENDER, self._next(), self.episode, self.t))
            self.episode, self.t = (self.episode + 1, 0) if self.t + 16 >= EPISODE else (self.episode, self.t + 16)
            self.sent += 16

    def progress(self, predicate: Callable[[Progress], bool], timeout_ms: int = 30_000) -> Progress:
        """The first `progress` that satisfies `predicate`, within the deadline."""
        while self.sub.poll(timeout_ms):
            _, frame = self.sub.recv_multipart()
            msg = decode(frame)
            if isinstance(msg, Progress) and predicate(msg):
                return msg
        raise AssertionError(f"no progress as asked within {timeout_ms} ms")

    def close(self) -> None:
        self.push.close(0)
        self.sub.close(0)
        self.ctx.term()


@pytest.fixture
def resumed(procs: Procs, tmp_path: Path) -> Iterator[tuple[Scripted, Watch, dict[str, Any]]]:
    """A learner resumed from a checkpoint without a replay file (save_replay off: an empty replay, as after
    `saclstm run` twice on one --run-dir), a scripted sender, and its first health record."""
    live = tmp_path / "ckpt" / "live.sacl"
    train_and_stop(procs, live, "--save-interval", "10", until=lambda h: h["grad_steps"] >= 20)
    eps = endpoints()
    procs.learner(eps, *LEARNER, "--weights-path", str(live), name="resumed")
    watch = Watch(eps["metrics"])
    sender: Scripted | None = None
    try:
        first = watch.wait(lambda h: h["grad_steps"] >= 20, 60, "the resumed learner, its books carried on")
        sender = Scripted(eps)
        yield sender, watch, first
    finally:
        if sender is not None:
            sender.close()
        watch.close()


@pytest.mark.slow
def test_a_resumed_learner_with_an_empty_replay_trains_only_past_learning_starts(
        resumed: tuple[Scripted, Watch, dict[str, Any]], procs: Procs) -> None:
    """Half of learning_starts in: no gradient step, nothing owed, and the actor is not held (the slack is the
    refill). The rest and 32 more in: 32 gradient steps at UTD 1, for the steps past learning_starts only."""
    sender, watch, first = resumed
    env0, grad0 = first["env_steps"], first["grad_steps"]
    assert first["replay"]["transitions"] == 0

    sender.steps(STARTS // 2)
    h = watch.wait(lambda h: h["env_steps"] == env0 + sender.sent, 30, f"{sender.sent} steps in")
    assert h["replay"]["transitions"] > 0, "the steps are in the replay"
    assert (h["grad_steps"], h["debt"]) == (grad0, 0), \
        f"trained from {h['replay']['transitions']} transitions, learning_starts {STARTS}: {h}"
    p = sender.progress(lambda p: (p.settled or {}).get(SENDER) == sender.sent)
    assert may_step(p, SENDER, sender.sent, 0, TOLERANCE), \
        f"an actor would wait on a learner that cannot train yet: slack {slack(p, TOLERANCE)}"

    sender.steps(STARTS - sender.sent + 32)
    h = watch.wait(lambda h: h["env_steps"] == env0 + sender.sent and h["grad_steps"] > grad0 and h["debt"] == 0,
                   60, "training past learning_starts")
    assert h["grad_steps"] - grad0 == 32, f"owed (sent - learning_starts) x UTD = 32 gradient steps: {h}"
    assert "training waits for 256 more steps (learning_starts 256)" in procs.log("resumed")


@pytest.mark.slow
def test_a_resumed_learner_whose_replay_file_holds_learning_starts_trains_at_once(procs: Procs,
                                                                                  tmp_path: Path) -> None:
    live = tmp_path / "ckpt" / "live.sacl"
    train_and_stop(procs, live, "--save-replay", "true", "--save-interval", "10",
                   until=lambda h: h["grad_steps"] >= 20 and h["replay"]["transitions"] >= 2 * STARTS)
    eps = endpoints()
    procs.learner(eps, *LEARNER, "--weights-path", str(live), "--save-replay", "true", name="resumed")
    watch = Watch(eps["metrics"])
    sender: Scripted | None = None
    try:
        first = watch.wait(lambda h: h["grad_steps"] >= 20, 60, "the resumed learner")
        assert first["replay"]["transitions"] >= STARTS, first["replay"]
        sender = Scripted(eps)
        sender.steps(16)
        h = watch.wait(lambda h: h["env_steps"] == first["env_steps"] + 16 and h["debt"] == 0
                       and h["grad_steps"] > first["grad_steps"], 60, "training on the restored replay")
        assert h["grad_steps"] - first["grad_steps"] == 16, h
    finally:
        if sender is not None:
            sender.close()
        watch.close()


# -- the replay file's writes ------------------------------------------------------------------------------

PERIODIC, FINAL = "saclstm-replay-write", "final-save"  # the periodic writer's thread name, and this test's


class StubSaver:
    """The checkpoint saver's part in `final`, without its process: these tests are about the replay file."""

    last_path = ""

    def __init__(self, *args: object) -> None:
        pass

    def final(self, meta: dict[str, Any], tensors: dict[str, np.ndarray], timeout: float) -> bool:
        return True

    def close(self) -> None:
        pass


class Hold:
    """Holds the named threads where they call a wrapped function, as a slow disk would, until released;
    every other call passes."""

    def __init__(self, *threads: str) -> None:
        self.reached = {t: threading.Event() for t in threads}
        self.released = {t: threading.Event() for t in threads}

    def wrap(self, fn: Callable[..., Any], when: Callable[..., bool] = lambda *a: True) -> Callable[..., Any]:
        def held(*args: Any) -> Any:
            name = threading.current_thread().name
            if name in self.reached and when(*args):
                self.reached[name].set()
                self.released[name].wait(30)
            return fn(*args)
        return held

    def wait(self, thread: str) -> None:
        assert self.reached[thread].wait(30), f"{thread} never got there"

    def release(self, thread: str | None = None) -> None:
        for name, event in self.released.items():
            if thread in (None, name):
                event.set()


def filled(steps: int) -> SequenceReplay:
    """A small replay holding `steps` steps of 16-step truncated episodes."""
    replay = SequenceReplay(capacity=400, seq_len=8, overlap=4, obs_dim=3, act_dim=1)
    f = np.float32
    for episode in range(steps // 16):
        obs = np.full((16, 3), episode, f)
        replay.add(StepBatch(("actor", "bot"), episode, 0, obs, np.zeros((16, 1), f), np.arange(16, dtype=f), obs,
                             terminated=False, truncated=True))
    return replay


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Persistence]:
    """Persistence with the replay file on, written periodically as often as asked, and a final save whose
    join on a periodic write gives up at once (that write outlives it)."""
    monkeypatch.setattr(persistence, "Saver", StubSaver)
    cfg = LearnerConfig(weights_path=str(tmp_path / "live.sacl"), save_replay=True, replay_save_s=1e-9,
                        save_timeout_s=0.05)
    yield Persistence(cfg)


def final_save(files: Persistence, replay: SequenceReplay, grad_steps: int) -> threading.Thread:
    """The shutdown save on a thread of its own (named FINAL), so a test can hold it."""
    thread = threading.Thread(target=files.final, args=({"grad_steps": grad_steps}, {}, replay), name=FINAL,
                              daemon=True)
    thread.start()
    return thread


def replay_file(directory: Path) -> tuple[int, int]:
    """(grad_steps, transitions) of replay.sacl: it decodes whole and loads into a replay."""
    meta, arrays = decode_checkpoint((directory / "replay.sacl").read_bytes())
    return int(meta["grad_steps"]), filled(0).load(arrays)


def temps(directory: Path) -> list[Path]:
    return sorted(directory.glob(".replay.sacl.tmp*"))


def join(*threads: threading.Thread | None) -> None:
    for thread in threads:
        if thread is not None:
            thread.join(30)
            assert not thread.is_alive(), f"{thread.name} did not finish"


def test_two_replay_writes_in_flight_keep_their_own_temp_files(files: Persistence, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The periodic write held after writing its temp file (at its fsync), the final one written beside it and
    held there too: two whole temp files, one per snapshot. Then the final lands and the periodic, older, is
    dropped: replay.sacl is the final snapshot, whole, and no temp file is left."""
    hold = Hold(PERIODIC, FINAL)
    monkeypatch.setattr(os, "fsync", hold.wrap(os.fsync, lambda fd: stat.S_ISREG(os.fstat(fd).st_mode)))
    older, newer = filled(48), filled(96)
    final = None
    try:
        files.replay_due(older, grad_steps=1)
        hold.wait(PERIODIC)
        final = final_save(files, newer, grad_steps=2)
        hold.wait(FINAL)
        in_flight = {int(decode_checkpoint(t.read_bytes())[0]["grad_steps"]) for t in temps(tmp_path)}
        assert len(temps(tmp_path)) == 2 and in_flight == {1, 2}, \
            f"two writes in flight share a temp file: {[t.name for t in temps(tmp_path)]}, snapshots {in_flight}"
        hold.release(FINAL)
        join(final)
        hold.release(PERIODIC)
        join(files._replay_writer)
    finally:
        hold.release()
        join(final, files._replay_writer)
    assert replay_file(tmp_path) == (2, newer.transitions) and not temps(tmp_path)


def test_a_periodic_replay_write_that_finishes_last_leaves_the_final_one(files: Persistence, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The periodic write held before it writes anything (a slow encode), the final save done meanwhile: the
    periodic one, finishing last, must not put its older copy over the final one."""
    hold = Hold(PERIODIC)
    monkeypatch.setattr(persistence, "encode_checkpoint", hold.wrap(persistence.encode_checkpoint))
    older, newer = filled(48), filled(96)
    try:
        files.replay_due(older, grad_steps=1)
        hold.wait(PERIODIC)
        join(final_save(files, newer, grad_steps=2))
        assert replay_file(tmp_path) == (2, newer.transitions)
        hold.release(PERIODIC)
        join(files._replay_writer)
    finally:
        hold.release()
        join(files._replay_writer)
    assert replay_file(tmp_path) == (2, newer.transitions), "an older replay copy replaced the final one"
    assert not temps(tmp_path)
