"""Codec: every kind round-trips, every invalid class is rejected with its reason."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import (
    DEFAULT_LIMITS,
    REASONS,
    Bye,
    EpisodeEnd,
    EpisodeStart,
    Experience,
    Heartbeat,
    Hello,
    Limits,
    Progress,
    ProtocolError,
    Weights,
    decode,
    encode,
)
from protocol.arrays import pack_array
from protocol.messages import PROTOCOL_VERSION

ids = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FFF), min_size=1, max_size=40)
uints = st.integers(0, 2**64 - 1)
small = st.integers(0, 2**31)
finite = st.floats(-1e6, 1e6, allow_nan=False, width=32)


def f32(rows: int, cols: int | None = None) -> st.SearchStrategy[np.ndarray]:
    shape = (rows,) if cols is None else (rows, cols)
    return st.lists(finite, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))).map(
        lambda xs: np.array(xs, np.float32).reshape(shape))


@st.composite
def experiences(draw: st.DrawFn) -> Experience:
    n, d, a = draw(st.integers(1, 8)), draw(st.integers(1, 6)), draw(st.integers(1, 3))
    done = draw(st.sampled_from(["none", "terminated", "truncated"]))
    term, trunc = np.zeros(n, bool), np.zeros(n, bool)
    if done == "terminated":
        term[-1] = True
    elif done == "truncated":
        trunc[-1] = True
    state = draw(st.booleans())
    return Experience(
        draw(ids), draw(uints), draw(ids), draw(small), draw(small), draw(small),
        draw(f32(n, d)), draw(f32(n, a)), draw(f32(n)), draw(f32(n, d)), term, trunc,
        prev_action=draw(f32(a)) if state else None, prev_reward=draw(finite.map(float)) if state else None,
        h0=hc[0] if (hc := draw(st.one_of(st.none(), st.tuples(f32(4), f32(4))))) else None,
        c0=hc[1] if hc else None,
    )


@st.composite
def hellos(draw: st.DrawFn) -> Hello:
    d, a = draw(st.integers(1, 6)), draw(st.integers(1, 3))
    low = draw(f32(a))
    return Hello(draw(ids), draw(uints), draw(ids), d, a, np.full(d, -np.inf, np.float32), draw(f32(d)),
                 low, low + 1.0, draw(st.text(max_size=20)), draw(st.booleans()))


others = st.one_of(
    st.builds(EpisodeStart, ids, uints, ids, small, st.one_of(st.text(max_size=30), st.just(""))),
    st.builds(EpisodeEnd, ids, uints, ids, small, finite.map(float), small, st.booleans()),
    st.builds(Heartbeat, ids, uints, small, small, uints, uints),
    st.builds(Bye, ids, uints, uints, uints),
    st.builds(Weights, ids, uints, small, st.text(max_size=16), st.just({"hidden": 4, "fc": 8, "prev_action": True}),
              f32(5), small),
    st.builds(Progress, ids, uints, uints, uints, st.floats(0.125, 1e6, width=32).map(float), small, small,
              st.integers(0, 2**53 - 1)),
)


def assert_same(a: object, b: object) -> None:
    assert type(a) is type(b)
    for name in a.__slots__:  # type: ignore[attr-defined]
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), name
        else:
            assert x == y, name


@settings(max_examples=150, deadline=None)
@given(st.one_of(experiences(), hellos(), others))
def test_every_kind_round_trips(msg: object) -> None:
    assert_same(decode(encode(msg)), msg)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_raise_only_protocol_error(frame: bytes) -> None:
    with pytest.raises(ProtocolError) as info:
        decode(frame)
    assert info.value.reason in REASONS


@settings(max_examples=300, deadline=None)
@given(experiences(), st.data())
def test_mutated_valid_frames_raise_only_protocol_error(msg: Experience, data: st.DataObject) -> None:
    """Bit flips and cuts of valid frames: decoded or rejected, never another exception."""
    frame = bytearray(encode(msg))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(frame) - 1))
        frame[i] ^= 1 << data.draw(st.integers(0, 7))
    cut = data.draw(st.integers(1, len(frame)))
    try:
        decode(bytes(frame[:cut]))
    except ProtocolError as exc:
        assert exc.reason in REASONS


@settings(max_examples=200, deadline=None)
@given(experiences(), st.sampled_from(["obs", "action", "reward", "next_obs", "terminated"]), st.data())
def test_step_array_changes_are_rejected_with_their_reason(msg: Experience, field: str, data: st.DataObject) -> None:
    """Any shape or dtype change to one step array is rejected, and named (the native path leaves it to Python)."""
    obj = msgpack.unpackb(encode(msg))
    arr = obj[field]
    change = data.draw(st.sampled_from(["shape", "float_shape", "dtype", "data"]))
    if change == "shape":
        arr["shape"] = [s + data.draw(st.integers(1, 3)) for s in arr["shape"]]
    elif change == "float_shape":  # equal in value, not in type
        arr["shape"] = [float(s) for s in arr["shape"]]
    elif change == "dtype":
        arr["dtype"] = data.draw(st.sampled_from(["f64", "i32", "u8", "bool", "f32"] if field != "terminated" else ["f32", "u8"]))
    else:
        arr["data"] = arr["data"][:-1]
    frame = msgpack.packb(obj, use_bin_type=True)
    if change == "dtype" and arr["dtype"] == ("bool" if field == "terminated" else "f32"):
        decode(frame)
        return
    with pytest.raises(ProtocolError) as info:
        decode(frame)
    assert info.value.reason == ("bad_dtype" if change == "dtype" else "bad_shape")


def _base() -> Experience:
    n = 3
    return Experience("a", 0, "b", 0, 0, 1, np.zeros((n, 4), np.float32), np.zeros((n, 2), np.float32),
                      np.zeros(n, np.float32), np.zeros((n, 4), np.float32), np.zeros(n, bool), np.zeros(n, bool))


def frame_of(msg: object = None, drop: tuple[str, ...] = (), **fields: object) -> bytes:
    """A valid frame of `msg` (default: a 3-step experience) with `fields` replaced and `drop` removed."""
    obj = msgpack.unpackb(encode(msg if msg is not None else _base()))  # type: ignore[arg-type]
    obj.update(fields)
    for key in drop:
        del obj[key]
    return msgpack.packb(obj, use_bin_type=True)


def arr(values: object, dtype: str = "f32", shape: list[int] | None = None) -> dict:
    """An array map; with `shape`, one that disagrees with its own bytes."""
    out = pack_array(np.asarray(values, {"f32": np.float32, "f64": np.float64, "bool": np.bool_}[dtype]))
    return out if shape is None else {**out, "shape": shape}


ONE = np.ones(1, np.float32)
BOUNDED = Limits(obs_dim=4, act_dim=2, act_low=(-1.0, -1.0), act_high=(1.0, 1.0))


def _repeat_key(frame: bytes, key: str, value: str) -> bytes:
    """`frame` (a fixmap of under 15 entries) with `key` sent a second time, holding `value`."""
    extra = msgpack.packb(key) + msgpack.packb(value)
    return bytes([frame[0] + 1]) + frame[1:] + extra
# reason -> cases; each frame is valid in every way but the one its reason names.
FAULTS: dict[str, dict[str, object]] = {
    "undecodable": {"truncated": lambda: frame_of()[:-1], "trailing byte": lambda: frame_of() + b"\xc0",
                    "not a map": lambda: msgpack.packb([1, 2]),
                    "repeated key": lambda: _repeat_key(frame_of(), "bot", "c"),
                    "bin key": lambda: frame_of(**{"x": 1}).replace(b"\xa1x", b"\xc4\x01x"),
                    "int key": lambda: frame_of(**{"x": 1}).replace(b"\xa1x", b"\x07"),
                    "ext in an unknown key": lambda: frame_of(future=msgpack.ExtType(5, b"x")),
                    "timestamp in a list": lambda: frame_of(future=[1, msgpack.Timestamp(1, 0)]),
                    "ext as a value": lambda: frame_of(episode=msgpack.ExtType(1, b"x"))},
    "unknown_kind": {"kind": lambda: frame_of(kind="experiences")},
    "bad_version": {"v": lambda: frame_of(v=PROTOCOL_VERSION + 1)},
    "missing_field": {"v": lambda: frame_of(drop=("v",)), "bot": lambda: frame_of(drop=("bot",)),
                      "reward": lambda: frame_of(drop=("reward",))},
    "bad_type": {"episode as text": lambda: frame_of(episode="0"), "obs as a list": lambda: frame_of(obs=[0.0] * 12),
                 "eval as 1": lambda: frame_of(EpisodeEnd("a", 0, "b", 0, 1.0, 5), eval=1)},
    "bad_dtype": {"obs in f64": lambda: frame_of(obs=arr(np.zeros((3, 4)), "f64")),
                  "not on the list": lambda: frame_of(reward={"dtype": "f16", "shape": [3], "data": b"\0" * 6})},
    "bad_shape": {"bytes against shape": lambda: frame_of(reward=arr(np.zeros(3), shape=[4])),
                  "steps differ": lambda: frame_of(reward=arr(np.zeros(4))),
                  "obs widths differ": lambda: frame_of(next_obs=arr(np.zeros((3, 5))))},
    "non_finite": {"reward nan": lambda: frame_of(reward=arr([0.0, np.nan, 0.0])),
                   "prev_reward inf": lambda: frame_of(prev_reward=float("inf"))},
    "too_large": {"bot name": lambda: frame_of(bot="b" * 257), "steps": lambda: (frame_of(), Limits(max_steps=2)),
                  "frame": lambda: (frame_of(), Limits(max_message_bytes=len(frame_of()) - 1))},
    "dims_mismatch": {"obs_dim": lambda: (frame_of(), Limits(obs_dim=5, act_dim=2)),
                      "act_dim": lambda: (frame_of(), Limits(obs_dim=4, act_dim=1))},
    "bad_value": {"seq negative": lambda: frame_of(seq=-1), "empty bot": lambda: frame_of(bot=""),
                  "done mid-batch": lambda: frame_of(terminated=arr([True, False, False], "bool")),
                  "bool byte 2": lambda: frame_of(truncated={"dtype": "bool", "shape": [3], "data": b"\0\0\2"}),
                  "inverted bounds": lambda: frame_of(Hello("a", 0, "b", 1, 1, -ONE, ONE, ONE, -ONE)),
                  "utd 0": lambda: frame_of(Progress("l", 1, 0, 0, 1.0, 0, 0, 0), utd=0.0)},
    "out_of_bounds": {"action": lambda: (frame_of(action=arr(np.full((3, 2), 1.01))), BOUNDED),
                      "prev_action": lambda: (frame_of(prev_action=arr([0.0, -1.01])), BOUNDED)},
}
CASES = [(reason, name) for reason, cases in FAULTS.items() for name in cases]
FAULTS["dims_mismatch"]["h0 width"] = lambda: (frame_of(h0=arr(np.zeros(3)), c0=arr(np.zeros(3))), Limits(state_dim=4))
FAULTS["bad_shape"]["h0 without c0"] = lambda: frame_of(h0=arr(np.zeros(4)))
FAULTS["bad_shape"]["negative shape entry"] = lambda: frame_of(reward={"dtype": "f32", "shape": [-3], "data": b""})
FAULTS["bad_shape"]["empty batch"] = lambda: frame_of(
    obs=arr(np.zeros((0, 4))), next_obs=arr(np.zeros((0, 4))), action=arr(np.zeros((0, 2))), reward=arr(np.zeros(0)),
    terminated=arr(np.zeros(0), "bool"), truncated=arr(np.zeros(0), "bool"))
FAULTS["too_large"]["obs_dim 65537"] = lambda: frame_of(Hello("a", 0, "b", 1, 1, -ONE, ONE, -ONE, ONE), obs_dim=65537)
CASES = [(reason, name) for reason, cases in FAULTS.items() for name in cases]


def test_every_reason_has_its_faults_and_the_base_frames_are_valid() -> None:
    assert set(FAULTS) == set(REASONS)
    for msg in (None, EpisodeEnd("a", 0, "b", 0, 1.0, 5), Hello("a", 0, "b", 1, 1, -ONE, ONE, -ONE, ONE)):
        decode(frame_of(msg), Limits(obs_dim=4, act_dim=2) if msg is None else DEFAULT_LIMITS)


@pytest.mark.parametrize(("reason", "case"), CASES, ids=[f"{r}-{c}" for r, c in CASES])
def test_each_fault_is_rejected_with_its_own_reason(reason: str, case: str) -> None:
    made = FAULTS[reason][case]()  # type: ignore[operator]
    frame, limits = made if isinstance(made, tuple) else (made, DEFAULT_LIMITS)
    with pytest.raises(ProtocolError) as info:
        decode(frame, limits)
    assert info.value.reason == reason, info.value


def test_dims_mismatch_against_configured_dims() -> None:
    frame = encode(_base())
    decode(frame, Limits(obs_dim=4, act_dim=2))
    with pytest.raises(ProtocolError, match="dims_mismatch"):
        decode(frame, Limits(obs_dim=35, act_dim=2))
    with pytest.raises(ProtocolError, match="dims_mismatch"):
        decode(frame, Limits(obs_dim=4, act_dim=4))


def test_size_limits() -> None:
    frame = encode(_base())
    with pytest.raises(ProtocolError, match="too_large"):
        decode(frame, Limits(max_message_bytes=len(frame) - 1))
    with pytest.raises(ProtocolError, match="too_large"):
        decode(frame, Limits(max_steps=2))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("field", ["obs", "action", "reward", "next_obs"])
def test_non_finite_in_any_float_field(field: str, bad: float) -> None:
    msg = _base()
    arr = getattr(msg, field).copy()
    arr.flat[-1] = bad
    setattr(msg, field, arr)
    with pytest.raises(ProtocolError, match="non_finite"):
        decode(encode(msg))


def test_huge_finite_values_are_accepted() -> None:
    """The one-dot finiteness check must not mistake large numbers for infinities."""
    msg = _base()
    msg.obs = np.full((3, 4), 3e38, np.float32)
    assert decode(encode(msg)).obs[0, 0] == np.float32(3e38)


def test_hello_rejects_inverted_action_bounds() -> None:
    one = np.ones(1, np.float32)
    with pytest.raises(ProtocolError, match="bad_value"):
        decode(encode(Hello("a", 0, "b", 1, 1, -one, one, one, -one)))


def test_opponent_numeric_id_becomes_its_text() -> None:
    obj = msgpack.unpackb(encode(EpisodeStart("a", 0, "b", 0, "x")))
    obj["opponent"] = 42
    assert decode(msgpack.packb(obj)).opponent == "42"  # type: ignore[union-attr]


def test_unknown_keys_are_ignored() -> None:
    obj = msgpack.unpackb(encode(Bye("a", 3, 10, 1)))
    obj["future_field"] = [1, 2]
    assert decode(msgpack.packb(obj)) == Bye("a", 3, 10, 1)


@settings(max_examples=200, deadline=None)
@given(experiences(), st.integers(0, 2**64 - 1), st.text(min_size=1, max_size=300), st.booleans())
def test_fast_encode_writes_the_bytes_msgpack_would(msg: Experience, big: int, name: str, prev: bool) -> None:
    """The experience encoder's fast path must equal msgpack of the schema map exactly."""
    msg.seq, msg.bot = big, name
    if prev:
        msg.prev_action, msg.prev_reward = np.zeros(msg.action.shape[1], np.float32), -0.25
    want = {"v": PROTOCOL_VERSION, "kind": "experience", "sender": msg.sender, "seq": msg.seq, "bot": msg.bot,
            "episode": msg.episode, "t0": msg.t0, "version": msg.version}
    for key in ("obs", "action", "reward", "next_obs", "terminated", "truncated", "prev_action", "prev_reward", "h0", "c0"):
        value = getattr(msg, key)
        if value is not None:
            want[key] = pack_array(value) if isinstance(value, np.ndarray) else value
    assert encode(msg) == msgpack.packb(want, use_bin_type=True)


