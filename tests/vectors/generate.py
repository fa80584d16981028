"""Writes tests/vectors/vectors.json (hex frames that any implementation must agree on),
tests/vectors/forward.json (one weights frame and the actions SPEC.md's network computes from it) and
tests/vectors/forward_memoryless.json (the same parameters under a memoryless arch: no state carried).

Valid vectors are built with our encoder; invalid ones are built by hand
(raw msgpack), each with the reason SPEC.md says it must get. Run it again
only when the protocol changes on purpose: test_vectors checks both that the
committed file decodes as stated and that it is what this script writes.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
from pathlib import Path

import msgpack
import numpy as np

from actor.policy import LocalPolicy
from protocol import Bye, EpisodeEnd, EpisodeStart, Experience, Heartbeat, Hello, Progress, Weights, decode, encode
from protocol.arch import Arch, actor_layout
from protocol.messages import SPEC_VERSION
from protocol.scaling import to_policy

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
        # 1.5: an action target per step, NaN where a step (or a part) has none
        "experience_with_target": encode(dataclasses.replace(exp, seq=14, target=np.array([[np.nan], [0.5]], f32))),
        "episode_start": encode(EpisodeStart("nim-bot-1", 1, "tank", 3, "SpinBot")),
        "episode_end": encode(EpisodeEnd("nim-bot-1", 9, "tank", 3, -12.5, 2, False)),
        "heartbeat": encode(Heartbeat("nim-bot-1", 10, 41, 3, 200, 0)),
        "bye": encode(Bye("nim-bot-1", 11, 200, 0)),
        # 1.6: action targets the sender dropped because their step had already left
        "heartbeat_labels_late": encode(Heartbeat("nim-bot-1", 12, 42, 3, 232, 0, 1.5, 7)),
        "bye_labels_late": encode(Bye("nim-bot-1", 13, 232, 0, 9)),
        "weights": encode(Weights("learner", 5, 4, rev_of(params), WEIGHTS_ARCH.to_wire(), params, 100)),
        "weights_state_every": encode(Weights("learner", 5, 4, rev_of(params), WEIGHTS_ARCH.to_wire(), params, 100,
                                              16)),
        "progress": encode(Progress("learner", 6, 1000, 900, 1.0, 100, 4, 123456789)),
        "progress_per_sender": encode(Progress("learner", 7, 1000, 900, 0.5, 100, 4, 2**53 - 1,
                                               {"nim-bot-1": 990, "nim-bot-2": 10})),
        "hello_minimal_unicode": encode(Hello("nim-bot-é", 0, "é" * 256, 2, 1, np.full(2, -np.inf, f32),
                                              np.full(2, np.inf, f32), np.array([-2], f32), np.array([2], f32))),
        "episode_start_numeric_opponent": _patched(EpisodeStart("nim-bot-1", 2, "tank", 4), opponent=17),
        "episode_start_no_opponent": _patched(EpisodeStart("nim-bot-1", 2, "tank", 4), opponent=None),
        # an integer opponent is any msgpack integer, read as its decimal text: "-3", "18446744073709551615"
        "episode_start_negative_opponent": _patched(EpisodeStart("nim-bot-1", 2, "tank", 4), opponent=-3),
        "episode_start_opponent_2_64_minus_1": _patched(EpisodeStart("nim-bot-1", 2, "tank", 4), opponent=2**64 - 1),
        # both flags on the last step: accepted, and terminal (no bootstrapping)
        "experience_terminated_and_truncated": encode(dataclasses.replace(exp, seq=13, truncated=np.array([False, True]))),
        "episode_end_int_return": _patched(EpisodeEnd("nim-bot-1", 9, "tank", 3, 0.0, 2, True), **{"return": -12}),
        "experience_wide_ints_reordered": _reordered(encode(exp)),
    }


WEIGHTS_ARCH = Arch(obs_dim=2, act_dim=1, hidden=2, fc=2, act_low=(-2.0,), act_high=(2.0,))
"""The weights vector's network: as small as a real one gets (P = 47 floats)."""
params = (np.arange(sum(int(np.prod(s)) for _, s in actor_layout(WEIGHTS_ARCH))) / 16 - 1).astype(np.float32)


def _patched(msg: object, **changes: object) -> bytes:
    """The frame of `msg` with keys replaced (None: removed), packed as our encoder packs."""
    obj = dict(msg) if isinstance(msg, dict) else msgpack.unpackb(encode(msg))  # type: ignore[arg-type]
    for key, value in changes.items():
        if value is None:
            obj.pop(key)
        else:
            obj[key] = value
    return msgpack.packb(obj, use_bin_type=True)


