"""The native experience decoder against the Python reference decoder.

The native path may only ever answer a frame with what the reference would
decode it to, or with None (then the reference decides). These tests write
frames the way other languages' msgpack libraries may (any int, str, bin, map
and array width, keys in any order), then break them in every way we know.
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Callable
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import Experience, Limits, ProtocolError, codec, encode
from protocol.codec import DEFAULT_LIMITS
from tests.test_codec import assert_same, experiences

pytestmark = pytest.mark.skipif(
    codec._fastwire is None and not os.environ.get("SACLSTM_REQUIRE_NATIVE"),
    reason="native decoder not built (no C compiler at install); decoding runs in pure Python")


def test_native_decoder_is_built() -> None:
    """`make test` sets SACLSTM_REQUIRE_NATIVE: there a missing build fails rather than skips."""
    assert codec._fastwire is not None


class RawStr(bytes):
    """A msgpack str whose bytes are written as given, valid UTF-8 or not."""


class Pair(tuple):  # type: ignore[type-arg]
    """A map entry in a list of pairs, so a map can repeat a key."""


Draw = Callable[[st.SearchStrategy[Any]], Any]


class Choices:
    """How `wide` picks among equivalent encodings: drawn by hypothesis, or the first of each (plain)."""

    def __init__(self, draw: Draw | None = None) -> None:
        self.draw = draw

    def one(self, forms: list[bytes]) -> bytes:
        return self.draw(st.sampled_from(forms)) if self.draw else forms[0]

    def order(self, pairs: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
        return self.draw(st.permutations(pairs)) if self.draw else pairs


def _sized(pick: Choices, length: int, fixed: tuple[int, int] | None, tags: list[tuple[int, int]]) -> bytes:
    """A header for `length` in any form that holds it: fixed (base, limit), else (tag, width) forms."""
    forms = [bytes([fixed[0] + length])] if fixed and length < fixed[1] else []
    forms += [bytes([tag]) + length.to_bytes(width, "big") for tag, width in tags if length < 1 << (8 * width)]
    return pick.one(forms)


def wide(obj: Any, pick: Choices) -> bytes:
    """msgpack of `obj`, each width as `pick` chooses; dicts may also be lists of Pairs (repeats allowed)."""
    if isinstance(obj, bool) or obj is None:
        return {True: b"\xc3", False: b"\xc2", None: b"\xc0"}[obj]
    if isinstance(obj, int):
        if obj < 0:
            return b"\xd3" + obj.to_bytes(8, "big", signed=True)
        forms = [bytes([obj])] if obj < 128 else []
        forms += [bytes([0xcc + i]) + obj.to_bytes(1 << i, "big") for i in range(4) if obj < 1 << (8 << i)]
        forms += [bytes([0xd0 + i]) + obj.to_bytes(1 << i, "big") for i in range(4) if obj < 1 << ((8 << i) - 1)]
        return pick.one(forms)
    if isinstance(obj, float):
        forms = [b"\xcb" + struct.pack(">d", obj)]
        if math.isnan(obj) or (abs(obj) <= 3.4e38 and float(np.float32(obj)) == obj):
            forms.append(b"\xca" + struct.pack(">f", obj))
        return pick.one(forms)
    if isinstance(obj, (str, RawStr)):
        raw = bytes(obj) if isinstance(obj, RawStr) else obj.encode()
        return _sized(pick, len(raw), (0xa0, 32), [(0xd9, 1), (0xda, 2), (0xdb, 4)]) + raw
    if isinstance(obj, bytes):
        return _sized(pick, len(obj), None, [(0xc4, 1), (0xc5, 2), (0xc6, 4)]) + obj
    if isinstance(obj, (list, tuple)) and not (obj and isinstance(obj[0], Pair)):
        return _sized(pick, len(obj), (0x90, 16), [(0xdc, 2), (0xdd, 4)]) + b"".join(wide(x, pick) for x in obj)
    pairs = pick.order(list(obj.items()) if isinstance(obj, dict) else [tuple(p) for p in obj])
    body = b"".join(wide(k, pick) + wide(v, pick) for k, v in pairs)
    return _sized(pick, len(pairs), (0x80, 16), [(0xde, 2), (0xdf, 4)]) + body


def reference(frame: bytes, limits: Limits = DEFAULT_LIMITS) -> Experience | ProtocolError:
    try:
        return codec._decode_python(frame, limits)  # type: ignore[return-value]
    except ProtocolError as exc:
        return exc


def agrees(frame: bytes, limits: Limits = DEFAULT_LIMITS) -> Experience | None:
    """The native answer, checked against the reference: None, or the very message the reference decodes."""
    want = reference(frame, limits)
    try:
        got = codec._native_experience(frame, limits)
    except ProtocolError as exc:  # only the run's checks (dims, bounds) may raise, and then the reference agrees
        assert isinstance(want, ProtocolError) and want.reason == exc.reason
        assert exc.reason in ("dims_mismatch", "out_of_bounds")
        return None
    if got is not None:
        assert not isinstance(want, ProtocolError), f"native accepted what the reference rejects: {want}"
        assert_same(got, want)
    return got


@settings(max_examples=300, deadline=None)
@given(experiences(), st.data())
def test_any_encoding_of_a_valid_batch_decodes_natively(msg: Experience, data: st.DataObject) -> None:
    obj = msgpack.unpackb(encode(msg))
    frame = wide(obj, Choices(data.draw))
    assert msgpack.unpackb(frame) == obj  # the test's writer is itself right
    got = agrees(frame)
    assert (got is None) == (msg.h0 is not None)  # h0/c0 batches are left to the reference


@settings(max_examples=200, deadline=None)
@given(experiences(), st.data())
def test_bit_flips_and_cuts_never_make_the_native_path_disagree(msg: Experience, data: st.DataObject) -> None:
    frame = bytearray(wide(msgpack.unpackb(encode(msg)), Choices(data.draw)))
    for _ in range(data.draw(st.integers(0, 3))):
        i = data.draw(st.integers(0, len(frame) - 1))
        frame[i] ^= 1 << data.draw(st.integers(0, 7))
    cut = data.draw(st.integers(1, len(frame)))
    agrees(bytes(frame[:cut]) + data.draw(st.sampled_from([b"", b"\x00"])))


# Each takes the wire map and a draw, changes one thing, and returns what to write.
MUTATIONS: dict[str, Callable[[dict[str, Any], Draw], Any]] = {
    "drop_key": lambda o, d: {k: v for k, v in o.items() if k != d(st.sampled_from(sorted(o)))},
    "unknown_key": lambda o, d: {**o, d(st.sampled_from(["h0", "c0", "x", "obs_dim"])): 1},
    "repeat_key": lambda o, d: [Pair(p) for p in o.items()] + [Pair((k := d(st.sampled_from(sorted(o))), o[k]))],
    "repeat_key_other_value": lambda o, d: [Pair(p) for p in o.items()] + [Pair((d(st.sampled_from(sorted(o))), 7))],
    "retype_scalar": lambda o, d: {**o, d(st.sampled_from(["v", "seq", "episode", "t0", "version", "sender", "bot",
                                                          "kind", "prev_reward"])):
                                   d(st.sampled_from([-1, True, 1.0, "1", None, [1], b"\x01", 2**64 - 1, 0]))},
    "version": lambda o, d: {**o, "v": d(st.sampled_from([0, 2, 255]))},
    "kind": lambda o, d: {**o, "kind": d(st.sampled_from(["hello", "Experience", "", "experience\x00"]))},
    "bad_utf8": lambda o, d: {**o, d(st.sampled_from(["sender", "bot"])): RawStr(b"a\xff" + d(st.binary(max_size=3)))},
    "long_str": lambda o, d: {**o, d(st.sampled_from(["sender", "bot"])): "x" * d(st.sampled_from([0, 256, 257]))},
    "prev_reward": lambda o, d: {**o, "prev_reward": d(st.sampled_from([math.nan, math.inf, -math.inf, 1e300, 3,
                                                                         -2.5]))},
    "array_key": lambda o, d: _array_change(o, d, lambda a: {**a, d(st.sampled_from(["extra", "dtype"])): "f32"}),
    "array_drop": lambda o, d: _array_change(o, d, lambda a: {k: v for k, v in a.items()
                                                               if k != d(st.sampled_from(sorted(a)))}),
    "dtype": lambda o, d: _array_change(o, d, lambda a: {**a, "dtype": d(st.sampled_from(["f32", "bool", "f64", "u8",
                                                                                            "i32", "F32", 5]))}),
    "shape": lambda o, d: _array_change(o, d, lambda a: {**a, "shape": d(st.sampled_from(
        [[], [0], [a["shape"][0]], a["shape"] + [1], [s + 1 for s in a["shape"]], [float(s) for s in a["shape"]],
         [a["shape"][0] + 1] + a["shape"][1:], a["shape"][:1] + [s + 1 for s in a["shape"][1:]],
         [-1] * len(a["shape"]), [2**64 - 1] * len(a["shape"]), a["shape"][::-1]]))}),
    "data": lambda o, d: _array_change(o, d, lambda a: {**a, "data": d(st.sampled_from(
        [a["data"][:-1], a["data"] + b"\x00", RawStr(a["data"]), b""]))}),
    "flag_byte": lambda o, d: _flag_change(o, d),
    "non_finite": lambda o, d: _float_change(o, d),
}


def _array_change(obj: dict[str, Any], draw: Draw, change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    key = draw(st.sampled_from([k for k in sorted(obj) if isinstance(obj[k], dict)]))
    return {**obj, key: change(obj[key])}


def _flag_change(obj: dict[str, Any], draw: Draw) -> dict[str, Any]:
    key = draw(st.sampled_from(["terminated", "truncated"]))
    data = bytearray(obj[key]["data"])
    data[draw(st.integers(0, len(data) - 1))] = draw(st.sampled_from([0, 1, 2, 255]))
    return {**obj, key: {**obj[key], "data": bytes(data)}}


def _float_change(obj: dict[str, Any], draw: Draw) -> dict[str, Any]:
    key = draw(st.sampled_from([k for k in ("obs", "action", "reward", "next_obs", "prev_action") if k in obj]))
    data = np.frombuffer(obj[key]["data"], np.float32).copy()
    data[draw(st.integers(0, data.size - 1))] = draw(st.sampled_from([np.nan, np.inf, -np.inf, 3e38, -0.0, 1e-45]))
    return {**obj, key: {**obj[key], "data": data.tobytes()}}


@settings(max_examples=250, deadline=None)
@given(experiences(), st.sampled_from(sorted(MUTATIONS)), st.data())
def test_every_kind_of_damage_is_left_to_the_reference(msg: Experience, mutation: str, data: st.DataObject) -> None:
    obj = msgpack.unpackb(encode(msg))
    frame = wide(MUTATIONS[mutation](obj, data.draw), Choices(data.draw))
    agrees(frame)


@pytest.mark.parametrize("limits", [Limits(max_steps=2), Limits(max_dim=3), Limits(max_str=1),
                                    Limits(obs_dim=5), Limits(act_dim=1),
                                    Limits(act_low=(-0.5, -0.5), act_high=(0.5, 0.5)),
                                    Limits(act_low=(0.0, 1.5), act_high=(1.0, 2.0))])
def test_limits_bind_the_native_path_as_they_bind_the_reference(limits: Limits) -> None:
    n = 3
    msg = Experience("ab", 0, "b", 0, 0, 1, np.ones((n, 4), np.float32), np.ones((n, 2), np.float32),
                     np.ones(n, np.float32), np.ones((n, 4), np.float32), np.zeros(n, bool), np.zeros(n, bool))
    frame = encode(msg)
    assert agrees(frame, Limits(obs_dim=4, act_dim=2, act_low=(0.0, 0.0), act_high=(1.0, 1.0))) is not None
    assert agrees(frame, limits) is None
    assert isinstance(reference(frame, limits), ProtocolError)


def test_flags_are_shared_and_read_only() -> None:
    """Terminated and truncated come from a small cache of read-only arrays: nobody may write them."""
    n = 4
    msg = Experience("a", 0, "b", 0, 0, 1, np.ones((n, 2), np.float32), np.ones((n, 1), np.float32),
                     np.ones(n, np.float32), np.ones((n, 2), np.float32), np.zeros(n, bool), np.zeros(n, bool))
    msg.terminated[-1] = True
    got = agrees(encode(msg))
    assert got is not None and got.terminated.tolist() == [False, False, False, True]
    assert not got.truncated.any()
    with pytest.raises(ValueError):
        got.terminated[0] = True


def test_any_buffer_decodes_and_a_non_buffer_falls_back() -> None:
    msg = Experience("a", 0, "b", 0, 0, 1, np.ones((2, 2), np.float32), np.ones((2, 1), np.float32),
                     np.ones(2, np.float32), np.ones((2, 2), np.float32), np.zeros(2, bool), np.zeros(2, bool))
    frame = encode(msg)
    for form in (frame, bytearray(frame), memoryview(frame)):
        assert codec._native_experience(form, DEFAULT_LIMITS) is not None
    assert codec._native_experience(memoryview(frame * 2)[::2], DEFAULT_LIMITS) is None  # not contiguous


def _base_map() -> dict[str, Any]:
    n, d, k = 3, 2, 2
    msg = Experience("a", 5, "b", 1, 3, 2, np.ones((n, d), np.float32), np.ones((n, k), np.float32),
                     np.ones(n, np.float32), np.ones((n, d), np.float32), np.zeros(n, bool), np.zeros(n, bool),
                     prev_action=np.zeros(k, np.float32), prev_reward=0.5)
    return msgpack.unpackb(encode(msg))


DROP = object()


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], Any]:
    """A change to the wire map: `key` or `key.field`; a value of DROP deletes it."""
    def change(obj: dict[str, Any]) -> dict[str, Any]:
        key, _, field = path.partition(".")
        target = obj[key] if field else obj
        name = field or key
        if value is DROP:
            del target[name]
        else:
            target[name] = value(target[name]) if callable(value) else value
        return obj
    return change


NAN = np.array([1, np.nan], np.float32).tobytes()
REJECTED: dict[str, Callable[[dict[str, Any]], Any]] = {
    "terminated_early": _set("terminated.data", b"\x01\x00\x00"),
    "terminated_last_2": _set("terminated.data", b"\x00\x00\x02"),
    "truncated_last_255": _set("truncated.data", b"\x00\x00\xff"),
    "version": _set("v", 2),
    "version_bool": _set("v", True),
    "kind": _set("kind", "hello"),
    "empty_sender": _set("sender", ""),
    "long_bot": _set("bot", "x" * 257),
    "bad_utf8_sender": _set("sender", RawStr(b"\xc3\x28")),
    "negative_seq": _set("seq", -1),
    "float_t0": _set("t0", 3.0),
    "missing_truncated": _set("truncated", DROP),
    "missing_obs_shape": _set("obs.shape", DROP),
    "next_obs_steps": _set("next_obs.shape", [4, 2]),
    "next_obs_width": _set("next_obs.shape", [3, 3]),
    "action_width": _set("action.shape", [3, 3]),
    "reward_steps": _set("reward.shape", [4]),
    "terminated_steps": _set("terminated.shape", [2]),
    "float_dims": _set("obs.shape", [3.0, 2.0]),
    "obs_f64": _set("obs.dtype", "f64"),
    "terminated_as_f32": _set("terminated.dtype", "f32"),
    "data_as_str": _set("reward.data", lambda b: RawStr(b)),
    "short_data": _set("action.data", lambda b: b[:-4]),
    "obs_nan": _set("obs.data", lambda b: b[:-8] + NAN),
    "next_obs_inf": _set("next_obs.data", lambda b: b[:-4] + np.float32(np.inf).tobytes()),
    "reward_minus_inf": _set("reward.data", lambda b: b[:-4] + np.float32(-np.inf).tobytes()),
    "prev_action_nan": _set("prev_action.data", NAN),
    "prev_action_width": _set("prev_action.shape", [3]),
    "prev_action_bool": _set("prev_action.dtype", "bool"),
    "prev_reward_nan": _set("prev_reward", math.nan),
    "prev_reward_inf": _set("prev_reward", -math.inf),
    "prev_reward_str": _set("prev_reward", "0.5"),
    "repeated_key": lambda o: [Pair(p) for p in o.items() if p[0] != "prev_reward"] + [Pair(("seq", 5))],
    "array_key_twice": _set("obs", lambda a: [Pair(("dtype", "f32")), Pair(("shape", a["shape"])),
                                              Pair(("shape", a["shape"]))]),
}
LEFT_TO_PYTHON: dict[str, Callable[[dict[str, Any]], Any]] = {
    "unknown_key": _set("future", [1, 2]),
    "unknown_array_key": _set("obs.order", "C"),
    "h0_c0": lambda o: {**o, "h0": _base_map()["prev_action"], "c0": _base_map()["prev_action"]},
    "int_prev_reward": _set("prev_reward", 1),
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_invalid_frames_get_no_native_answer(name: str) -> None:
    frame = wide(REJECTED[name](_base_map()), Choices())
    assert isinstance(reference(frame), ProtocolError)
    assert codec._native_experience(frame, DEFAULT_LIMITS) is None


@pytest.mark.parametrize("trailer", [b"\x00", b"\xc0", b"\x81\xa1a\x01"])
def test_trailing_bytes_get_no_native_answer(trailer: bytes) -> None:
    frame = wide(_base_map(), Choices()) + trailer
    assert isinstance(reference(frame), ProtocolError)
    assert codec._native_experience(frame, DEFAULT_LIMITS) is None


@pytest.mark.parametrize("name", sorted(LEFT_TO_PYTHON))
def test_valid_but_unusual_frames_are_left_to_python(name: str) -> None:
    """The native path declines these (rare, and cheaper to leave than to mirror); Python decodes them."""
    frame = wide(LEFT_TO_PYTHON[name](_base_map()), Choices())
    assert not isinstance(reference(frame), ProtocolError)
    assert codec._native_experience(frame, DEFAULT_LIMITS) is None


def test_the_base_frame_decodes_natively() -> None:
    """So that the two tables above test the damage, not a frame the native path never took."""
    assert agrees(wide(_base_map(), Choices())) is not None
