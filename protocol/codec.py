"""Encode messages to one msgpack frame, and decode frames with full validation.

`decode` is the trust boundary: everything that reaches the learner from the
network passes through it, so it never raises anything but ProtocolError,
never allocates more than the frame's own size, and never runs code (no
pickle, no msgpack ext hooks).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import msgpack
import numpy as np

from protocol.arrays import pack_array, require_finite, unpack_array
from protocol.errors import ProtocolError
from protocol.messages import KINDS, PROTOCOL_VERSION, Experience, Hello, Message

try:
    from protocol import _fastwire
except ImportError:  # built where a C compiler was available (setup.py); pure Python otherwise
    _fastwire = None  # type: ignore[assignment]

NATIVE_DECODER = _fastwire is not None
"""Whether experience frames decode natively (faster than the schema path: docs/performance.md, "The native
decoder"); the learner warns when not."""

MAX_U64 = 2**64 - 1
_F32 = np.dtype("<f4")
_BOOL = np.dtype(np.bool_)


@dataclass(frozen=True)
class Limits:
    """What a receiver accepts. Dims of None accept any; the learner sets them from its config."""

    max_message_bytes: int = 64 * 1024 * 1024
    """Largest frame; also set as ZMQ_MAXMSGSIZE on receiving sockets."""
    max_steps: int = 4096
    """Most steps in one experience batch."""
    max_dim: int = 65536
    """Largest observation, action or recurrent-state width."""
    max_str: int = 256
    """Longest string field (ids, names, versions)."""
    obs_dim: int | None = None
    act_dim: int | None = None
    state_dim: int | None = None
    """H: the width h0 and c0 must have (the learner's `hidden`)."""
    act_low: tuple[float, ...] | None = None
    act_high: tuple[float, ...] | None = None
    """The run's action bounds: actions beyond them by more than ACTION_TOLERANCE are out_of_bounds."""
    weights_fit: Callable[[int, int], bool] | None = None
    """While the run's D and A are not known (a learner that takes them from the first hello): whether a network
    of a hello's D and A keeps its weights frame within MAX_WEIGHTS_BYTES; a hello whose would not is too_large."""

    @cached_property
    def action_range(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The accepted action interval, bounds widened by the tolerance; worked out once, not per batch."""
        if self.act_low is None or self.act_high is None:
            return None
        low, high = np.asarray(self.act_low, np.float32), np.asarray(self.act_high, np.float32)
        slack = (high - low) * np.float32(ACTION_TOLERANCE)
        return low - slack, high + slack


ACTION_TOLERANCE = 1e-4
"""How far (as a share of act_high - act_low) an action may pass a bound: float rounding, not a bug (SPEC.md)."""
MAX_SAFE_INT = 2**53 - 1
"""The largest integer a JavaScript number holds exactly; every integer the learner sends stays within it."""

DEFAULT_LIMITS = Limits()

_Check = Callable[[str, Any, Limits], Any]


def _uint(name: str, value: Any, limits: Limits) -> int:
    if type(value) is not int:
        raise ProtocolError("bad_type", f"{name}: expected an integer")
    if not 0 <= value <= MAX_U64:
        raise ProtocolError("bad_value", f"{name}: {value} is outside 0..2^64-1")
    return value


def _int(name: str, value: Any, limits: Limits) -> int:
    if type(value) is not int:
        raise ProtocolError("bad_type", f"{name}: expected an integer")
    return value


def _dim(name: str, value: Any, limits: Limits) -> int:
    value = _uint(name, value, limits)
    if not 1 <= value <= limits.max_dim:
        raise ProtocolError("bad_value" if value < 1 else "too_large", f"{name}: {value} outside 1..{limits.max_dim}")
    return value


def _float(name: str, value: Any, limits: Limits) -> float:
    if type(value) not in (float, int):
        raise ProtocolError("bad_type", f"{name}: expected a number")
    if not math.isfinite(value):
        raise ProtocolError("non_finite", f"{name}: {value}")
    return float(value)


def _positive(name: str, value: Any, limits: Limits) -> float:
    value = _float(name, value, limits)
    if value <= 0:
        raise ProtocolError("bad_value", f"{name}: {value} is not above 0")
    return value


def _nonnegative(name: str, value: Any, limits: Limits) -> float:
    value = _float(name, value, limits)
    if value < 0:
        raise ProtocolError("bad_value", f"{name}: {value} is below 0")
    return value


def _str(name: str, value: Any, limits: Limits) -> str:
    if type(value) is not str:
        raise ProtocolError("bad_type", f"{name}: expected a string")
    if len(value) > limits.max_str:
        raise ProtocolError("too_large", f"{name}: longer than {limits.max_str}")
    return value


def _id(name: str, value: Any, limits: Limits) -> str:
    value = _str(name, value, limits)
    if not value:
        raise ProtocolError("bad_value", f"{name}: empty")
    return value


def _bool(name: str, value: Any, limits: Limits) -> bool:
    if type(value) is not bool:
        raise ProtocolError("bad_type", f"{name}: expected a boolean")
    return value


def _opponent(name: str, value: Any, limits: Limits) -> str:
    """A name, or a numeric id when the name is not known yet (the seed's rule)."""
    if type(value) is int:
        return str(value)
    return _str(name, value, limits)


MAX_ARCH_ENTRIES = 64
MAX_COUNTS_ENTRIES = 100_000


def _arch(name: str, value: Any, limits: Limits) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProtocolError("bad_type", f"{name}: expected a map")
    if len(value) > MAX_ARCH_ENTRIES:  # a count over its limit is too_large, as a string's length or a batch's steps
        raise ProtocolError("too_large", f"{name}: {len(value)} entries, at most {MAX_ARCH_ENTRIES}")
    for key, item in value.items():
        if type(key) is not str or not isinstance(item, (int, float, str, bool, list)):
            raise ProtocolError("bad_type", f"{name}.{key}: expected plain values")
    return value


def _counts(name: str, value: Any, limits: Limits) -> dict[str, int]:
    if not isinstance(value, dict):
        raise ProtocolError("bad_type", f"{name}: expected a map")
    if len(value) > MAX_COUNTS_ENTRIES:
        raise ProtocolError("too_large", f"{name}: {len(value)} entries, at most {MAX_COUNTS_ENTRIES}")
    return {_str(name, k, limits): _uint(name, v, limits) for k, v in value.items()}


def _array(dtype: str, *shape: str, finite: bool = False) -> _Check:
    """A wire array of `dtype` whose dims (named for the docs) are checked per message.

    Arrays marked finite are checked together after the whole map is read
    (see `require_finite`); the check is tagged on the function.
    """
    dims = (None,) * len(shape)

    def check(name: str, value: Any, limits: Limits) -> np.ndarray:
        return unpack_array(name, value, dtype, dims, limits.max_message_bytes)

    check.finite = finite  # type: ignore[attr-defined]
    return check


_OBS = _array("f32", "n", "obs", finite=True)
_ACT = _array("f32", "n", "act", finite=True)
_VEC_OBS = _array("f32", "obs")
_VEC_ACT = _array("f32", "act", finite=True)

# kind -> [(wire key, attribute, check, required)]; order is the encode order.
_SCHEMA: dict[str, list[tuple[str, str, _Check, bool]]] = {
    "hello": [
        ("bot", "bot", _id, True), ("obs_dim", "obs_dim", _dim, True), ("act_dim", "act_dim", _dim, True),
        ("obs_low", "obs_low", _VEC_OBS, True), ("obs_high", "obs_high", _VEC_OBS, True),
        ("act_low", "act_low", _VEC_ACT, True), ("act_high", "act_high", _VEC_ACT, True),
        ("software", "software", _str, False), ("eval", "eval", _bool, False),
    ],
    "experience": [
        ("bot", "bot", _id, True), ("episode", "episode", _uint, True), ("t0", "t0", _uint, True),
        ("version", "version", _uint, True),
        ("obs", "obs", _OBS, True), ("action", "action", _ACT, True),
        ("reward", "reward", _array("f32", "n", finite=True), True), ("next_obs", "next_obs", _OBS, True),
        ("terminated", "terminated", _array("bool", "n"), True), ("truncated", "truncated", _array("bool", "n"), True),
        ("prev_action", "prev_action", _VEC_ACT, False), ("prev_reward", "prev_reward", _float, False),
        ("h0", "h0", _array("f32", "any", finite=True), False), ("c0", "c0", _array("f32", "any", finite=True), False),
        ("target", "target", _array("f32", "n", "act"), False),
    ],
    "episode_start": [("bot", "bot", _id, True), ("episode", "episode", _uint, True), ("opponent", "opponent", _opponent, False)],
    "episode_end": [
        ("bot", "bot", _id, True), ("episode", "episode", _uint, True), ("return", "ret", _float, True),
        ("length", "length", _uint, True), ("eval", "eval", _bool, False),
    ],
    "heartbeat": [
        ("round", "round", _uint, True), ("episodes", "episodes", _uint, True),
        ("sent", "sent", _uint, True), ("dropped", "dropped", _uint, True), ("held_s", "held_s", _nonnegative, False),
        ("labels_late", "labels_late", _uint, False),
    ],
    "bye": [("sent", "sent", _uint, True), ("dropped", "dropped", _uint, True),
            ("labels_late", "labels_late", _uint, False)],
    "weights": [
        ("version", "version", _uint, True), ("rev", "rev", _str, True), ("arch", "arch", _arch, True),
        ("params", "params", _array("f32", "p", finite=True), True), ("grad_steps", "grad_steps", _uint, False),
        ("state_every", "state_every", _uint, False),
    ],
    "progress": [
        ("received", "received", _uint, True), ("grad_steps", "grad_steps", _uint, True), ("utd", "utd", _positive, True),
        ("learning_starts", "learning_starts", _uint, True), ("version", "version", _uint, True),
        ("session", "session", _uint, True), ("per_sender", "per_sender", _counts, False),
        ("settled", "settled", _counts, False),
    ],
}


def encode(msg: Message) -> bytes:
    """One msgpack frame for `msg`; arrays as raw little-endian bytes."""
    if type(msg) is Experience and msg.h0 is None and msg.target is None:
        fast = _encode_experience(msg)
        if fast is not None:
            return fast
    out: dict[str, Any] = {"v": PROTOCOL_VERSION, "kind": msg.kind, "sender": msg.sender, "seq": msg.seq}
    for key, attr, _check, _required in _SCHEMA[msg.kind]:
        value = getattr(msg, attr)
        if value is None:
            continue
        out[key] = pack_array(value) if isinstance(value, np.ndarray) else value
    return _packer().pack(out)


_local = threading.local()


def _packer() -> msgpack.Packer:
    """One Packer per thread: building one per frame costs a microsecond, and a Packer is not thread-safe."""
    try:
        return _local.packer
    except AttributeError:
        _local.packer = msgpack.Packer(use_bin_type=True)
        return _local.packer


def _encode_experience(msg: Experience) -> bytes | None:
    """The hot path of `encode`: the same bytes as the schema loop with fewer checks, since
    `tobytes` makes any layout C-ordered. None for a dtype that needs converting: the schema loop."""
    o, a, r, no, te, tr = msg.obs, msg.action, msg.reward, msg.next_obs, msg.terminated, msg.truncated
    if not (o.dtype is a.dtype is r.dtype is no.dtype is _F32 and te.dtype is tr.dtype is _BOOL):
        return None  # (ranks are not checked: like the schema loop, encode packs what it is given)
    out = {"v": PROTOCOL_VERSION, "kind": "experience", "sender": msg.sender, "seq": msg.seq, "bot": msg.bot,
           "episode": msg.episode, "t0": msg.t0, "version": msg.version,
           "obs": {"dtype": "f32", "shape": o.shape, "data": o.tobytes()},  # msgpack packs tuples as arrays
           "action": {"dtype": "f32", "shape": a.shape, "data": a.tobytes()},
           "reward": {"dtype": "f32", "shape": r.shape, "data": r.tobytes()},
           "next_obs": {"dtype": "f32", "shape": no.shape, "data": no.tobytes()},
           "terminated": {"dtype": "bool", "shape": te.shape, "data": te.tobytes()},
           "truncated": {"dtype": "bool", "shape": tr.shape, "data": tr.tobytes()}}
    if msg.prev_action is not None:
        out["prev_action"] = pack_array(msg.prev_action)
    if msg.prev_reward is not None:
        out["prev_reward"] = msg.prev_reward
    return _packer().pack(out)


def decode(frame: bytes | memoryview, limits: Limits = DEFAULT_LIMITS) -> Message:
    """Validate and decode one frame; raises ProtocolError and nothing else."""
    if len(frame) > limits.max_message_bytes:
        raise ProtocolError("too_large", f"frame of {len(frame)} bytes over {limits.max_message_bytes}")
    if _fastwire is not None:
        native = _native_experience(frame, limits)
        if native is not None:
            return native
    return _decode_python(frame, limits)


def _decode_python(frame: bytes | memoryview, limits: Limits) -> Message:
    """The reference decoder: msgpack, then every field through the schema. It decides every
    frame the native path does not accept, and names the fault of every invalid one."""
    try:
        obj = msgpack.unpackb(frame, raw=False, strict_map_key=True, use_list=True, timestamp=0,
                              object_pairs_hook=_map, list_hook=_list, ext_hook=_ext)
    except _Undecodable as exc:
        raise ProtocolError("undecodable", str(exc)) from None
    except Exception as exc:  # msgpack raises several unrelated types for bad input
        raise ProtocolError("undecodable", type(exc).__name__) from None
    if type(obj) is not dict:
        raise ProtocolError("undecodable", "top level is not a map")
    try:
        return _from_map(obj, limits)
    except ProtocolError:
        raise
    except Exception as exc:  # a validator bug must still not crash the learner
        raise ProtocolError("bad_value", f"{type(exc).__name__}: {exc}") from None


class _Undecodable(Exception):
    """Raised inside msgpack's hooks: valid msgpack this protocol does not speak (SPEC.md, Encoding)."""


def _map(pairs: list[tuple[Any, Any]]) -> dict[str, Any]:
    """Every map: str keys only, each once, and no extension value (msgpack would keep the last duplicate)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Undecodable("a map repeats a key")
    for key, value in pairs:
        if type(key) is not str:
            raise _Undecodable(f"a map key of type {type(key).__name__}")
        if type(value) is msgpack.Timestamp:
            raise _Undecodable("an extension type (timestamp)")
    return out


def _list(items: list[Any]) -> list[Any]:
    for item in items:
        if type(item) is msgpack.Timestamp:
            raise _Undecodable("an extension type (timestamp)")
    return items


def _ext(code: int, data: bytes) -> Any:
    raise _Undecodable(f"an extension type ({code})")


def _from_map(obj: dict[str, Any], limits: Limits) -> Message:
    kind, values = _header(obj, limits)
    finite: list[bytes] = []
    for key, attr, check, required in _SCHEMA[kind]:
        if key in obj:
            values[attr] = check(key, obj[key], limits)
            if getattr(check, "finite", False):
                finite.append(obj[key]["data"])
        elif required:
            raise ProtocolError("missing_field", f"{kind}.{key}")
    if finite:
        require_finite(kind, finite)
    msg = KINDS[kind](**values)
    if kind == "experience":
        _check_experience(msg, limits)
    elif kind == "hello":
        _check_hello(msg, limits)
    return msg


def _header(obj: dict[str, Any], limits: Limits) -> tuple[str, dict[str, Any]]:
    """Version, kind, sender and seq: checked before anything kind-specific."""
    if "v" not in obj:
        raise ProtocolError("missing_field", "v")
    if obj["v"] != PROTOCOL_VERSION or type(obj["v"]) is not int:
        raise ProtocolError("bad_version", f"version {obj['v']!r}, this side speaks {PROTOCOL_VERSION}")
    if "kind" not in obj:
        raise ProtocolError("missing_field", "kind")
    kind = obj["kind"]
    if type(kind) is not str or kind not in _SCHEMA:
        raise ProtocolError("unknown_kind", repr(kind)[:64])
    values: dict[str, Any] = {}
    check: _Check
    for key, check in (("sender", _id), ("seq", _uint)):
        if key not in obj:
            raise ProtocolError("missing_field", key)
        values[key] = check(key, obj[key], limits)
    return kind, values


def _native_experience(frame: bytes | memoryview, limits: Limits) -> Experience | None:
    """The hot path: a valid experience frame read straight from its bytes, or None.

    `_fastwire.experience` checks what the schema path checks, on the msgpack
    bytes themselves, and returns None (never raises) for anything it does not
    accept, valid or not; `_decode_python` then decides and names the fault.
    Tests compare the two on fuzzed frames in many encodings.
    """
    try:
        fields = _fastwire.experience(frame, PROTOCOL_VERSION, limits.max_steps, limits.max_dim, limits.max_str)
    except (TypeError, BufferError):  # not a contiguous buffer: the Python paths cope or say why
        return None
    if fields is None:
        return None
    sender, seq, bot, episode, t0, version, n, d, k, floats, terminated, truncated, prev_action, prev_reward = fields
    flat = np.frombuffer(floats, _F32)
    nobs = n * d
    both = flat[:2 * nobs].reshape(2, n, d)
    msg = Experience(sender, seq, bot, episode, t0, version, both[0], flat[2 * nobs:2 * nobs + n * k].reshape(n, k),
                     flat[2 * nobs + n * k:], both[1], _flags(n, terminated), _flags(n, truncated),
                     prev_action=None if prev_action is None else np.frombuffer(prev_action, _F32),
                     prev_reward=prev_reward)
    _check_run(msg, limits)
    return msg


_FLAGS: dict[tuple[int, bool], np.ndarray] = {}


def _flags(n: int, last: bool) -> np.ndarray:
    """A read-only bool array of n - 1 Falses then `last`: what a valid batch's terminated and truncated
    always are, so one shared array per (n, last) serves every message (the cache holds at most 64)."""
    arr = _FLAGS.get((n, last))
    if arr is None:
        if len(_FLAGS) >= 64:
            _FLAGS.clear()
        arr = np.zeros(n, _BOOL)
        arr[-1] = last
        arr.flags.writeable = False
        _FLAGS[(n, last)] = arr
    return arr


def _check_hello(msg: Hello, limits: Limits) -> None:
    for name in ("obs_low", "obs_high"):
        arr = getattr(msg, name)
        if arr.shape != (msg.obs_dim,):
            raise ProtocolError("bad_shape", f"{name}: shape {arr.shape}, obs_dim {msg.obs_dim}")
        if np.isnan(arr).any():
            raise ProtocolError("non_finite", f"{name}: NaN (infinite bounds are allowed)")
    for name in ("act_low", "act_high"):
        if getattr(msg, name).shape != (msg.act_dim,):
            raise ProtocolError("bad_shape", f"{name}: shape {getattr(msg, name).shape}, act_dim {msg.act_dim}")
    if not (msg.act_low < msg.act_high).all():
        raise ProtocolError("bad_value", "act_low must be below act_high")
    _check_dims(msg.obs_dim, msg.act_dim, limits)
    if limits.weights_fit is not None and not limits.weights_fit(msg.obs_dim, msg.act_dim):
        raise ProtocolError("too_large", f"obs_dim {msg.obs_dim}, act_dim {msg.act_dim}: this learner's network "
                            "for them would publish weights frames over 64 MiB")


def _check_experience(msg: Experience, limits: Limits) -> None:
    n, obs_dim = msg.obs.shape
    act_dim = msg.action.shape[1]
    if not 1 <= n <= limits.max_steps:
        raise ProtocolError("too_large" if n else "bad_shape", f"{n} steps, limit 1..{limits.max_steps}")
    if obs_dim > limits.max_dim or act_dim > limits.max_dim:
        raise ProtocolError("too_large", "observation or action wider than max_dim")
    for name in ("action", "reward", "next_obs", "terminated", "truncated"):
        if getattr(msg, name).shape[0] != n:
            raise ProtocolError("bad_shape", f"{name}: {getattr(msg, name).shape[0]} steps, obs has {n}")
    if msg.next_obs.shape[1] != obs_dim:
        raise ProtocolError("bad_shape", f"next_obs width {msg.next_obs.shape[1]} != obs width {obs_dim}")
    if msg.prev_action is not None and msg.prev_action.shape != (act_dim,):
        raise ProtocolError("bad_shape", f"prev_action: shape {msg.prev_action.shape}, act_dim {act_dim}")
    if (msg.h0 is None) != (msg.c0 is None) or (msg.h0 is not None and msg.h0.shape != msg.c0.shape):  # type: ignore[union-attr]
        raise ProtocolError("bad_shape", "h0 and c0 come together, with the same shape")
    if msg.target is not None:
        if msg.target.shape != (n, act_dim):
            raise ProtocolError("bad_shape", f"target: shape {msg.target.shape}, action has {(n, act_dim)}")
        if np.isinf(msg.target).any():
            raise ProtocolError("non_finite", "target: infinity (NaN marks a part with no target; nothing else "
                                "that is not finite is allowed)")
    done = msg.terminated[:-1] | msg.truncated[:-1]
    if done.any():
        raise ProtocolError("bad_value", "only the last step of a batch may end the episode")
    _check_run(msg, limits)


def _check_run(msg: Experience, limits: Limits) -> None:
    """What only the run's settings decide, on both decode paths: the widths D, A and H, then the action bounds."""
    _check_dims(msg.obs.shape[1], msg.action.shape[1], limits)
    if limits.state_dim is not None and msg.h0 is not None and msg.h0.shape != (limits.state_dim,):
        raise ProtocolError("dims_mismatch", f"h0/c0 width {msg.h0.shape[0]}, this run's LSTM has {limits.state_dim}")
    bounds = limits.action_range
    if bounds is not None:
        lo, hi = bounds
        for name, action in (("action", msg.action), ("prev_action", msg.prev_action)):
            if action is not None and ((action < lo).any() or (action > hi).any()):
                raise ProtocolError("out_of_bounds", f"{name} outside act_low..act_high (tolerance "
                                    f"{ACTION_TOLERANCE} of the range)")


def _check_dims(obs_dim: int, act_dim: int, limits: Limits) -> None:
    if limits.obs_dim is not None and obs_dim != limits.obs_dim:
        raise ProtocolError("dims_mismatch", f"obs_dim {obs_dim}, this run uses {limits.obs_dim}")
    if limits.act_dim is not None and act_dim != limits.act_dim:
        raise ProtocolError("dims_mismatch", f"act_dim {act_dim}, this run uses {limits.act_dim}")


__all__ = ["Limits", "DEFAULT_LIMITS", "ACTION_TOLERANCE", "MAX_SAFE_INT", "NATIVE_DECODER", "encode", "decode"]