def test_a_non_contiguous_array_travels_as_its_values() -> None:
    obs = np.arange(24, dtype=np.float32).reshape(3, 8)[:, ::2]  # a strided view, as a bot may well send
    msg = _base()
    msg.obs = msg.next_obs = obs
    assert np.array_equal(decode(encode(msg)).obs, obs)


def test_an_action_on_a_bound_or_within_the_tolerance_is_accepted() -> None:
    """Float rounding may put an action a hair past a bound (SPEC.md: 1e-4 of the range); that is no fault."""
    edge = 1.0 + 0.5e-4 * 2.0
    decode(frame_of(action=arr(np.full((3, 2), edge)), prev_action=arr([-edge, 1.0])), BOUNDED)
    decode(frame_of(action=arr(np.full((3, 2), 1.01))), Limits(obs_dim=4, act_dim=2))  # no bounds set: no check


def test_an_int_where_a_float_belongs_is_accepted() -> None:
    assert decode(frame_of(prev_reward=2)).prev_reward == 2.0  # type: ignore[union-attr]
    assert decode(frame_of(EpisodeEnd("a", 0, "b", 0, 1.0, 5), **{"return": -3})).ret == -3.0  # type: ignore[union-attr]
    with pytest.raises(ProtocolError, match="bad_type"):
        decode(frame_of(episode=1.0))  # but never a float where an int belongs


@pytest.mark.parametrize("dims", [(2, 1, 4, 4), (3, 2, 16, 8), (7, 300, 32, 5)])
def test_the_weights_frame_bound_is_the_frame_at_its_widest(dims: tuple[int, int, int, int]) -> None:
    """protocol.arch.weights_frame_bytes, what keeps a learner's weights frames within the 64 MiB a bot must
    accept: at least the real frame with every integer at its widest, and at most 8 bytes more."""
    from protocol.arch import Arch, params_count, weights_frame_bytes

    obs_dim, act_dim, hidden, fc = dims
    arch = Arch(obs_dim, act_dim, hidden, fc, act_low=(-2.5,) * act_dim, act_high=(0.125,) * act_dim)
    wide = 2**53 - 1
    params = np.ones(params_count(arch), np.float32)
    frame = encode(Weights("learner", wide, wide, "0" * 16, arch.to_wire(), params, wide, wide))
    assert len(frame) <= weights_frame_bytes(arch) <= len(frame) + 8
