"""Checkpoint files: one msgpack map of metadata and raw little-endian tensors. No pickle.

Why msgpack and not safetensors: the metadata must keep a fixed key order
(v, game, episodes, rev, updatedAt, then the rest) and hold nested values
(config, architecture, counters, RNG states); safetensors' header is a flat
string-to-string map in sorted order. msgpack maps keep insertion order,
arrays travel exactly as on the wire (protocol/arrays.py), and reading one
can run no code.

    {"meta": {"v", "game", "episodes", "rev", "updatedAt", ...},
     "tensors": {name: {"dtype", "shape", "data"}, ...}}

`rev` is recomputed from the weights at every write: the first 16 hex digits
of SHA-256 over the tensors' bytes in name order.

Writes are atomic and durable: a temp file in the same directory, fsync,
rename over the target, fsync the directory. A crash leaves either the old
file or the new one, never half of one; leftover temp files are removed at
start (`clean_temp`).
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import re
import time
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from protocol.arrays import pack_array, unpack_array
from protocol.errors import ProtocolError

log = logging.getLogger("saclstm.checkpoint")

FORMAT_VERSION = 1
META_ORDER = ("v", "game", "episodes", "rev", "updatedAt")
_NAME = re.compile(r"^ckpt-(\d{12})\.sacl$")


class CheckpointError(ValueError):
    """A checkpoint that must not be loaded; the message says why."""


def tensors_rev(tensors: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256()
    for name in sorted(tensors):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(tensors[name]).tobytes())
    return digest.hexdigest()[:16]


def encode_checkpoint(meta: dict[str, Any], tensors: dict[str, np.ndarray]) -> bytes:
    """Bytes of one checkpoint; metadata keys in the fixed order, `rev` recomputed."""
    ordered: dict[str, Any] = {
        "v": meta.get("v", FORMAT_VERSION), "game": meta.get("game", ""), "episodes": int(meta.get("episodes", 0)),
        "rev": tensors_rev(tensors), "updatedAt": meta.get("updatedAt") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    ordered.update({k: v for k, v in meta.items() if k not in META_ORDER})
    return msgpack.packb({"meta": ordered, "tensors": {k: pack_array(v) for k, v in tensors.items()}},
                         use_bin_type=True)


def decode_checkpoint(data: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Validate structure, finiteness and rev; raises CheckpointError with the reason."""
    try:
        obj = msgpack.unpackb(data, raw=False, strict_map_key=True, timestamp=0)
    except Exception as exc:
        raise CheckpointError(f"not a checkpoint (msgpack: {type(exc).__name__})") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("meta"), dict) or not isinstance(obj.get("tensors"), dict):
        raise CheckpointError("not a checkpoint (no meta/tensors maps)")
    meta, raw = obj["meta"], obj["tensors"]
    if list(meta)[:5] != list(META_ORDER):
        raise CheckpointError(f"metadata keys out of order: {list(meta)[:5]}")
    if meta["v"] != FORMAT_VERSION:
        raise CheckpointError(f"format version {meta['v']!r}, this build reads {FORMAT_VERSION}")
    tensors: dict[str, np.ndarray] = {}
    for name, wire in raw.items():
        if type(name) is not str:
            raise CheckpointError(f"tensor name {name!r} is not text")
        if not isinstance(wire, dict) or not isinstance(wire.get("shape"), list):
            raise CheckpointError(f"tensor {name}: not a {{dtype, shape, data}} map with a shape list")
        dtype = wire.get("dtype")
        try:
            arr = unpack_array(name, wire, dtype if isinstance(dtype, str) else "", (None,) * len(wire["shape"]), len(data))
        except ProtocolError as exc:
            raise CheckpointError(f"tensor {name}: {exc}") from None
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise CheckpointError(f"tensor {name} holds NaN or infinity")
        tensors[name] = arr
    if tensors_rev(tensors) != meta["rev"]:
        raise CheckpointError(f"rev mismatch: file says {meta['rev']}, weights hash to {tensors_rev(tensors)}")
    return meta, tensors


_TEMP_IDS = itertools.count()  # next() on a count is atomic under the GIL: threads never draw the same number


def write_temp(path: Path, data: bytes) -> Path:
    """`data` in a temp file beside `path`, fsynced, under a name no other write shares (pid and a per-process
    count, created exclusively): two writes of one file in flight, a periodic one that outlived its join and
    the final one, must not truncate or write into each other's temp file. The caller renames it over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{next(_TEMP_IDS)}"
        try:
            fh = open(tmp, "xb")  # noqa: SIM115 - closed below
            break
        except FileExistsError:
            continue  # left by a crashed process of the same pid: not ours to remove
    try:
        with fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def write_atomic(path: Path, data: bytes) -> None:
    """Temp file in the same directory (`write_temp`), fsync, rename over, fsync the directory."""
    tmp = write_temp(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def numbered(directory: Path) -> list[Path]:
    """Numbered checkpoints, newest first."""
    if not directory.is_dir():
        return []
    found = [p for p in directory.iterdir() if _NAME.match(p.name)]
    return sorted(found, key=lambda p: p.name, reverse=True)


def checkpoint_name(grad_steps: int) -> str:
    return f"ckpt-{grad_steps:012d}.sacl"


def clean_temp(directory: Path) -> int:
    """Remove temp files a crash left behind; returns how many."""
    if not directory.is_dir():
        return 0
    removed = 0
    for p in directory.iterdir():
        if p.name.startswith(".") and ".tmp" in p.name:
            p.unlink(missing_ok=True)
            removed += 1
    return removed


def load_newest(directory: Path, live: Path | None = None,
                check: Any = None) -> tuple[Path, dict[str, Any], dict[str, np.ndarray]] | None:
    """The newest checkpoint that loads, validates and passes `check(meta, tensors)` (which raises
    CheckpointError on a mismatch). Falls back through older ones; logs one line saying which and why."""
    candidates = ([live] if live is not None and live.exists() else []) + numbered(directory)
    problems: list[str] = []
    for path in candidates:
        try:
            meta, tensors = decode_checkpoint(path.read_bytes())
            if check is not None:
                check(meta, tensors)
        except (OSError, CheckpointError) as exc:
            problems.append(f"{path.name}: {exc}")
            continue
        if problems:
            log.warning("checkpoint: resuming from %s (skipped %s)", path, "; ".join(problems))
        else:
            log.info("checkpoint: resuming from %s (rev %s, %s)", path, meta["rev"], meta.get("updatedAt"))
        return path, meta, tensors
    if problems:
        log.warning("checkpoint: no valid checkpoint in %s, starting fresh (%s)", directory, "; ".join(problems))
    else:
        log.info("checkpoint: none in %s, starting fresh", directory)
    return None
