"""A real learner process, fed over a real socket by a scripted sender."""

from __future__ import annotations

import json
import time
from pathlib import Path

import msgpack
import numpy as np
import pytest
import zmq

from protocol import Experience, Hello, ProtocolError, Weights, decode, encode
from tests.procs import Procs, Watch, actor_stats, endpoints

SMALL = ("--obs-dim", "3", "--act-dim", "1", "--act-low", "-2", "--act-high", "2", "--learning-starts", "64",
         "--seq-len", "8", "--overlap", "4", "--hidden", "16", "--fc", "16", "--batch-size", "4", "--publish-hz", "50")


def hello(seq: int = 0) -> bytes:
    one = np.ones(1, np.float32)
    return encode(Hello("scripted", seq, "bot", 3, 1, -np.ones(3, np.float32), np.ones(3, np.float32), -2 * one, 2 * one))


def batch(seq: int, episode: int, t0: int, n: int = 16, obs_dim: int = 3) -> bytes:
    rng = np.random.default_rng(seq)
    f = np.float32
    last = t0 + n >= 200
    return encode(Experience("scripted", seq, "bot", episode, t0, 1, rng.standard_normal((n, obs_dim)).astype(f),
                             rng.uniform(-2, 2, (n, 1)).astype(f), rng.standard_normal(n).astype(f),
                             rng.standard_normal((n, obs_dim)).astype(f), np.zeros(n, bool),
                             np.arange(n) == n - 1 if last else np.zeros(n, bool)))


def weights_sub(ctx: zmq.Context, endpoint: str) -> zmq.Socket:
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"weights")
    sub.setsockopt(zmq.LINGER, 0)
    sub.connect(endpoint)
    return sub


def next_weights(sub: zmq.Socket, timeout: float) -> Weights:
    if not sub.poll(int(timeout * 1000)):
        raise AssertionError(f"no weights within {timeout} s")
    _, frame = sub.recv_multipart()
    msg = decode(frame)
    assert isinstance(msg, Weights)
    return msg


def test_learner_trains_publishes_and_survives_bad_frames(procs: Procs, eps: dict[str, str]) -> None:
    learner = procs.learner(eps, *SMALL)
    ctx = zmq.Context()
    watch = Watch(eps["metrics"])
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    push.connect(eps["ingest"])
    sub = weights_sub(ctx, eps["weights"])
    try:
        watch.wait(lambda h: True, 60, "the learner to come up")
        time.sleep(0.3)  # the SUB subscription must reach the PUB before hello asks for a publish
        t_hello = time.monotonic()
        push.send(hello())
        first = next_weights(sub, 1.0)
        assert time.monotonic() - t_hello < 1.0 and first.version >= 1

        bad = [b"\x00garbage", msgpack.packb({"v": 1, "kind": "teleport", "sender": "scripted", "seq": 1}),
               batch(2, 0, 0, obs_dim=5), msgpack.packb([1, 2])]
        nan = msgpack.unpackb(batch(3, 0, 0))
        nan["reward"]["data"] = np.full(16, np.nan, np.float32).tobytes()
        bad.append(msgpack.packb(nan))
        seq, t, episode = 10, 0, 0
        for i in range(60):  # 960 valid steps, 5 bad frames mixed in
            push.send(batch(seq, episode, t))
            seq, t = seq + 1, t + 16
            if t >= 200:
                episode, t = episode + 1, 0
            if i < len(bad):
                push.send(bad[i])
        health = watch.wait(lambda h: h["grad_steps"] >= 100 and (actor_stats(h, "scripted") or {}).get("received") == 960,
                            60, "960 steps received and 100 gradient steps")
        assert health["rejects"] == {"undecodable": 2, "unknown_kind": 1, "dims_mismatch": 1, "non_finite": 1}
        assert actor_stats(health, "scripted")["rejected"] == 32  # the two bad experience batches, 16 steps each
        versions = [next_weights(sub, 5.0).version for _ in range(3)]
        assert versions == sorted(versions) and versions[-1] > first.version
        assert learner.poll() is None, "the learner died of input"
        assert procs.stop(learner) == 0
        assert "Traceback" not in procs.log("learner")
    finally:
        push.close(0)
        sub.close(0)
        ctx.term()
        watch.close()


