"""Arrays on the wire: raw little-endian bytes with dtype and shape.

Never lists of floats (slow and lossy) and never pickle (runs code). Decoding
is `np.frombuffer` plus checks, so a hostile sender can neither allocate
memory it did not send nor smuggle an object in.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from protocol.errors import ProtocolError

DTYPES: dict[str, np.dtype] = {
    "f32": np.dtype("<f4"),
    "f64": np.dtype("<f8"),
    "i32": np.dtype("<i4"),
    "i64": np.dtype("<i8"),
    "u8": np.dtype("u1"),
    "bool": np.dtype("u1"),
}
"""The dtype allow-list. `bool` travels as one byte, 0 or 1."""

_NAMES = {np.dtype(np.bool_): "bool", **{dt: name for name, dt in DTYPES.items() if name != "bool"}}


def pack_array(arr: np.ndarray) -> dict[str, Any]:
    """The wire form of `arr`: {"dtype", "shape", "data"}."""
    name = _NAMES.get(arr.dtype)
    if name is None:
        wire = np.dtype(arr.dtype.name).newbyteorder("<") if arr.dtype.kind in "fiu" else None
        name = _NAMES.get(wire) if wire is not None else None
        if name is None:
            raise TypeError(f"dtype {arr.dtype} cannot travel; use one of {sorted(DTYPES)}")
        arr = arr.astype(wire)
    return {"dtype": name, "shape": list(arr.shape), "data": arr.tobytes()}


def unpack_array(field: str, obj: Any, dtype: str, shape: tuple[int | None, ...], max_bytes: int) -> np.ndarray:
    """Decode one wire array, checking dtype and shape; None in `shape` is any length.

    The result is a read-only view of the frame's bytes: callers copy what they keep.
    """
    if not isinstance(obj, dict):
        raise ProtocolError("bad_type", f"{field}: expected an array map")
    try:
        name, dims, data = obj["dtype"], obj["shape"], obj["data"]
    except KeyError as exc:
        raise ProtocolError("missing_field", f"{field}.{exc.args[0]}") from None
    if not isinstance(name, str) or name not in DTYPES:
        raise ProtocolError("bad_dtype", f"{field}: dtype {name!r} not allowed")
    if name != dtype:
        raise ProtocolError("bad_dtype", f"{field}: dtype {name} where {dtype} is required")
    if not isinstance(data, bytes):
        raise ProtocolError("bad_type", f"{field}.data: expected bytes")
    if len(data) > max_bytes:
        raise ProtocolError("too_large", f"{field}: {len(data)} bytes over the limit {max_bytes}")
    if not isinstance(dims, (list, tuple)) or len(dims) != len(shape):
        raise ProtocolError("bad_shape", f"{field}: expected {len(shape)} dimensions")
    count = 1
    for got, want in zip(dims, shape):
        if type(got) is not int or got < 0 or (want is not None and got != want):
            raise ProtocolError("bad_shape", f"{field}: shape {dims} does not fit {list(shape)}")
        count *= got
    wire = DTYPES[name]
    if count * wire.itemsize != len(data):
        raise ProtocolError("bad_shape", f"{field}: shape {dims} needs {count * wire.itemsize} bytes, got {len(data)}")
    if name == "bool":
        if data.translate(None, b"\x00\x01"):
            raise ProtocolError("bad_value", f"{field}: bool bytes must be 0 or 1")
        return np.frombuffer(data, dtype=np.bool_).reshape(dims)
    return np.frombuffer(data, dtype=wire).reshape(dims)


def require_finite(fields: str, chunks: list[bytes]) -> np.ndarray:
    """Reject NaN and infinities in float32 data: one bad number poisons every gradient after it.

    All chunks are checked in one pass: x * 0 is 0 for every finite x and NaN
    otherwise, so a single dot product with zeros decides, at a third of the
    cost of isfinite().all() per array. Returns the joined float32 data.
    """
    flat = np.frombuffer(b"".join(chunks), dtype=np.float32)
    # No np.errstate here: it costs more than the check. On bad input numpy may
    # warn "invalid value encountered in dot"; the daemons silence it globally.
    if flat.size and not math.isfinite(flat.dot(_zeros(flat.size))):
        raise ProtocolError("non_finite", f"{fields}: NaN or infinity")
    return flat


_ZEROS = np.zeros(0, np.float32)


def _zeros(size: int) -> np.ndarray:
    global _ZEROS
    if _ZEROS.size < size:
        _ZEROS = np.zeros(max(size, 2 * _ZEROS.size), np.float32)
    return _ZEROS[:size]
