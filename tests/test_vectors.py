"""The committed vectors decode (and compute) as SPEC.md says, and match what the generator writes."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from actor.config import ActorConfig
from actor.link import ActorLink
from actor.policy import LocalPolicy
from learner.ingest import LEARNER_REASONS
from protocol import DEFAULT_LIMITS, KINDS, REASONS, Limits, Progress, ProtocolError, Weights, decode
from protocol.codec import MAX_SAFE_INT
from protocol.flow import WAIT, may_step
from protocol.messages import PROTOCOL_VERSION
from tests.procs import endpoints
from tests.vectors.generate import build, forward

VECTORS = json.loads((Path(__file__).parent / "vectors" / "vectors.json").read_text())


def limits_of(vector: dict) -> Limits:
    """The receiver a vector assumes: any dims by default, or the learner configuration under `run`."""
    run = vector.get("run")
    if run is None:
        return DEFAULT_LIMITS
    return Limits(obs_dim=run["obs_dim"], act_dim=run["act_dim"], state_dim=run["hidden"],
                  act_low=tuple(run["act_low"]), act_high=tuple(run["act_high"]))


def test_vectors_cover_every_kind_and_reason() -> None:
    assert {v["kind"] for v in VECTORS["valid"]} == set(KINDS)
    learner = {f["outcome"] for f in VECTORS["learner"]["frames"]} - {"accepted"}
    assert {v["reason"] for v in VECTORS["invalid"]} | learner == set(REASONS) | set(LEARNER_REASONS)


@pytest.mark.parametrize("vector", VECTORS["valid"], ids=lambda v: v["name"])
def test_valid_vector_decodes(vector: dict) -> None:
    assert decode(bytes.fromhex(vector["hex"]), limits_of(vector)).kind == vector["kind"]


@pytest.mark.parametrize("vector", VECTORS["invalid"], ids=lambda v: v["name"])
def test_invalid_vector_gets_its_reason(vector: dict) -> None:
    with pytest.raises(ProtocolError) as info:
        decode(bytes.fromhex(vector["hex"]), limits_of(vector))
    assert info.value.reason == vector["reason"]
    if "run" in vector:  # a run's fault only: any-dims receivers take it
        decode(bytes.fromhex(vector["hex"]))


SEQUENCE_FRAMES = VECTORS["learner"]["frames"] + [f for part in VECTORS["restart"]["learners"] for f in part["frames"]]


@pytest.mark.parametrize("frame", SEQUENCE_FRAMES, ids=lambda v: v["name"])
def test_learner_sequence_frames_decode(frame: dict) -> None:
    """Each frame of the learner sequence decodes, or fails decoding, as its outcome says: a learner reason
    means a valid frame that only the learner's memory rejects."""
    if frame["outcome"] in ("accepted", *LEARNER_REASONS):
        decode(bytes.fromhex(frame["hex"]), limits_of(VECTORS["learner"]))
    else:
        with pytest.raises(ProtocolError, match=frame["outcome"]):
            decode(bytes.fromhex(frame["hex"]), limits_of(VECTORS["learner"]))


def _replay_through_a_learner(part: dict, run: dict) -> None:
    """Frame by frame, through a real learner's ingest (in process, its sockets bound on loopback): the outcome
    (accepted, or the one reason counted), the steps booked against s1 (received or rejected, including frames
    that fail decoding: SPEC.md, Accounting), s1's entry in `progress.settled` (None: not listed), then the
    totals, lost and late sequence numbers included, and the `sent` its books show when the vector gives it."""
    from learner.config import LearnerConfig
    from learner.service import Learner

    eps = endpoints()
    learner = Learner(LearnerConfig(ingest=eps["ingest"], weights=eps["weights"], metrics=eps["metrics"],
                                    obs_dim=run["obs_dim"], act_dim=run["act_dim"], act_low=tuple(run["act_low"]),
                                    act_high=tuple(run["act_high"]), hidden=run["hidden"], fc=4,
                                    learning_starts=100_000))
    try:
        ingest = learner.ingest
        for frame in part["frames"]:
            rejects, s1 = dict(ingest.rejects), ingest.senders.get("s1")
            books = (s1.received, s1.rejected) if s1 is not None else (0, 0)
            ingest.handle(bytes.fromhex(frame["hex"]), learner.version)
            counted = {r: n - rejects.get(r, 0) for r, n in ingest.rejects.items() if n != rejects.get(r, 0)}
            assert counted == ({} if frame["outcome"] == "accepted" else {frame["outcome"]: 1}), frame["name"]
            s1 = ingest.senders.get("s1")
            moved = (s1.received - books[0], s1.rejected - books[1]) if s1 is not None else (0, 0)
            want = (frame["steps"], 0) if frame["outcome"] == "accepted" else (0, frame["steps"])
            assert moved == want, (frame["name"], moved, want)
            assert ingest.settled().get("s1") == frame["settled"], (frame["name"], ingest.settled())
        totals, s1 = part["totals"], ingest.senders["s1"]
        assert dict(ingest.rejects) == totals["rejects"]
        assert (s1.received, s1.rejected, s1.gaps, s1.lost_msgs, s1.late_msgs) == (
            totals["received"], totals["rejected"], totals["gaps"], totals["lost_msgs"], totals["late_msgs"])
        if "sent" in totals:
            assert s1.sent == totals["sent"]
    finally:
        learner.close()