def test_bad_config_fails_at_start_naming_the_key(procs: Procs, eps: dict[str, str]) -> None:
    proc = procs.learner(eps, "--overlap", "40", "--seq-len", "32")
    assert proc.wait(timeout=60) == 2
    assert "overlap = 40" in procs.log("learner") and "seq_len-1" in procs.log("learner")


def test_health_maps_come_every_health_s(procs: Procs, eps: dict[str, str]) -> None:
    """health_s sets the health maps' period (a watcher's latency; the suite runs its learners at 0.25 s): idle,
    maps 0.6 s apart by their own clocks, not the default second; 0 is refused at start with the key."""
    procs.learner(eps, *SMALL, "--health-s", "0.6")
    watch = Watch(eps["metrics"])
    try:
        times = [watch.wait(lambda h: True, 60, f"health map {i}")["time"] for i in range(6)]
    finally:
        watch.close()
    gaps = np.diff(times)
    assert 0.5 <= float(np.median(gaps)) <= 0.8, gaps
    bad = procs.learner(endpoints(), "--health-s", "0", name="bad")
    assert bad.wait(timeout=60) == 2 and "health_s = 0" in procs.log("bad")


def test_decode_of_a_bad_frame_names_a_reason() -> None:
    """The scripted bad frames above are rejected for the reasons the test expects (checked in-process)."""
    try:
        decode(batch(2, 0, 0, obs_dim=5), __import__("protocol").Limits(obs_dim=3, act_dim=1))
    except ProtocolError as exc:
        assert exc.reason == "dims_mismatch"
    else:
        raise AssertionError("a 5-wide observation passed a 3-wide learner")


def test_a_first_hello_whose_network_would_pass_64_mib_is_too_large_and_sets_nothing() -> None:
    """SPEC.md, hello: a learner that takes D and A from the first hello refuses (too_large, while decoding) one
    whose network would publish weights frames over 64 MiB, the most a bot must accept: at hidden 256 a D of
    65536 makes 67 MiB. The run's shapes stay unset, and the next hello that fits sets them."""
    from learner.config import LearnerConfig
    from learner.service import Learner
    from tests.procs import endpoints

    f32 = np.float32

    def hi(seq: int, obs_dim: int) -> bytes:
        return encode(Hello("wide", seq, "bot", obs_dim, 1, -np.ones(obs_dim, f32), np.ones(obs_dim, f32),
                            -np.ones(1, f32), np.ones(1, f32)))

    eps = endpoints()
    learner = Learner(LearnerConfig(ingest=eps["ingest"], weights=eps["weights"], metrics=eps["metrics"], hidden=256,
                                    fc=16, learning_starts=16, capacity=4096, seq_len=8, overlap=4))
    try:
        learner.ingest.handle(hi(0, 65536), learner.version)
        assert dict(learner.ingest.rejects) == {"too_large": 1} and learner.model is None
        learner.ingest.handle(hi(1, 2), learner.version)
        assert dict(learner.ingest.rejects) == {"too_large": 1}
        assert learner.model is not None and learner.model.sac.arch.obs_dim == 2
    finally:
        learner.close()


VECTORS = json.loads((Path(__file__).parent / "vectors" / "vectors.json").read_text())["learner"]


def test_learner_books_the_vector_sequence_as_the_spec_says(procs: Procs, eps: dict[str, str]) -> None:
    """tests/vectors' learner sequence (unknown sender and bot, out-of-order batches, a gap, an eval bot,
    learner kinds on ingest, a refused hello, h0 of the wrong width, an action out of bounds, a new session)
    against a real learner: rejects by reason, steps received and rejected, gaps, lost sequence numbers;
    and the session id a JavaScript number holds exactly."""
    run = VECTORS["run"]
    learner = procs.learner(eps, "--obs-dim", str(run["obs_dim"]), "--act-dim", str(run["act_dim"]),
                            "--act-low", str(run["act_low"][0]), "--act-high", str(run["act_high"][0]),
                            "--hidden", str(run["hidden"]), "--fc", "4", "--learning-starts", "100000")
    ctx = zmq.Context()
    watch = Watch(eps["metrics"])
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    push.connect(eps["ingest"])
    try:
        watch.wait(lambda h: True, 60, "the learner to come up")
        for frame in VECTORS["frames"]:
            push.send(bytes.fromhex(frame["hex"]))
        totals = VECTORS["totals"]
        health = watch.wait(lambda h: h["rejects"] == totals["rejects"] and (actor_stats(h, "s1") or {}).get(
            "received") == totals["received"], 30, f"the books of {totals}")
        s1 = actor_stats(health, "s1")
        assert s1 is not None
        assert (s1["rejected"], s1["gaps"], s1["lost_msgs"]) == (totals["rejected"], totals["gaps"], totals["lost_msgs"])
        assert 0 <= health["session"] <= 2**53 - 1
        assert learner.poll() is None and procs.stop(learner) == 0
    finally:
        push.close(0)
        ctx.term()
        watch.close()


