"""100,000 malformed frames at a live learner, mixed with a real actor's traffic: nothing lost, nothing crashes.

Every fuzz frame comes from senders that never said hello, so even a bit
flip that happens to leave a valid experience message is rejected
(`unknown_sender`): the learner must count exactly as many rejects as fuzz
frames were sent. The real actor's books must close exactly.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import msgpack
import numpy as np
import pytest
import zmq

from protocol import Experience, encode
from tests.procs import Procs, Watch, actor_stats

pytestmark = pytest.mark.slow

FRAMES = 100_000
LIMIT = 1 << 20  # the learner's max_message_bytes in this test


def valid(seq: int, obs_dim: int = 3, n: int = 8, sender: str = "stranger") -> bytes:
    rng = np.random.default_rng(seq)
    f = np.float32
    return encode(Experience(sender, seq, "bot", 0, seq * n, 1, rng.standard_normal((n, obs_dim)).astype(f),
                             rng.uniform(-2, 2, (n, 1)).astype(f), rng.standard_normal(n).astype(f),
                             rng.standard_normal((n, obs_dim)).astype(f), np.zeros(n, bool), np.zeros(n, bool)))


def fuzz_frames(rng: random.Random) -> tuple[list[bytes], dict[str, int]]:
    """FRAMES bad frames and, for the classes whose reason is certain, how many of each reason to expect."""
    base = msgpack.unpackb(valid(1))
    expect: dict[str, int] = {}
    frames: list[bytes] = []

    def add(frame: bytes, reason: str | None) -> None:
        frames.append(frame)
        if reason:
            expect[reason] = expect.get(reason, 0) + 1

    def mutated(**kw: object) -> bytes:
        return msgpack.packb({**base, **kw}, use_bin_type=True)

    nan = {"dtype": "f32", "shape": [8, 3], "data": np.full(24, np.nan, np.float32).tobytes()}
    inf = {"dtype": "f32", "shape": [8], "data": np.full(8, np.inf, np.float32).tobytes()}
    classes = [
        lambda i: add(rng.randbytes(rng.randint(0, 300)), None),  # random bytes
        lambda i: add(valid(i)[: rng.randint(0, 200)], "undecodable"),  # truncated
        lambda i: add(_flip(valid(i), rng), None),  # bit-flipped
        lambda i: add(mutated(seq="seven"), "bad_type"),  # wrong types
        lambda i: add(mutated(obs=nan), "non_finite"),
        lambda i: add(mutated(reward=inf), "non_finite"),
        lambda i: add(valid(i, obs_dim=5), "dims_mismatch"),  # wrong dims
        lambda i: add(mutated(kind=rng.choice(["teleport", "", "EXPERIENCE", "weights2"])), "unknown_kind"),
        lambda i: add(b"\xdb\xff\xff\xff\xf0abc", "undecodable"),  # a str declaring 4 GB
        lambda i: add(b"\xc6\x7f\xff\xff\xffxyz", "undecodable"),  # a bin declaring 2 GB
        lambda i: add(valid(i), "unknown_sender"),  # valid, but this sender never said hello
    ]
    for i in range(FRAMES - 20):
        rng.choice(classes)(i)
    for _ in range(20):  # oversize: above the learner's limit, below ZMQ's hard cap
        add(b"\x00" * (LIMIT + 1000), "too_large")
    rng.shuffle(frames)
    return frames, expect


def _flip(frame: bytes, rng: random.Random) -> bytes:
    data = bytearray(frame)
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def test_hundred_thousand_bad_frames_beside_a_real_actor(procs: Procs, eps: dict[str, str], tmp_path: Path) -> None:
    frames, expect = fuzz_frames(random.Random(42))
    learner = procs.learner(eps, "--hidden", "16", "--fc", "16", "--seq-len", "8", "--overlap", "4",
                            "--batch-size", "8", "--learning-starts", "200", "--max-message-bytes", str(LIMIT))
    watch = Watch(eps["metrics"])
    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 5000)
    push.connect(eps["ingest"])
    try:
        watch.wait(lambda h: True, 60, "the learner")
        actor = procs.actor(eps, "real", "--env", "Pendulum-v1", "--flow", "realtime", "--max-steps", "3000",
                            "--report", str(tmp_path / "real.json"))
        watch.wait(lambda h: (actor_stats(h, "real") or {}).get("received", 0) > 0, 60, "the real actor")
        for frame in frames:
            push.send(frame)  # blocking: every fuzz frame must arrive, or the count below means nothing
        assert actor.wait(timeout=240) == 0
        h = watch.wait(lambda h: sum(h["rejects"].values()) >= FRAMES and (actor_stats(h, "real") or {}).get("bye"),
                       240, "every fuzz frame counted and the actor's bye")
        assert learner.poll() is None, "the learner died of input"
        assert sum(h["rejects"].values()) == FRAMES, h["rejects"]
        for reason, count in expect.items():
            assert h["rejects"].get(reason, 0) >= count, (reason, count, h["rejects"])
        report, stats = json.loads((tmp_path / "real.json").read_text()), actor_stats(h, "real")
        assert report["steps"] == report["sent"] + report["dropped"]
        assert stats["received"] + stats["rejected"] == report["sent"] and stats["rejected"] == 0
        assert "Traceback" not in procs.log("learner")
        (tmp_path / "figures.json").write_text(json.dumps({"frames": FRAMES, "rejects": h["rejects"],
                                                           "actor_sent": report["sent"], "received": stats["received"]}))
        print(json.dumps({"fuzz_frames": FRAMES, "rejects": h["rejects"], "actor_sent": report["sent"],
                          "actor_received": stats["received"], "actor_dropped": report["dropped"]}))
    finally:
        push.close(0)
        ctx.term()
        watch.close()
