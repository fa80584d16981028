"""Writes tests/vectors/vectors.json (hex frames that any implementation must agree on) and
tests/vectors/forward.json (one weights frame and the actions SPEC.md's network computes from it).

Valid vectors are built with our encoder; invalid ones are built by hand
(raw msgpack), each with the reason SPEC.md says it must get. Run it again
only when the protocol changes on purpose: test_vectors checks both that the
committed file decodes as stated and that it is what this script writes.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import msgpack
import numpy as np

from actor.policy import LocalPolicy
from protocol import Bye, EpisodeEnd, EpisodeStart, Experience, Heartbeat, Hello, Progress, Weights, decode, encode
from protocol.arch import Arch, actor_layout

HERE = Path(__file__).parent


def _arr(dtype: str, shape: list[int], data: bytes) -> dict:
    return {"dtype": dtype, "shape": shape, "data": data}


def valid() -> dict[str, bytes]:
    f32 = np.float32
    exp = Experience(
        sender="nim-bot-1", seq=7, bot="tank", episode=3, t0=0, version=12,
        obs=np.array([[0.5, -0.25], [0.75, 0.0]], f32), action=np.array([[1.0], [-1.0]], f32),
        reward=np.array([0.5, -1.0], f32), next_obs=np.array([[0.75, 0.0], [1.0, 0.125]], f32),
        terminated=np.array([False, True]), truncated=np.array([False, False]),
    )
    return {
        "hello": encode(Hello("nim-bot-1", 0, "tank", 2, 1, np.array([-1, -1], f32), np.array([1, 1], f32),
                              np.array([-2], f32), np.array([2], f32), "nim-bot 1.0", False)),
        "experience": encode(exp),
        "experience_with_state": encode(Experience(
            "nim-bot-1", 8, "tank", 3, 2, 12, exp.obs, exp.action, exp.reward, exp.next_obs, exp.terminated,
            exp.truncated, prev_action=np.array([0.5], f32), h0=np.zeros(4, f32), c0=np.ones(4, f32))),
        "episode_start": encode(EpisodeStart("nim-bot-1", 1, "tank", 3, "SpinBot")),
        "episode_end": encode(EpisodeEnd("nim-bot-1", 9, "tank", 3, -12.5, 2, False)),
        "heartbeat": encode(Heartbeat("nim-bot-1", 10, 41, 3, 200, 0)),
        "bye": encode(Bye("nim-bot-1", 11, 200, 0)),
        "weights": encode(Weights("learner", 5, 4, "00ff00ff00ff00ff", {"obs_dim": 2, "act_dim": 1, "hidden": 4},
                                  np.arange(6, dtype=f32), 100)),
        "progress": encode(Progress("learner", 6, 1000, 900, 1.0, 100, 4, 123456789)),
    }


def invalid() -> dict[str, tuple[bytes, str]]:
    base = msgpack.unpackb(valid()["experience"])
    pack = msgpack.packb

    def mutated(**changes: object) -> bytes:
        obj = dict(base)
        for key, value in changes.items():
            if value is None:
                obj.pop(key)
            else:
                obj[key] = value
        return pack(obj, use_bin_type=True)

    nan = np.array([[np.nan, 0.0], [0.0, 0.0]], np.float32).tobytes()
    return {
        "not_msgpack": (b"\xc1\xc1\xc1", "undecodable"),
        "truncated": (valid()["experience"][:40], "undecodable"),
        "top_level_list": (pack([1, 2, 3]), "undecodable"),
        "version_2": (mutated(v=2), "bad_version"),
        "no_version": (mutated(v=None), "missing_field"),
        "unknown_kind": (mutated(kind="teleport"), "unknown_kind"),
        "missing_reward": (mutated(reward=None), "missing_field"),
        "seq_is_string": (mutated(seq="7"), "bad_type"),
        "negative_seq": (mutated(seq=-1), "bad_value"),
        "obs_as_list_of_floats": (mutated(obs=[[0.5, -0.25], [0.75, 0.0]]), "bad_type"),
        "obs_float64": (mutated(obs=_arr("f64", [2, 2], bytes(32))), "bad_dtype"),
        "obs_pickle_dtype": (mutated(obs=_arr("object", [2, 2], bytes(16))), "bad_dtype"),
        "obs_short_data": (mutated(obs=_arr("f32", [2, 2], bytes(12))), "bad_shape"),
        "obs_absurd_shape": (mutated(obs=_arr("f32", [2**40, 2], bytes(16))), "bad_shape"),
        "action_rows_differ": (mutated(action=_arr("f32", [3, 1], bytes(12))), "bad_shape"),
        "obs_nan": (mutated(obs=_arr("f32", [2, 2], nan)), "non_finite"),
        "reward_inf": (mutated(reward=_arr("f32", [2], np.array([np.inf, 0], np.float32).tobytes())), "non_finite"),
        "done_before_last_step": (mutated(terminated=_arr("bool", [2], b"\x01\x00")), "bad_value"),
        "bool_byte_2": (mutated(truncated=_arr("bool", [2], b"\x00\x02")), "bad_value"),
        "empty_sender": (mutated(sender=""), "bad_value"),
        "long_bot_name": (mutated(bot="x" * 300), "too_large"),
        "ext_type": (mutated(version=msgpack.ExtType(1, b"x")), "bad_type"),
    }


def build() -> dict:
    return {
        "protocol_version": 1,
        "valid": [{"name": name, "kind": msgpack.unpackb(frame)["kind"], "hex": frame.hex()}
                  for name, frame in valid().items()],
        "invalid": [{"name": name, "reason": reason, "hex": frame.hex()} for name, (frame, reason) in invalid().items()],
    }


def rev_of(params: np.ndarray) -> str:
    """SPEC.md's rev: the first 16 hex digits of SHA-256 over params.data (little-endian f32)."""
    return hashlib.sha256(np.ascontiguousarray(params, "<f4").tobytes()).hexdigest()[:16]