def test_the_transport_binds_all_three_endpoints_or_none(eps: dict[str, str]) -> None:
    """learner/transport.py: a bind that fails (the metrics endpoint is taken) names the endpoint and releases
    the two already bound; close() releases all three, so the next learner on these endpoints can bind."""
    from learner.config import LearnerConfig
    from learner.transport import Transport

    cfg = LearnerConfig(ingest=eps["ingest"], weights=eps["weights"], metrics=eps["metrics"])
    ctx = zmq.Context()
    squatter = ctx.socket(zmq.PUB)
    squatter.setsockopt(zmq.LINGER, 0)
    squatter.bind(eps["metrics"])
    try:
        with pytest.raises(OSError, match=eps["metrics"]) as failed:
            Transport(cfg)
    finally:
        squatter.close(0)
        ctx.term()
    first = Transport(cfg)  # `failed` holds the error, whose traceback holds the half-made transport
    assert first.endpoints == eps and "Address already in use" in str(failed.value)
    first.close()
    Transport(cfg).close()


def test_the_first_model_resumes_what_fits_and_starts_fresh_from_what_does_not(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """learner/model.py, the one place a learner's first model is decided: none on disk, the configured dims;
    a checkpoint that fits, its state and books; one that passes the architecture check but fails to load
    part-way (a target tensor missing, the actor already loaded), a fresh model of its shapes, no books."""
    from dataclasses import asdict

    from learner.config import LearnerConfig
    from learner.model import Carried, first_model
    from learner.persistence import Persistence
    from learner.state import snapshot
    from protocol.checkpoint import encode_checkpoint, write_atomic

    cfg = LearnerConfig(weights_path=str(tmp_path / "live.sacl"), obs_dim=3, act_dim=1, act_low=(-2.0,),
                        act_high=(2.0,), hidden=16, fc=16, seq_len=8, overlap=4, capacity=1000)
    files = Persistence(cfg)
    try:
        built, carried = first_model(cfg, files)
        assert built is not None and carried is None
        meta = {"version": 7, "grad_steps": 5, "env_steps": 300, "episodes": 2, "arch": built.sac.arch.to_wire(),
                "config": asdict(cfg)}
        tensors = snapshot(built.sac)
        nets = [k for k in tensors if k.startswith(("actor.", "critics.", "targets.", "log_alpha"))]
        for key in nets:
            tensors[key] = tensors[key] + 1  # not what a fresh model starts from
        write_atomic(tmp_path / "ckpt-000000000005.sacl", encode_checkpoint(meta, tensors))
        resumed, carried = first_model(cfg, files)
        assert resumed is not None and carried == Carried(version=7, grad_steps=5, env_steps=300, episodes=2)
        assert all(np.array_equal(snapshot(resumed.sac)[k], tensors[k]) for k in nets)

        nets.remove(missing := next(k for k in nets if k.startswith("targets.")))
        del tensors[missing]
        write_atomic(tmp_path / "ckpt-000000000006.sacl", encode_checkpoint({**meta, "grad_steps": 6}, tensors))
        with caplog.at_level("WARNING", logger="saclstm.learner"):
            fresh, carried = first_model(cfg, files)
        assert fresh is not None and carried is None
        assert not any(np.array_equal(snapshot(fresh.sac)[k], tensors[k]) for k in nets)
        assert "ckpt-000000000006.sacl does not fit" in caplog.text and "starting fresh" in caplog.text
    finally:
        files.saver.close()