def _reordered(frame: bytes) -> bytes:
    """The same message with its keys in reverse order and every top-level uint as a uint64 (0xcf): valid,
    since the encoding is not canonical (SPEC.md, Encoding)."""
    obj = msgpack.unpackb(frame)
    out = bytearray(b"\xde" + len(obj).to_bytes(2, "big"))
    for key, value in reversed(list(obj.items())):
        out += msgpack.packb(key)
        out += b"\xcf" + value.to_bytes(8, "big") if type(value) is int else msgpack.packb(value, use_bin_type=True)
    return bytes(out)


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
        "obs_dtype_not_a_string": (mutated(obs={"dtype": 1, "shape": [2, 2], "data": bytes(16)}), "bad_dtype"),
        "obs_short_data": (mutated(obs=_arr("f32", [2, 2], bytes(12))), "bad_shape"),
        "obs_absurd_shape": (mutated(obs=_arr("f32", [2**40, 2], bytes(16))), "bad_shape"),
        # prod(shape) * itemsize is exact: in 64-bit arithmetic these wrap to the data's length (2^65 + 16, 2^64 + 8)
        "obs_shape_product_wraps_64_bits": (mutated(obs=_arr("f32", [2**62 + 2, 2], bytes(16))), "bad_shape"),
        "reward_shape_product_wraps_64_bits": (mutated(reward=_arr("f32", [2**62 + 2], bytes(8))), "bad_shape"),
        "action_rows_differ": (mutated(action=_arr("f32", [3, 1], bytes(12))), "bad_shape"),
        "obs_nan": (mutated(obs=_arr("f32", [2, 2], nan)), "non_finite"),
        "reward_inf": (mutated(reward=_arr("f32", [2], np.array([np.inf, 0], np.float32).tobytes())), "non_finite"),
        "done_before_last_step": (mutated(terminated=_arr("bool", [2], b"\x01\x00")), "bad_value"),
        "bool_byte_2": (mutated(truncated=_arr("bool", [2], b"\x00\x02")), "bad_value"),
        "empty_sender": (mutated(sender=""), "bad_value"),
        "long_bot_name": (mutated(bot="x" * 300), "too_large"),
        "ext_type": (mutated(version=msgpack.ExtType(1, b"x")), "undecodable"),
        "ext_in_unknown_key": (mutated(future=msgpack.ExtType(7, b"")), "undecodable"),
        "duplicate_key": (_duplicate(mutated(), "t0", 5), "undecodable"),
        "bin_map_key": (mutated(future=1).replace(b"\xa6future", b"\xc4\x06future"), "undecodable"),
        "several_faults_version_wins": (mutated(v=2, reward=None, obs=_arr("f32", [2, 2], nan)), "bad_version"),
        "several_faults_missing_before_nan": (mutated(reward=None, obs=_arr("f32", [2, 2], nan)), "missing_field"),
        "episode_as_float": (mutated(episode=3.0), "bad_type"),
        "sender_257_chars": (mutated(sender="s" * 257), "too_large"),
        "batch_4097_steps": (_steps(4097, obs_dim=1), "too_large"),
        # n is the rows of obs: checked against 4096 before the other arrays' rows are compared with it
        "obs_4097_rows_others_2": (mutated(obs=_arr("f32", [4097, 2], bytes(4097 * 8))), "too_large"),
        "reward_4097_rows_obs_2": (mutated(reward=_arr("f32", [4097], bytes(4097 * 4))), "bad_shape"),
        "empty_batch": (_steps(0), "bad_shape"),
        "negative_shape_entry": (mutated(reward=_arr("f32", [-2], b"")), "bad_shape"),
        "h0_without_c0": (mutated(h0=_arr("f32", [4], bytes(16))), "bad_shape"),
        "h0_c0_widths_differ": (mutated(h0=_arr("f32", [4], bytes(16)), c0=_arr("f32", [3], bytes(12))), "bad_shape"),
        "prev_reward_nan": (mutated(prev_reward=float("nan")), "non_finite"),
        "target_infinite": (mutated(target=_arr("f32", [2, 1], f32s(np.nan, np.inf))), "non_finite"),
        "target_wrong_width": (mutated(target=_arr("f32", [2, 2], bytes(16))), "bad_shape"),
        "target_wrong_steps": (mutated(target=_arr("f32", [1, 1], bytes(4))), "bad_shape"),
        "hello_missing_act_high": (hello(act_high=None), "missing_field"),
        "hello_obs_dim_65537": (hello(obs_dim=65537), "too_large"),
        "hello_obs_dim_0": (hello(obs_dim=0), "bad_value"),
        "hello_obs_low_wrong_width": (hello(obs_low=_arr("f32", [1], bytes(4))), "bad_shape"),
        "hello_obs_high_nan": (hello(obs_high=_arr("f32", [2], nan[:8])), "non_finite"),
        "hello_act_bounds_inverted": (hello(act_low=_arr("f32", [1], f32s(2)), act_high=_arr("f32", [1], f32s(-2))),
                                      "bad_value"),
        "hello_act_low_infinite": (hello(act_low=_arr("f32", [1], f32s(-np.inf))), "non_finite"),
        "hello_eval_as_int": (hello(eval=1), "bad_type"),
        "hello_software_257_chars": (hello(software="v" * 257), "too_large"),
        "episode_start_missing_episode": (_patched(EpisodeStart("nim-bot-1", 1, "tank", 3, "x"), episode=None),
                                          "missing_field"),
        "episode_start_opponent_list": (_patched(EpisodeStart("nim-bot-1", 1, "tank", 3, "x"), opponent=["x"]),
                                        "bad_type"),
        "episode_end_return_nan": (_patched(EpisodeEnd("nim-bot-1", 9, "tank", 3, 1.0, 2), **{"return": float("nan")}),
                                   "non_finite"),
        "episode_end_missing_length": (_patched(EpisodeEnd("nim-bot-1", 9, "tank", 3, 1.0, 2), length=None),
                                       "missing_field"),
        "episode_end_negative_length": (_patched(EpisodeEnd("nim-bot-1", 9, "tank", 3, 1.0, 2), length=-1), "bad_value"),
        "heartbeat_missing_dropped": (_patched(Heartbeat("nim-bot-1", 10, 41, 3, 200, 0), dropped=None),
                                      "missing_field"),
        "heartbeat_round_as_float": (_patched(Heartbeat("nim-bot-1", 10, 41, 3, 200, 0), round=41.0), "bad_type"),
        "heartbeat_labels_late_negative": (_patched(Heartbeat("nim-bot-1", 10, 41, 3, 200, 0), labels_late=-1),
                                           "bad_value"),
        "bye_labels_late_as_float": (_patched(Bye("nim-bot-1", 11, 200, 0), labels_late=2.0), "bad_type"),
        "bye_missing_sent": (_patched(Bye("nim-bot-1", 11, 200, 0), sent=None), "missing_field"),
        "progress_utd_zero": (_patched(Progress("learner", 6, 1000, 900, 1.0, 100, 4, 1), utd=0.0), "bad_value"),
        "weights_arch_not_a_map": (_patched(msgpack.unpackb(valid()["weights"]), arch=[1]), "bad_type"),
        # a count over its limit is too_large, like a string's length or a batch's steps
        "weights_arch_65_entries": (_patched(msgpack.unpackb(valid()["weights"]), arch=_arch_of(65)), "too_large"),
        "progress_per_sender_key_257_chars": (_patched(Progress("learner", 6, 1000, 900, 1.0, 100, 4, 1),
                                                       per_sender={"s" * 257: 1}), "too_large"),
        "progress_per_sender_not_a_map": (_patched(Progress("learner", 6, 1000, 900, 1.0, 100, 4, 1),
                                                   per_sender=[["s1", 1]]), "bad_type"),
        # entries are checked in the order they are encoded, each key then its value: the first faulty one decides
        "progress_per_sender_bad_value_first": (_patched(Progress("learner", 6, 1000, 900, 1.0, 100, 4, 1),
                                                         per_sender={"a": -1, "s" * 257: 1}), "bad_value"),
        "progress_per_sender_long_key_first": (_patched(Progress("learner", 6, 1000, 900, 1.0, 100, 4, 1),
                                                        per_sender={"s" * 257: 1, "a": -1}), "too_large"),
    }


