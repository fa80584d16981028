"""The committed vectors decode (and compute) as SPEC.md says, and match what the generator writes."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from actor.policy import LocalPolicy
from protocol import KINDS, ProtocolError, Weights, decode
from tests.vectors.generate import build, forward

VECTORS = json.loads((Path(__file__).parent / "vectors" / "vectors.json").read_text())


def test_vectors_cover_every_kind() -> None:
    assert {v["kind"] for v in VECTORS["valid"]} == set(KINDS)


@pytest.mark.parametrize("vector", VECTORS["valid"], ids=lambda v: v["name"])
def test_valid_vector_decodes(vector: dict) -> None:
    assert decode(bytes.fromhex(vector["hex"])).kind == vector["kind"]


@pytest.mark.parametrize("vector", VECTORS["invalid"], ids=lambda v: v["name"])
def test_invalid_vector_gets_its_reason(vector: dict) -> None:
    with pytest.raises(ProtocolError) as info:
        decode(bytes.fromhex(vector["hex"]))
    assert info.value.reason == vector["reason"]


def test_committed_vectors_match_generator() -> None:
    assert build() == VECTORS, "run `python -m tests.vectors.generate` after a deliberate protocol change"


FORWARD = json.loads((Path(__file__).parent / "vectors" / "forward.json").read_text())
ARCH_KEYS = {"obs_dim", "act_dim", "hidden", "fc", "prev_action", "prev_reward", "log_std_min", "log_std_max",
             "act_low", "act_high", "layout"}


def _spec_forward(weights: Weights, steps: list[dict], drop: str = "") -> tuple[np.ndarray, np.ndarray]:
    """SPEC.md's network section, written out in float64 straight from the layout (not actor/policy.py):
    the means and deterministic env-unit actions of `steps`. `drop` zeroes one input, to show it matters."""
    arch, p, i = weights.arch, {}, 0
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


def _forward_weights() -> Weights:
    msg = decode(base64.b64decode(FORWARD["weights_frame_b64"]))
    assert isinstance(msg, Weights)
    return msg


def test_forward_vector_is_a_real_weights_frame() -> None:
    msg = _forward_weights()
    assert set(msg.arch) == ARCH_KEYS
    assert msg.rev == hashlib.sha256(msg.params.astype("<f4").tobytes()).hexdigest()[:16]
    assert [msg.arch["act_low"], msg.arch["act_high"]] == [FORWARD["act_low"], FORWARD["act_high"]]


def test_our_policy_reproduces_the_forward_vector() -> None:
    policy = LocalPolicy(_forward_weights())
    state, expected = policy.initial_state(), FORWARD["expected"]
    for t, step in enumerate(FORWARD["steps"]):
        mean, log_std, state = policy.forward(np.array(step["obs"], np.float32), np.array(step["prev_action"], np.float32),
                                              step["prev_reward"], state)
        np.testing.assert_allclose(mean, expected["mean"][t], rtol=0, atol=FORWARD["atol"])
        np.testing.assert_allclose(log_std, expected["log_std"][t], rtol=0, atol=FORWARD["atol"])
        np.testing.assert_allclose(policy.to_env(np.tanh(mean)), expected["action"][t], rtol=0, atol=FORWARD["atol"])


def test_the_spec_equations_reproduce_the_forward_vector() -> None:
    means, actions = _spec_forward(_forward_weights(), FORWARD["steps"])
    np.testing.assert_allclose(means, FORWARD["expected"]["mean"], rtol=0, atol=FORWARD["atol"])
    np.testing.assert_allclose(actions, FORWARD["expected"]["action"], rtol=0, atol=FORWARD["atol"])


@pytest.mark.parametrize("drop", ["obs", "prev_action", "prev_reward"])
def test_every_input_of_the_forward_vector_matters(drop: str) -> None:
    """A bot that leaves out any input (or feeds it as zero) fails the vector by far more than atol."""
    means, _ = _spec_forward(_forward_weights(), FORWARD["steps"], drop)
    assert np.abs(means - np.array(FORWARD["expected"]["mean"])).max() > 100 * FORWARD["atol"]


def test_forward_vector_matches_generator() -> None:
    assert forward() == FORWARD, "run `python -m tests.vectors.generate` after a deliberate change"
