"""A bot in a second language: tests/interop/bot.js, a JavaScript bot written from protocol/SPEC.md and
the vectors alone, passes every vector and gives our codec's verdict on thousands of near-valid frames;
it trains with a real learner (every step it says it sent is received, none rejected, and its actions are
our numpy policy's on the same weights and inputs); and against a stand-in learner it says hello again
after a restart and keeps to flow control."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
import zmq

from actor.policy import LocalPolicy
from protocol import Experience, Hello, Progress, ProtocolError, Weights, decode, encode
from protocol.scaling import to_policy
from tests.procs import Procs, Watch, actor_stats

HERE = Path(__file__).resolve().parent
VECTORS = HERE.parent / "vectors"
LEARNER = ("--hidden", "16", "--fc", "16", "--seq-len", "8", "--overlap", "4", "--batch-size", "8",
           "--learning-starts", "300", "--publish-hz", "20")
STEPS = 2000
ATOL = 1e-4  # float64 (JS) against float32 (numpy), as the forward vector allows


@pytest.fixture(scope="session")
def node() -> Iterator[str]:
    """Node with the bot's pinned packages installed (`npm ci` once per clean checkout)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed for the JavaScript interop bot (tests/interop); not found on PATH")
    stamp = HERE / "node_modules" / ".package-lock.json"
    if not stamp.exists() or stamp.stat().st_mtime < (HERE / "package-lock.json").stat().st_mtime:
        done = subprocess.run([npm, "ci", "--prefer-offline", "--no-audit", "--no-fund"], cwd=HERE, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"npm ci in {HERE} failed:\n{done.stdout}\n{done.stderr}"
    yield node


@pytest.mark.parametrize("forward", ["forward.json", "forward_memoryless.json"])
def test_js_bot_passes_every_vector(node: str, forward: str) -> None:
    done = subprocess.run([node, "check_vectors.js", str(VECTORS / "vectors.json"), str(VECTORS / forward)],
                          cwd=HERE, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    summary = json.loads(done.stdout)
    vectors = json.loads((VECTORS / "vectors.json").read_text())
    assert summary["valid"] == len(vectors["valid"]) and summary["invalid"] == len(vectors["invalid"])
    assert summary["forward"] is not None and summary["forward"]["steps"] > 0, summary
    assert summary["failures"] == []


# Values put in place of each field (and of each array's dtype/shape/data) of every valid vector.
SUBSTITUTES: tuple[Any, ...] = (None, True, 0, 1, -1, 1.5, 1.0, float("nan"), float("inf"), "x", "", b"\0", [1], {"a": 1},
                                2**64 - 1, "y" * 257, "\u00e9" * 256, {"dtype": "f32", "shape": [1], "data": bytes(4)})
# Where our Python codec and the SPEC's text would part (the JS bot follows the text). None today: the two
# the JS bot found (`kind: nil`, a `session` past 2^53) were settled in the SPEC and the codec.
KNOWN_GAPS: set[tuple[str, str]] = set()


def mutants() -> list[dict[str, Any]]:
    """Every valid vector with each field, and each array's dtype/shape/data, left out or replaced."""
    vectors = json.loads((VECTORS / "vectors.json").read_text())
    out = []
    for msg in (msgpack.unpackb(bytes.fromhex(v["hex"])) for v in vectors["valid"] if "run" not in v):
        for key, value in msg.items():
            out.append({k: v for k, v in msg.items() if k != key})
            out += [{**msg, key: sub} for sub in SUBSTITUTES]
            if isinstance(value, dict) and "dtype" in value:
                for part in ("dtype", "shape", "data"):
                    out.append({**msg, key: {k: v for k, v in value.items() if k != part}})
                    out += [{**msg, key: {**value, part: sub}} for sub in SUBSTITUTES]
    return out


def python_verdict(frame: bytes) -> str:
    try:
        return f"ok:{decode(frame).kind}"
    except ProtocolError as exc:
        return exc.reason


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_js_and_python_decoders_agree_on_mutated_frames(node: str) -> None:
    """Thousands of near-valid frames: the decoder written from the SPEC gives our codec's verdict on each."""
    frames = [msgpack.packb(m) for m in mutants()]
    done = subprocess.run([node, "decode_frames.js"], cwd=HERE, input=json.dumps([f.hex() for f in frames]),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    js = json.loads(done.stdout)
    assert len(js) == len(frames) > 3000
    parted = [(p, j, msgpack.unpackb(f)) for f, j in zip(frames, js) if (p := python_verdict(f)) != j]
    unknown = [case for case in parted if case[:2] not in KNOWN_GAPS]
    assert not unknown, f"{len(unknown)} frames decoded differently (python, js, frame), e.g. {unknown[:3]}"
    closed = KNOWN_GAPS - {case[:2] for case in parted}
    assert not closed, f"known gaps closed (the codec now follows the SPEC there): drop {closed} from KNOWN_GAPS"


def replay(report: dict[str, Any]) -> int:
    """Every step the bot played, through our numpy policy from the same weights frame and inputs."""
    policies: dict[str, LocalPolicy] = {}
    for rev, frame in report["frames"].items():
        msg = decode(base64.b64decode(frame))
        assert isinstance(msg, Weights) and msg.rev == rev
        policies[rev] = LocalPolicy(msg)
    checked = 0
    for episode in report["log"]:
        policy = policies[episode["rev"]]
        assert policy.version == episode["version"]
        state = policy.initial_state()
        pa, pr = np.zeros(policy.arch.act_dim, np.float32), 0.0
        for t, step in enumerate(episode["steps"]):
            where = f"episode {episode['episode']} step {t}"
            mean, log_std, state = policy.forward(np.asarray(step["obs"], np.float32), pa, pr, state)
            np.testing.assert_allclose(step["mean"], mean, atol=ATOL, rtol=0, err_msg=where)
            np.testing.assert_allclose(step["log_std"], log_std, atol=ATOL, rtol=0, err_msg=where)
            unit = np.tanh(mean + np.exp(log_std) * np.asarray(step["eps"], np.float32))
            action = np.asarray(step["action"], np.float32)
            np.testing.assert_allclose(action, policy.to_env(unit), atol=ATOL, rtol=0, err_msg=where)
            assert np.all(action >= policy.low) and np.all(action <= policy.high), where
            pa, pr = to_policy(action, policy.low, policy.high), step["reward"]
            checked += 1
    return checked


@pytest.mark.slow
def test_js_bot_trains_with_a_real_learner(node: str, procs: Procs, eps: dict[str, str], tmp_path: Path) -> None:
    watch = Watch(eps["metrics"])
    try:
        procs.learner(eps, *LEARNER)
        watch.wait(lambda h: True, 60, "the learner")
        out = tmp_path / "bot.json"
        bot = subprocess.run([node, "bot.js", "--ingest", eps["ingest"], "--weights", eps["weights"],
                              "--sender", "js-1", "--steps", str(STEPS), "--report", str(out)],
                             cwd=HERE, capture_output=True, text=True, timeout=120)
        assert bot.returncode == 0, f"{bot.stdout}\n{bot.stderr}\nlearner:\n{procs.log('learner')}"
        report = json.loads(out.read_text())
        health = watch.wait(lambda h: (actor_stats(h, "js-1") or {}).get("bye", False), 30, "the bot's bye")
    finally:
        watch.close()

    stats = actor_stats(health, "js-1")
    assert stats is not None
    assert report["steps"] == STEPS == report["sent"] + report["dropped"], report["msgs"]
    assert stats["sent"] == report["sent"] and stats["dropped"] == report["dropped"], stats
    assert stats["received"] == report["sent"] and stats["rejected"] == 0, stats
    assert not any(health["rejects"].values()), health["rejects"]
    assert stats["lost_msgs"] == 0 and stats["late_msgs"] == 0 and stats.get("gaps", 0) == 0, stats
    assert stats["episodes"] == report["episodes"] == len(report["log"]) > 10, stats
    assert report["rejects"] == {}, "the bot refused a frame from the learner"
    assert replay(report) == STEPS


class StandIn:
    """A stand-in learner on real sockets: publishes forward.json's weights and a `progress` we set, and
    decodes (with our codec) every frame the bot sends."""

    def __init__(self, node: str, sender: str, *bot_args: str) -> None:
        self.frame = base64.b64decode(json.loads((VECTORS / "forward.json").read_text())["weights_frame_b64"])
        self.ctx = zmq.Context()
        self.pull, self.pub = self.ctx.socket(zmq.PULL), self.ctx.socket(zmq.PUB)
        ingest = self.pull.bind_to_random_port("tcp://127.0.0.1")
        weights = self.pub.bind_to_random_port("tcp://127.0.0.1")
        self.progress: dict[str, Any] = dict(received=0, grad_steps=0, utd=1.0, learning_starts=0, version=1,
                                             session=2**53 - 2)
        self.seen: list[Any] = []
        self.seq = 0
        self.sender = sender
        self.acknowledge = False  # per_sender follows what arrived, as a learner's does
        self.settle = False  # 1.2: settled follows what arrived too (with acknowledge)
        self.bot = subprocess.Popen([node, "bot.js", "--ingest", f"tcp://127.0.0.1:{ingest}", "--weights",
                                     f"tcp://127.0.0.1:{weights}", "--sender", sender, *bot_args],
                                    cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def tick(self) -> None:
        """Publish weights and progress once, then read what the bot sent for 20 ms."""
        self.seq += 2
        if self.acknowledge:
            self.progress["per_sender"] = {self.sender: self.steps()}
            if self.settle:
                self.progress["settled"] = {self.sender: self.steps()}
        self.pub.send_multipart([b"weights", self.frame])
        self.pub.send_multipart([b"progress", encode(Progress("learner", self.seq, **self.progress))])
        while self.pull.poll(20):
            self.seen.append(decode(self.pull.recv()))

    def steps(self) -> int:
        return sum(m.steps for m in self.seen if isinstance(m, Experience))

    def finish(self, timeout: float = 30) -> str:
        """Tick until the bot exits; its stderr."""
        deadline = time.monotonic() + timeout
        while self.bot.poll() is None and time.monotonic() < deadline:
            self.tick()
        out, err = self.bot.communicate(timeout=10)
        while self.pull.poll(200):
            self.seen.append(decode(self.pull.recv()))
        assert self.bot.returncode == 0, f"{out}\n{err}"
        return err

    def close(self) -> None:
        if self.bot.poll() is None:
            self.bot.kill()
            self.bot.communicate()
        self.pull.close(0)
        self.pub.close(0)
        self.ctx.term()


def test_js_bot_says_hello_again_when_the_learner_restarts(node: str) -> None:
    """A new `session` once experience flows: a hello must follow it; every step still arrives."""
    learner = StandIn(node, "js-2", "--steps", "1000", "--pace-ms", "25")
    try:
        deadline = time.monotonic() + 30
        while not learner.steps() and learner.bot.poll() is None and time.monotonic() < deadline:
            learner.tick()
        assert learner.steps(), "no experience reached the stand-in learner"
        learner.progress["session"] += 1
        restarted_at = len(learner.seen)
        err = learner.finish()
    finally:
        learner.close()
    hellos = [i for i, m in enumerate(learner.seen) if isinstance(m, Hello)]
    assert hellos and hellos[-1] >= restarted_at, f"no hello after the session changed: {hellos}, {restarted_at}"
    assert "learner restarted" in err
    assert learner.steps() == 1000


def test_js_bot_flow_control_holds_and_releases(node: str) -> None:
    """SPEC flow control, tolerance 0: slack = learning_starts - received = 100 steps. The bot stops once 100
    or more of its steps are in flight, and steps on when the learner says it received them."""
    learner = StandIn(node, "js-3", "--steps", "400", "--pace-ms", "0", "--flow", "rate-limited",
                      "--flow-tolerance", "0")
    learner.progress.update(learning_starts=100, per_sender={"js-3": 0})
    try:
        deadline = time.monotonic() + 30
        held_since, held = time.monotonic(), 0
        while time.monotonic() < deadline:  # until steps have flowed, then stood still for 0.5 s
            learner.tick()
            if learner.steps() != held:
                held_since, held = time.monotonic(), learner.steps()
            elif held and time.monotonic() - held_since >= 0.5:
                break
        assert 100 <= held < 100 + 32, f"held at {held} steps in flight"
        learner.acknowledge = True
        err = learner.finish()
    finally:
        learner.close()
    assert learner.steps() == 400
    assert "stepping on" not in err, "the bot went on only because the learner seemed silent"


def held_steps(learner: StandIn, still_s: float = 0.5, timeout: float = 30) -> int:
    """Tick until the bot's steps stood still for `still_s`; the steps that arrived."""
    deadline = time.monotonic() + timeout
    held_since, held = time.monotonic(), -1
    while time.monotonic() < deadline:
        learner.tick()
        if learner.steps() != held:
            held_since, held = time.monotonic(), learner.steps()
        elif time.monotonic() - held_since >= still_s:
            break
    return held


def test_js_bot_keeps_the_1_2_rule_with_a_learner_that_settles(node: str) -> None:
    """SPEC 1.2 flow control with `settled`: a sender the learner does not list takes no step; once listed, it may
    take a step only while fewer than min(slack, tol) / k = min(108, 8) / 2 = 4 of its steps are unsettled
    (tolerance 8, learning_starts 100, two senders listed), sends the short batch it holds while it waits (so that
    it can settle: 4 arrive, not 0 or a full batch of 32), and steps on as they settle, never by a timeout."""
    learner = StandIn(node, "js-4", "--steps", "400", "--pace-ms", "0", "--flow", "rate-limited",
                      "--flow-tolerance", "8")
    learner.progress.update(learning_starts=100, per_sender={}, settled={"someone-else": 0})
    try:
        assert held_steps(learner, still_s=1.0) == 0, "stepped while the learner did not list it"
        learner.progress["settled"] = {"someone-else": 0, "js-4": 0}  # k = 2: a share of 4
        assert held_steps(learner) == 4  # a step with 0, 1, 2 or 3 unsettled (< 4), then it waits with 4 sent
        learner.acknowledge = learner.settle = True
        err = learner.finish()
    finally:
        learner.close()
    assert learner.steps() == 400
    assert "stepping on" not in err, err