def f32s(*values: float) -> bytes:
    return np.array(values, np.float32).tobytes()


def hello(**changes: object) -> bytes:
    return _patched(msgpack.unpackb(valid()["hello"]), **changes)


def _duplicate(frame: bytes, key: str, value: object) -> bytes:
    """`frame` (a fixmap of at most 14 entries) with `key` written a second time."""
    return bytes([frame[0] + 1]) + frame[1:] + msgpack.packb(key) + msgpack.packb(value)


def _steps(n: int, obs_dim: int = 2) -> bytes:
    """An otherwise valid batch of n steps, act_dim 1 (n = 0 and n > 4096 are faults)."""
    f32 = np.float32
    return encode(Experience("nim-bot-1", 12, "tank", 4, 0, 12, np.zeros((n, obs_dim), f32), np.zeros((n, 1), f32),
                             np.zeros(n, f32), np.zeros((n, obs_dim), f32), np.zeros(n, bool), np.zeros(n, bool)))


RUN = {"obs_dim": 2, "act_dim": 1, "act_low": [-2.0], "act_high": [2.0], "hidden": 4}
"""The run the `run_invalid` and `learner` vectors assume (the learner's configuration)."""


def run_invalid() -> dict[str, tuple[bytes, str]]:
    """Valid frames that a learner configured as RUN must still reject (decode with its limits)."""
    f32 = np.float32
    base = msgpack.unpackb(valid()["experience"])
    three = msgpack.unpackb(valid()["hello"])
    three.update(obs_dim=3, obs_low=_arr("f32", [3], bytes(12)), obs_high=_arr("f32", [3], f32s(1, 1, 1)))
    return {
        "experience_obs_dim_3": (_steps_of(3, 1), "dims_mismatch"),
        "experience_act_dim_2": (_steps_of(2, 2), "dims_mismatch"),
        "hello_obs_dim_3": (msgpack.packb(three, use_bin_type=True), "dims_mismatch"),
        "h0_width_5": (msgpack.packb({**base, "h0": _arr("f32", [5], bytes(20)), "c0": _arr("f32", [5], bytes(20))},
                                     use_bin_type=True), "dims_mismatch"),
        "action_above_high": (msgpack.packb({**base, "action": _arr("f32", [2, 1], f32s(2.001, 0))}, use_bin_type=True),
                              "out_of_bounds"),
        "prev_action_below_low": (msgpack.packb({**base, "t0": 2, "prev_action": _arr("f32", [1], f32s(-2.5))},
                                                use_bin_type=True), "out_of_bounds"),
        # checked whenever present, though at t0 = 0 its value is not used
        "prev_action_below_low_at_t0_0": (msgpack.packb({**base, "prev_action": _arr("f32", [1], f32s(-2.5))},
                                                        use_bin_type=True), "out_of_bounds"),
        "_valid_action_within_tolerance": (msgpack.packb({**base, "action": _arr("f32", [2, 1], np.array(
            [2.0002, -2.0002], f32).tobytes())}, use_bin_type=True), ""),
    }