def test_a_learner_books_each_frame_of_the_sequence_as_the_vector_says() -> None:
    """The `learner` sequence (the process-level run of the same frames is tests/test_learner_service.py)."""
    _replay_through_a_learner(VECTORS["learner"], VECTORS["learner"]["run"])


def test_across_a_learner_restart_each_learner_books_what_the_vector_says() -> None:
    """The `restart` sequence: one learner, then a fresh one (a new session) for the same sender. The second's
    books start at the first seq it sees and do not hold what went to the first, while the heartbeat's `sent`
    counts from the sender's start."""
    restart = VECTORS["restart"]
    for part in restart["learners"]:
        _replay_through_a_learner(part, restart["run"])
    first, second = (part["totals"] for part in restart["learners"])
    assert first["sent"] == first["received"] + first["rejected"], "one learner that read all: the books close"
    assert second["sent"] > second["received"] + second["rejected"], "after the restart they cannot"


def _flow_entries() -> list[tuple[dict, Progress | None]]:
    out = []
    for entry in VECTORS["flow"]["steps"]:
        msg = decode(bytes.fromhex(entry["progress"])) if entry["progress"] is not None else None
        assert msg is None or isinstance(msg, Progress)
        out.append((entry, msg))
    return out


def _may_take(allowed: Callable[[int], bool], cap: int = 10_000) -> int:
    """How many steps one after another a rule lets a bot take: `allowed(i)` with i taken since it read."""
    return next(i for i in range(cap + 1) if i == cap or not allowed(i))


def test_flow_control_gives_the_steps_the_flow_vector_says() -> None:
    """SPEC.md's rule (protocol.flow.may_step), fed `taken` as the SPEC counts it: steps sent or buffered since
    the session last changed (the first session is no change), the dropped ones left out."""
    flow, taken, session = VECTORS["flow"], 0, None
    for entry, progress in _flow_entries():
        if progress is None:
            got = 0  # no progress read yet: wait
        else:
            if session is not None and progress.session != session:
                taken = 0
            session = progress.session
            got = _may_take(lambda i, p=progress, t=taken: may_step(p, flow["sender"], t, i, flow["tolerance"]))
        assert got == entry["may_take"], entry["name"]
        taken += entry["then"]["sent"]


def test_the_actors_link_gives_the_steps_the_flow_vector_says() -> None:
    """The same through the actor's own books (actor/link.py): its count of steps sent since the session last
    changed, with progress read as the weights subscriber hands it over. No learner: its sends are dropped."""
    flow = VECTORS["flow"]
    ports = endpoints()
    cfg = ActorConfig(ingest=ports["ingest"], weights=ports["weights"], actor_id=flow["sender"],
                      flow="rate-limited", flow_tolerance=flow["tolerance"], heartbeat_s=3600.0,
                      close_linger_s=0.1)
    link = ActorLink(cfg)
    current: list[Progress | None] = [None]
    link.weights.progress = lambda: (current[0], time.monotonic())  # type: ignore[method-assign]
    try:
        for entry, progress in _flow_entries():
            current[0] = progress
            link.housekeeping()
            if progress is None:
                now = time.monotonic()
                assert link.pacer.decide(now, None, 0.0, link.sender, 0, 0, cfg.flow_tolerance, now) == WAIT
                got = 0
            else:
                got = _may_take(lambda i, p=progress: link._may_step(p, buffered=i))
            assert got == entry["may_take"], entry["name"]
            link.sent += entry["then"]["sent"]
            link.dropped += entry["then"]["dropped"]
    finally:
        link.close()