FORWARD_ARCH = Arch(obs_dim=3, act_dim=2, hidden=4, fc=5, act_low=(-2.0, 0.0), act_high=(2.0, 1.0))
FORWARD_NOTE = (
    "Network section of SPEC.md. Decode weights_frame_b64 (a weights message exactly as the learner publishes "
    "it), start with h = c = 0 and feed the steps in order, carrying (h, c). Each step's obs is in the "
    "environment's units; prev_action is in policy units ([-1, 1]): the previous step's action a_env mapped by "
    "clip(2 (a_env - act_low) / (act_high - act_low) - 1, -1, 1), here expected.action of the step before; "
    "prev_reward is the reward received after that action. Both are 0 at step 0 (an episode's start). "
    "expected.mean is the pre-squash mean, expected.log_std the clamped log-std, expected.action the "
    "deterministic action in environment units: act_low + (tanh(mean) + 1) / 2 (act_high - act_low). Compare "
    "with absolute tolerance atol (float32 or float64 arithmetic both pass).")


def forward() -> dict:
    """A small actor with weights large enough that every input moves the output, rolled out over 5 steps
    by our numpy policy (actor/policy.py): the vector a bot's own forward pass must reproduce."""
    arch = FORWARD_ARCH
    size = sum(int(np.prod(shape)) for _, shape in actor_layout(arch))
    rng = np.random.default_rng(20261203)
    params = (rng.standard_normal(size) * 1.0).astype(np.float32)
    frame = encode(Weights("learner", 3, 7, rev_of(params), arch.to_wire(), params, 1234))
    policy = LocalPolicy(decode(frame))  # type: ignore[arg-type]
    obs = np.round(rng.uniform(-1.5, 1.5, (5, arch.obs_dim)), 3).astype(np.float32)
    rewards = [1.0, -0.5, 0.25, 2.0, 0.0]
    low, high = np.array(arch.act_low, np.float32), np.array(arch.act_high, np.float32)
    prev, prev_r, state = np.zeros(arch.act_dim, np.float32), 0.0, policy.initial_state()
    steps, means, log_stds, actions = [], [], [], []
    for t in range(len(obs)):
        steps.append({"obs": [float(x) for x in obs[t]], "prev_action": [float(x) for x in prev], "prev_reward": prev_r})
        mean, log_std, state = policy.forward(obs[t], prev, prev_r, state)
        action = policy.to_env(np.tanh(mean))
        means.append([float(x) for x in mean])
        log_stds.append([float(x) for x in log_std])
        actions.append([float(x) for x in action])
        prev = np.clip(2.0 * (action - low) / (high - low) - 1.0, -1.0, 1.0).astype(np.float32)
        prev_r = rewards[t]
    return {
        "note": FORWARD_NOTE, "weights_frame_b64": base64.b64encode(frame).decode("ascii"),
        "act_low": list(arch.act_low), "act_high": list(arch.act_high), "steps": steps,
        "expected": {"mean": means, "log_std": log_stds, "action": actions}, "atol": 1e-4,
    }


if __name__ == "__main__":
    (HERE / "vectors.json").write_text(json.dumps(build(), indent=1) + "\n")
    (HERE / "forward.json").write_text(json.dumps(forward(), indent=1) + "\n")
    print(f"wrote {HERE / 'vectors.json'} and {HERE / 'forward.json'}")