def _with(frame: bytes, **changes: object) -> bytes:
    return msgpack.packb({**msgpack.unpackb(frame), **changes}, use_bin_type=True)


def _steps_of(obs_dim: int, act_dim: int) -> bytes:
    f32 = np.float32
    return encode(Experience("nim-bot-1", 12, "tank", 4, 0, 12, np.zeros((2, obs_dim), f32), np.zeros((2, act_dim), f32),
                             np.zeros(2, f32), np.zeros((2, obs_dim), f32), np.zeros(2, bool), np.zeros(2, bool)))


def learner_frames() -> list[tuple[str, bytes, str]]:
    """Frames sent in this order to one learner configured as RUN: each one's outcome ("accepted" or the
    reason it is rejected for). The learner-side reasons need a learner's memory of what came before."""
    f32 = np.float32
    one = np.ones(1, f32)

    def batch(seq: int, bot: str, episode: int, t0: int, sender: str = "s1") -> bytes:
        return encode(Experience(sender, seq, bot, episode, t0, 0, np.full((2, 2), 0.5, f32), np.zeros((2, 1), f32),
                                 np.ones(2, f32), np.full((2, 2), 0.5, f32), np.zeros(2, bool), np.zeros(2, bool)))

    def hi(seq: int, bot: str, low: float = -2.0, evaluating: bool = False, sender: str = "s1",
           obs_dim: int = 2) -> bytes:
        return encode(Hello(sender, seq, bot, obs_dim, 1, -np.ones(obs_dim, f32), np.ones(obs_dim, f32), low * one,
                            2 * one, "vectors", evaluating))

    learner_only = msgpack.unpackb(valid()["progress"])
    return [
        ("experience_before_hello", batch(0, "tank", 3, 0), "unknown_sender"),
        ("hello", hi(0, "tank"), "accepted"),
        ("first_batch", batch(1, "tank", 3, 0), "accepted"),
        ("same_steps_again", batch(2, "tank", 3, 0), "out_of_order"),
        ("overlapping_steps", batch(3, "tank", 3, 1), "out_of_order"),
        ("skips_ahead_a_gap", batch(4, "tank", 3, 5), "accepted"),
        ("earlier_episode", batch(5, "tank", 2, 100), "out_of_order"),
        ("next_episode", batch(6, "tank", 4, 0), "accepted"),
        ("bot_without_hello", batch(7, "other", 0, 0), "unknown_sender"),
        ("hello_with_other_bounds", hi(8, "odd", low=-1.0), "bounds_mismatch"),
        ("bot_whose_hello_was_refused", batch(9, "odd", 0, 0), "unknown_sender"),
        ("eval_hello", hi(10, "judge", evaluating=True), "accepted"),
        ("experience_from_eval_bot", batch(11, "judge", 0, 0), "eval_experience"),
        ("weights_on_ingest", _patched(msgpack.unpackb(valid()["weights"]), sender="s1", seq=12), "wrong_direction"),
        ("progress_on_ingest", msgpack.packb({**learner_only, "sender": "s1", "seq": 13}), "wrong_direction"),
        ("heartbeat", encode(Heartbeat("s1", 14, 1, 0, 14, 0)), "accepted"),
        ("h0_width_5", _with(batch(15, "tank", 5, 0), h0=_arr("f32", [5], bytes(20)), c0=_arr("f32", [5], bytes(20))),
         "dims_mismatch"),
        ("action_out_of_bounds", _with(batch(16, "tank", 5, 0), action=_arr("f32", [2, 1], f32s(0, 3))),
         "out_of_bounds"),
        ("heartbeat_after_two_rejects", encode(Heartbeat("s1", 17, 2, 0, 18, 0)), "accepted"),
        ("new_session_hello", hi(0, "tank"), "accepted"),
        ("episode_0_after_new_session", batch(1, "tank", 0, 0), "accepted"),
        # Frames that fail decoding book floor(len(reward.data) / 4) steps when a lenient msgpack read finds them:
        ("ext_value_books_its_steps", _with(batch(2, "tank", 0, 2), future=msgpack.ExtType(7, b"")), "undecodable"),
        ("repeated_reward_books_the_last", _duplicate(batch(3, "tank", 0, 2), "reward", _arr("f32", [3], bytes(12))),
         "undecodable"),
        ("invalid_utf8_books_nothing", _with(batch(4, "tank", 0, 2), future="x").replace(b"\xa1x", b"\xa1\xff"),
         "undecodable"),
        ("heartbeat_after_three_undecodable", encode(Heartbeat("s1", 5, 3, 0, 12, 0)), "accepted"),
        # A hello with seq 0 starts a new session even when it is refused: order and last seq are forgotten
        # (lost and late counts are kept), and the bot stays known from its earlier accepted hello.
        ("refused_new_session_hello", hi(0, "tank", low=-1.0), "bounds_mismatch"),
        ("episode_0_again_after_refused_hello", batch(1, "tank", 0, 0), "accepted"),
        ("late_heartbeat", encode(Heartbeat("s1", 1, 4, 0, 16, 0)), "accepted"),
        # A hello refused for its D fails decoding: its seq 0 is not seen and starts no session. The stream keeps
        # its order (episode 0 up to t 2), the last seq stands (1): the restarted bot's episode-0 batch is
        # out_of_order, and late.
        ("refused_dims_new_session_hello", hi(0, "tank", obs_dim=3), "dims_mismatch"),
        ("episode_0_after_refused_dims_hello", batch(1, "tank", 0, 0), "out_of_order"),
        # bye takes s1 out of `settled`; a frame that fails decoding leaves it out (its steps are booked all the
        # same), and the next frame that decodes brings it back with its books as they were.
        ("bye", encode(Bye("s1", 2, 30, 0)), "accepted"),
        ("undecodable_after_bye", _with(batch(3, "tank", 0, 2), future=msgpack.ExtType(7, b"")), "undecodable"),
        ("heartbeat_after_bye", encode(Heartbeat("s1", 4, 5, 0, 32, 0)), "accepted"),
    ]