def test_every_learner_integer_fits_a_javascript_number() -> None:
    for vector in VECTORS["valid"]:
        msg = decode(bytes.fromhex(vector["hex"]))
        if msg.sender == "learner":
            ints = [v for v in vars_of(msg) if type(v) is int] + list((getattr(msg, "per_sender", None) or {}).values())
            assert all(0 <= v <= MAX_SAFE_INT for v in ints), vector["name"]


def vars_of(msg: object) -> list[object]:
    return [getattr(msg, name) for name in msg.__slots__]  # type: ignore[attr-defined]


def test_committed_vectors_match_generator() -> None:
    assert build() == VECTORS, "run `python -m tests.vectors.generate` after a deliberate protocol change"


FORWARDS = {name: json.loads((Path(__file__).parent / "vectors" / f"{name}.json").read_text())
            for name in ("forward", "forward_memoryless")}
ARCH_KEYS = {"obs_dim", "act_dim", "hidden", "fc", "prev_action", "prev_reward", "log_std_min", "log_std_max",
             "act_low", "act_high", "layout", "memoryless"}


def _spec_forward(weights: Weights, steps: list[dict], drop: str = "",
                  carry: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """SPEC.md's network section, written out in float64 straight from the layout (not actor/policy.py):
    the means and deterministic env-unit actions of `steps`. `drop` zeroes one input, to show it matters;
    `carry` says whether the state is carried from step to step (by default as the arch says: unless memoryless,
    absent meaning false), to show that choice matters too."""
    arch, p, i = weights.arch, {}, 0
    carry = not arch.get("memoryless", False) if carry is None else carry
    for name, shape in arch["layout"]:
        n = int(np.prod(shape))
        p[name] = np.asarray(weights.params[i:i + n], np.float64).reshape(shape)
        i += n
    assert i == weights.params.size
    H, A = arch["hidden"], arch["act_dim"]
    low, high = np.array(arch["act_low"]), np.array(arch["act_high"])
    h, c, means, actions = np.zeros(H), np.zeros(H), [], []
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    for step in steps:
        if not carry:
            h, c = np.zeros(H), np.zeros(H)
        parts = [np.zeros(arch["obs_dim"]) if drop == "obs" else np.array(step["obs"])]
        if arch["prev_action"]:
            parts.append(np.zeros(A) if drop == "prev_action" else np.array(step["prev_action"]))
        if arch["prev_reward"]:
            parts.append([0.0 if drop == "prev_reward" else step["prev_reward"]])
        x = np.concatenate(parts)
        z = np.maximum(p["inp.weight"] @ x + p["inp.bias"], 0)
        g = p["lstm.weight_ih_l0"] @ z + p["lstm.bias_ih_l0"] + p["lstm.weight_hh_l0"] @ h + p["lstm.bias_hh_l0"]
        c = sig(g[H:2 * H]) * c + sig(g[:H]) * np.tanh(g[2 * H:3 * H])
        h = sig(g[3 * H:]) * np.tanh(c)
        y = np.maximum(p["fc.weight"] @ h + p["fc.bias"], 0)
        mean = p["mean.weight"] @ y + p["mean.bias"]
        means.append(mean)
        actions.append(low + (np.tanh(mean) + 1) / 2 * (high - low))
    return np.array(means), np.array(actions)


def _forward_weights(name: str = "forward") -> Weights:
    msg = decode(base64.b64decode(FORWARDS[name]["weights_frame_b64"]))
    assert isinstance(msg, Weights)
    return msg


@pytest.mark.parametrize("msg", [_forward_weights(), _forward_weights("forward_memoryless"), decode(bytes.fromhex(next(
    v["hex"] for v in VECTORS["valid"] if v["name"] == "weights")))],
                         ids=["forward", "forward_memoryless", "weights"])
def test_weights_vectors_are_real_weights_frames(msg: Weights) -> None:
    assert set(msg.arch) == ARCH_KEYS
    assert msg.rev == hashlib.sha256(msg.params.astype("<f4").tobytes()).hexdigest()[:16]
    LocalPolicy(msg)  # its layout is the network's, and params has the size it adds up to


FORWARD_NAMES = pytest.mark.parametrize("name", list(FORWARDS))


@FORWARD_NAMES
def test_forward_vector_is_a_real_weights_frame(name: str) -> None:
    msg, vector = _forward_weights(name), FORWARDS[name]
    assert set(msg.arch) == ARCH_KEYS
    assert msg.arch["memoryless"] is (name == "forward_memoryless")
    assert msg.rev == hashlib.sha256(msg.params.astype("<f4").tobytes()).hexdigest()[:16]
    assert [msg.arch["act_low"], msg.arch["act_high"]] == [vector["act_low"], vector["act_high"]]


@FORWARD_NAMES
def test_our_policy_reproduces_the_forward_vector(name: str) -> None:
    policy, vector = LocalPolicy(_forward_weights(name)), FORWARDS[name]
    state, expected = policy.initial_state(), vector["expected"]
    for t, step in enumerate(vector["steps"]):
        mean, log_std, state = policy.forward(np.array(step["obs"], np.float32), np.array(step["prev_action"], np.float32),
                                              step["prev_reward"], state)
        np.testing.assert_allclose(mean, expected["mean"][t], rtol=0, atol=vector["atol"])
        np.testing.assert_allclose(log_std, expected["log_std"][t], rtol=0, atol=vector["atol"])
        np.testing.assert_allclose(policy.to_env(np.tanh(mean)), expected["action"][t], rtol=0, atol=vector["atol"])


@FORWARD_NAMES
def test_the_spec_equations_reproduce_the_forward_vector(name: str) -> None:
    vector = FORWARDS[name]
    means, actions = _spec_forward(_forward_weights(name), vector["steps"])
    np.testing.assert_allclose(means, vector["expected"]["mean"], rtol=0, atol=vector["atol"])
    np.testing.assert_allclose(actions, vector["expected"]["action"], rtol=0, atol=vector["atol"])


@FORWARD_NAMES
@pytest.mark.parametrize("drop", ["obs", "prev_action", "prev_reward"])
def test_every_input_of_the_forward_vector_matters(name: str, drop: str) -> None:
    """A bot that leaves out any input (or feeds it as zero) fails the vector by far more than atol."""
    vector = FORWARDS[name]
    means, _ = _spec_forward(_forward_weights(name), vector["steps"], drop)
    assert np.abs(means - np.array(vector["expected"]["mean"])).max() > 100 * vector["atol"]


@FORWARD_NAMES
def test_carrying_the_state_or_not_matters_in_each_forward_vector(name: str) -> None:
    """A bot that carries the state where `memoryless` says to reset it (or resets it where it should carry it)
    fails the vector by far more than atol; both agree on step 0, where every bot starts from zeros."""
    vector = FORWARDS[name]
    memoryless = _forward_weights(name).arch["memoryless"]
    means, _ = _spec_forward(_forward_weights(name), vector["steps"], carry=memoryless)
    assert np.abs(means - np.array(vector["expected"]["mean"])).max() > 100 * vector["atol"]
    np.testing.assert_allclose(means[0], vector["expected"]["mean"][0], rtol=0, atol=vector["atol"])


@FORWARD_NAMES
def test_forward_vector_matches_generator(name: str) -> None:
    """Weights, observations and rewards exactly; the outputs, and the previous actions (which are the vector's
    own outputs fed back), to 1e-6, 1/100 of the vector's atol: numpy's matrix products may round differently
    from one run to the next (BLAS picks kernels by alignment; 1e-7 differences were seen in CI, in an output
    and in a previous action), and a deliberate change to the policy moves them far more."""
    got, vector = forward(memoryless=name == "forward_memoryless"), FORWARDS[name]
    hint = "run `python -m tests.vectors.generate` after a deliberate change"
    fixed = {k: v for k, v in got.items() if k not in ("expected", "steps")}
    assert fixed == {k: v for k, v in vector.items() if k not in ("expected", "steps")}, hint
    assert len(got["steps"]) == len(vector["steps"]), hint
    for step, want in zip(got["steps"], vector["steps"], strict=True):
        assert (step["obs"], step["prev_reward"]) == (want["obs"], want["prev_reward"]), hint
        np.testing.assert_allclose(step["prev_action"], want["prev_action"], rtol=0, atol=vector["atol"] / 100,
                                   err_msg=hint)
    assert got["expected"].keys() == vector["expected"].keys(), hint
    for key, values in got["expected"].items():
        np.testing.assert_allclose(values, vector["expected"][key], rtol=0, atol=vector["atol"] / 100, err_msg=hint)


def test_the_spec_states_the_version_the_vectors_carry() -> None:
    spec = (Path(__file__).parent.parent / "protocol" / "SPEC.md").read_text()
    assert spec.startswith(f"# saclstm wire protocol, version {VECTORS['spec_version']}\n")
    assert VECTORS["protocol_version"] == PROTOCOL_VERSION