LEARNER_OUTCOMES = ("accepted", "unknown_sender", "eval_experience", "wrong_direction", "bounds_mismatch",
                    "out_of_order")
"""Outcomes of frames that decoded (the learner's own reasons): only these give the learner books on a sender."""


def books(frames: list[tuple[str, bytes, str]]) -> list[tuple[int, int | None]]:
    """Per frame of one sender (s1) to one learner: the steps it books (received when accepted, rejected
    otherwise; none while the learner has no books on s1: nothing of it decoded yet) and s1's entry in
    `progress.settled` after it (None: not listed). Listed: the learner has books on s1, s1 trains here (a
    training bot's hello accepted, or steps booked) and has not said bye since its last frame that decoded."""
    out: list[tuple[int, int | None]] = []
    known = trains = said_bye = False
    total = 0
    for name, frame, outcome in frames:
        decoded = outcome in LEARNER_OUTCOMES
        known = known or decoded
        steps = booked(name, frame) if known else 0
        total += steps
        if decoded:
            msg = msgpack.unpackb(frame)
            said_bye = msg["kind"] == "bye"
            trains = trains or (msg["kind"] == "hello" and outcome == "accepted" and not msg.get("eval", False))
        trains = trains or total > 0
        out.append((steps, total if known and trains and not said_bye else None))
    return out


STEPS_BOOKED = {"ext_value_books_its_steps": 2, "repeated_reward_books_the_last": 3, "invalid_utf8_books_nothing": 0}
"""Steps a learner books against the sender for frames whose count a plain msgpack read does not give."""


def booked(name: str, frame: bytes) -> int:
    """Steps of one learner-sequence frame booked against s1 (received or rejected): floor(len(reward.data) / 4)
    of an experience frame (SPEC.md, Accounting), 0 for other kinds."""
    if name in STEPS_BOOKED:
        return STEPS_BOOKED[name]
    m = msgpack.unpackb(frame)
    return len(m["reward"]["data"]) // 4 if m["kind"] == "experience" else 0


def restart_frames() -> list[list[tuple[str, bytes, str]]]:
    """Sender s1's frames to a learner configured as RUN, then to a fresh one (a restart: a new session)."""
    f32 = np.float32

    def batch(seq: int, t0: int, action: float = 0.0) -> bytes:
        return encode(Experience("s1", seq, "tank", 0, t0, 0, np.full((2, 2), 0.5, f32), np.full((2, 1), action, f32),
                                 np.ones(2, f32), np.full((2, 2), 0.5, f32), np.zeros(2, bool), np.zeros(2, bool)))

    def hi(seq: int) -> bytes:
        return encode(Hello("s1", seq, "tank", 2, 1, -np.ones(2, f32), np.ones(2, f32), np.full(1, -2, f32),
                            np.full(1, 2, f32), "vectors"))

    first = [
        ("hello", hi(0), "accepted"),
        ("batch", batch(1, 0), "accepted"),
        ("batch_out_of_bounds", batch(2, 2, action=3.0), "out_of_bounds"),  # a decoding fault: seq 2 is lost
        ("heartbeat", encode(Heartbeat("s1", 3, 1, 0, 4, 0)), "accepted"),
        # seq 4, a batch of 2 steps (t0 4), went to this learner and died with it: in no list here
    ]
    second = [
        # The fresh learner has no books on s1: this frame's reason is counted, its 2 steps are booked nowhere,
        # and its seq is not seen (so it is not lost either).
        ("undecodable_first", _with(batch(5, 6), future=msgpack.ExtType(7, b"")), "undecodable"),
        # The first seq this learner sees is 6: nothing before it is lost.
        ("hello_again_seq_6", hi(6), "accepted"),
        ("batch_after_restart", batch(7, 8), "accepted"),  # the stream's first batch here, t0 > 0: a gap
        # sent counts from s1's start: 2 + 2 to the first learner, 2 lost with it, 2 + 2 to this one
        ("heartbeat", encode(Heartbeat("s1", 8, 2, 0, 10, 0)), "accepted"),
    ]
    return [first, second]


def replayed(frames: list[tuple[str, bytes, str]], **totals: int) -> dict:
    """One learner's part of a sequence: each frame with its outcome, the steps it books and s1's `settled`
    after it; then the totals its books show for s1 (`totals` adds those not worked out from the frames)."""
    outcomes = [outcome for _, _, outcome in frames]
    booked_steps = books(frames)
    return {
        "frames": [{"name": name, "outcome": outcome, "steps": steps, "settled": settled, "hex": frame.hex()}
                   for (name, frame, outcome), (steps, settled) in zip(frames, booked_steps)],
        "totals": {"rejects": {r: outcomes.count(r) for r in sorted(set(outcomes) - {"accepted"})},
                   "received": sum(n for o, (n, _) in zip(outcomes, booked_steps) if o == "accepted"),
                   "rejected": sum(n for o, (n, _) in zip(outcomes, booked_steps) if o != "accepted"), **totals},
    }


def build() -> dict:
    run = run_invalid()
    first, second = restart_frames()
    return {
        "protocol_version": 1,
        "spec_version": SPEC_VERSION,
        "valid": [{"name": name, "kind": msgpack.unpackb(frame)["kind"], "hex": frame.hex()}
                  for name, frame in valid().items()]
        + [{"name": name[1:], "kind": "experience", "hex": frame.hex(), "run": RUN}
           for name, (frame, _) in run.items() if name.startswith("_")],
        "invalid": [{"name": name, "reason": reason, "hex": frame.hex()} for name, (frame, reason) in invalid().items()]
        + [{"name": name, "reason": reason, "hex": frame.hex(), "run": RUN}
           for name, (frame, reason) in run.items() if not name.startswith("_")],
        "learner": {
            "note": "Send these frames in order, from one PUSH socket, to a learner configured as `run` (obs_dim, "
                    "act_dim, act_low, act_high; hidden is H). Each frame's outcome is `accepted` or the reason it "
                    "is rejected for, `steps` the experience steps it books against s1 (received when accepted, "
                    "rejected otherwise), and `settled` s1's entry in the learner's `progress.settled` after it "
                    "(null: s1 is not listed); `totals` is what the learner's books then show for sender s1 (frames "
                    "that fail decoding are lost sequence numbers once a later number arrives, and a hello with seq "
                    "0 that decodes starts the count again; lost and late counts are kept).",
            "run": RUN,
            **replayed(learner_frames(), gaps=2, lost_msgs=6, late_msgs=2),
        },
        "restart": {
            "note": "Sender s1's frames to a learner configured as `run`, then to a fresh learner configured the "
                    "same (the first one's restart: a new session), in the `learner` format. `totals.sent` is the "
                    "`sent` of s1's last heartbeat as each learner's books show it: s1's own count since it "
                    "started, never reset by a learner session, so after the restart sent exceeds received + "
                    "rejected by what went to the first learner (4 steps read there, 2 lost with it) and the 2 "
                    "steps of a frame the second rejected before it had books on s1. The first seq each learner "
                    "sees from s1 starts its count: nothing is lost before it.",
            "run": RUN,
            "learners": [replayed(first, gaps=0, lost_msgs=1, late_msgs=0, sent=4),
                         replayed(second, gaps=1, lost_msgs=0, late_msgs=0, sent=10)],
        },
        "flow": flow_vector(),
    }


FLOW_NOTE = (
    "SPEC.md, Flow control, for a rate-limited bot whose sender id is `sender` and whose own tolerance is "
    "`tolerance`. Go through `steps` in order. Each gives the newest progress frame the bot has read (`progress`, "
    "hex; null: none yet since it started), then `may_take`: how many steps the bot may take now, one after "
    "another, before it must wait for a newer progress; then `then`: the steps it took before the next entry, "
    "`sent` of them sent and `dropped` of them dropped by its own full queue (they are not taken, as they never "
    "reach the learner). Entry 0's steps were taken when its flow timeout let it go on (no progress yet). The "
    "session changes at entry 7: taken starts again at 0 there (the first session a bot reads is no change).")

FLOW_SESSIONS = (7001, 7002)


def flow_vector() -> dict:
    """Progress messages and the steps a bot may take after each, worked out by hand from SPEC.md's rule (the
    reasons in the comments); tests/test_vectors.py checks protocol.flow and the actor's link against them."""

    def progress(session: int, received: int, grad_steps: int, settled: dict[str, int], utd: float = 1.0,
                 per_sender: dict[str, int] | None = None) -> str:
        return encode(Progress("learner", 100 + received + grad_steps, received, grad_steps, utd, 100, 4, session,
                               per_sender if per_sender is not None else settled, settled)).hex()

    one, two = FLOW_SESSIONS
    steps = [
        # no progress: wait (the timeout let it take 3, sent)
        ("before_any_progress", None, 0, 3, 0),
        # s1's hello not read yet: not listed, wait
        ("hello_not_read_yet", progress(one, 0, 0, {"s2": 0}), 0, 0, 0),
        # the first session is no change: taken = 3 from before it; share min(100 + 8 - 0, 8) / 2 = 4: 3 < 4
        ("first_session_counts_earlier_steps", progress(one, 0, 0, {"s1": 0, "s2": 0}), 1, 1, 0),
        # 4 taken, 4 settled (2 of them rejected: not in received or per_sender): 0 unsettled < 4, ..., 3 < 4
        ("rejected_steps_settle", progress(one, 2, 0, {"s1": 4, "s2": 0}, per_sender={"s1": 2, "s2": 0}), 4, 2, 2),
        # taken 6 (the 2 dropped are not), settled 6: 4 again (counting the dropped, 2 unsettled: 2)
        ("dropped_steps_are_not_taken", progress(one, 4, 0, {"s1": 6, "s2": 0}), 4, 4, 0),
        # slack 100 + 0 + 8 - 116 = -8: the learner owes training, nobody steps
        ("learner_owes_training", progress(one, 116, 0, {"s1": 10, "s2": 106}), 0, 0, 0),
        # 24 gradient steps: slack 124 + 8 - 116 = 16, share min(16, 8) / 2 = 4
        ("trained", progress(one, 116, 24, {"s1": 10, "s2": 106}), 4, 4, 0),
        # a new session: taken 0 again (else 14 unsettled); utd 1/49: 1 / utd = 49.00000000000001, tol
        # = max(8, ceil(49.00000000000001 - 1e-9)) = 49 (not 50); slack 100 + 49 - 130 = 19, k = 1: 19
        ("new_session_one_gradient_step_is_49_steps", progress(two, 130, 0, {"s1": 0}, utd=1 / 49), 19, 19, 0),
        # all 19 settled, received 149: slack 0, wait
        ("caught_up", progress(two, 149, 0, {"s1": 19}, utd=1 / 49), 0, 0, 0),
        # received went down (the learner stopped owing 29 steps: a clear emptied its replay): slack 29
        ("received_goes_down", progress(two, 120, 0, {"s1": 19}, utd=1 / 49), 29, 29, 0),
    ]
    return {"note": FLOW_NOTE, "sender": "s1", "tolerance": 8,
            "steps": [{"name": name, "progress": hexed, "may_take": may, "then": {"sent": sent, "dropped": dropped}}
                      for name, hexed, may, sent, dropped in steps]}


def _arch_of(entries: int) -> dict:
    """The weights vector's arch padded with extra keys to `entries` in all (however many keys an arch has)."""
    arch = msgpack.unpackb(valid()["weights"])["arch"]
    return {**arch, **{f"extra{i}": i for i in range(entries - len(arch))}}


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
MEMORYLESS_NOTE = FORWARD_NOTE.replace(
    "start with h = c = 0 and feed the steps in order, carrying (h, c).",
    "its arch has memoryless: true, so reset h = c = 0 before every step (carry no state) and feed the steps in "
    "order.")


def forward(memoryless: bool = False) -> dict:
    """A small actor with weights large enough that every input moves the output, rolled out over 5 steps
    by our numpy policy (actor/policy.py): the vector a bot's own forward pass must reproduce. Memoryless: the
    same parameters and inputs, each step from a zero state (the inputs follow that vector's own actions)."""
    arch = dataclasses.replace(FORWARD_ARCH, memoryless=memoryless)
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
        prev = to_policy(action, low, high)
        prev_r = rewards[t]
    return {
        "note": MEMORYLESS_NOTE if memoryless else FORWARD_NOTE, "weights_frame_b64": base64.b64encode(frame).decode("ascii"),
        "act_low": list(arch.act_low), "act_high": list(arch.act_high), "steps": steps,
        "expected": {"mean": means, "log_std": log_stds, "action": actions}, "atol": 1e-4,
    }


if __name__ == "__main__":
    (HERE / "vectors.json").write_text(json.dumps(build(), indent=1) + "\n")
    (HERE / "forward.json").write_text(json.dumps(forward(), indent=1) + "\n")
    (HERE / "forward_memoryless.json").write_text(json.dumps(forward(memoryless=True), indent=1) + "\n")
    print(f"wrote {HERE / 'vectors.json'}, {HERE / 'forward.json'} and {HERE / 'forward_memoryless.json'}")
