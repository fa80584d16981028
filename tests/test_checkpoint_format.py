"""Checkpoint format and exact resume, in-process."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import msgpack
import numpy as np
import pytest
import torch

from learner.networks import Arch
from learner.sac import SAC, TORSOS, Batch, SACConfig
from learner.state import fits, restore, snapshot
from protocol.arrays import pack_array
from protocol.checkpoint import CheckpointError, decode_checkpoint, encode_checkpoint, load_newest, write_atomic

ARCH = Arch(3, 1, hidden=16, fc=16, act_low=(-2.0,), act_high=(2.0,))


def batch(seed: int) -> Batch:
    g = torch.Generator().manual_seed(seed)
    return Batch(torch.randn(4, 9, 3, generator=g), torch.rand(4, 8, 1, generator=g) * 2 - 1, torch.zeros(4, 1),
                 torch.zeros(4), torch.randn(4, 8, generator=g), torch.zeros(4, 8), torch.ones(4, 8))


def trained(steps: int = 5, torso: str = "shared") -> SAC:
    torch.manual_seed(0)
    sac = SAC(ARCH, SACConfig(torso=torso))
    for i in range(steps):
        sac.update(batch(i))
    return sac


def test_metadata_order_and_rev() -> None:
    data = encode_checkpoint({"game": "pendulum", "episodes": 3, "rev": "stale", "zeta": 1, "alpha": 2},
                             {"w": np.ones(3, np.float32)})
    meta, tensors = decode_checkpoint(data)
    assert list(meta) == ["v", "game", "episodes", "rev", "updatedAt", "zeta", "alpha"]
    assert meta["rev"] != "stale" and len(meta["rev"]) == 16
    assert np.array_equal(tensors["w"], np.ones(3, np.float32))


def damaged(meta: dict | None = None, tensors: dict | None = None, rev: str | None = None, top: object = None) -> bytes:
    """A checkpoint file faulty only where the arguments say: the metadata in its order with `rev` computed
    over the tensors' bytes as stored (so a damaged tensor still matches its rev), unless `rev` is given."""
    wire = tensors if tensors is not None else {"w": pack_array(np.arange(64, dtype=np.float32))}
    digest = hashlib.sha256()
    for name in sorted(wire, key=str):
        digest.update(name.encode() if isinstance(name, str) else name)
        digest.update(wire[name]["data"] if isinstance(wire[name], dict) else b"")
    ordered = {"v": 1, "game": "g", "episodes": 0, "rev": rev or digest.hexdigest()[:16], "updatedAt": "2026-01-01T00:00:00Z"}
    ordered.update(meta or {})
    return msgpack.packb(top if top is not None else {"meta": ordered, "tensors": wire}, use_bin_type=True)


def f32_wire(values: list[float], **change: object) -> dict:
    return {**pack_array(np.array(values, np.float32)), **change}


# Each file is valid in every way but the one its reason names (and the reason is asserted).
DAMAGE = {
    "truncated": (lambda: damaged()[:-7], r"not a checkpoint \(msgpack"),
    "trailing bytes": (lambda: damaged() + b"\x00", r"not a checkpoint \(msgpack"),
    "not a map": (lambda: damaged(top=[1, 2]), "no meta/tensors maps"),
    "no tensors": (lambda: damaged(top={"meta": {}}), "no meta/tensors maps"),
    "keys out of order": (lambda: msgpack.packb({"meta": dict(reversed(list(
        msgpack.unpackb(damaged())["meta"].items()))), "tensors": msgpack.unpackb(damaged())["tensors"]}),
        "metadata keys out of order"),
    "format version": (lambda: damaged(meta={"v": 2}), "format version 2, this build reads 1"),
    "name not text": (lambda: damaged(tensors={b"w": f32_wire([1.0])}), "tensor name b'w' is not text"),
    "not an array map": (lambda: damaged(tensors={"w": {"dtype": "f32", "shape": 1, "data": b"\0" * 4}}),
                         "tensor w: not a {dtype, shape, data} map"),
    "dtype not allowed": (lambda: damaged(tensors={"w": {"dtype": "f16", "shape": [2], "data": b"\0" * 4}}),
                          "tensor w: bad_dtype"),
    "bytes against shape": (lambda: damaged(tensors={"w": f32_wire([1.0, 2.0], shape=[3])}),
                            "tensor w: bad_shape: .* needs 12 bytes, got 8"),
    "bool not 0 or 1": (lambda: damaged(tensors={"flag": {"dtype": "bool", "shape": [1], "data": b"\x02"}}),
                        "tensor flag: bad_value"),
    "nan": (lambda: damaged(tensors={"w": f32_wire([1.0, float("nan")])}), "tensor w holds NaN or infinity"),
    "infinity": (lambda: damaged(tensors={"w": f32_wire([float("-inf"), 1.0])}), "tensor w holds NaN or infinity"),
    "rev of other weights": (lambda: damaged(rev="0" * 16), "rev mismatch: file says 0000000000000000"),
    "flipped bit": (lambda: flip(encode_checkpoint({"game": "g"}, {"w": np.arange(64, dtype=np.float32)})),
                    "rev mismatch"),
}


def flip(data: bytes) -> bytes:
    """One bit of the weights flipped after the file was written (its rev was computed before)."""
    obj = msgpack.unpackb(data)
    raw = bytearray(obj["tensors"]["w"]["data"])
    raw[10] ^= 0x01
    obj["tensors"]["w"]["data"] = bytes(raw)
    return msgpack.packb(obj, use_bin_type=True)


def test_the_damage_helper_makes_valid_files() -> None:
    """The baseline of every case below: undamaged, it loads (so each case's one fault is what refuses it)."""
    meta, tensors = decode_checkpoint(damaged(tensors={"w": f32_wire([1.0, 2.0]), "flag": pack_array(np.ones(2, bool))}))
    assert meta["game"] == "g" and tensors["w"].tolist() == [1.0, 2.0] and tensors["flag"].tolist() == [True, True]


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_files_are_refused_with_their_reason(damage: str) -> None:
    make, reason = DAMAGE[damage]
    with pytest.raises(CheckpointError, match=reason):
        decode_checkpoint(make())


@pytest.mark.parametrize("torso", TORSOS)
def test_resume_is_bitwise_exact_and_continues_identically(torso: str) -> None:
    """The resumed learner's next update equals the original's, with no RNG set by hand: between the save and
    the resumed update the global RNG has moved on (the original's update, the new SAC's initialisation), as in
    a fresh process, so only restore() bringing the saved RNG state back makes the two updates agree."""
    original = trained(torso=torso)
    meta, tensors = decode_checkpoint(encode_checkpoint({"game": "t"}, snapshot(original)))
    saved = copy.deepcopy(original)
    out_a = original.update(batch(99))  # the RNG is where the snapshot found it
    resumed = SAC(ARCH, SACConfig(torso=torso))
    restore(resumed, tensors)
    for mod in ("actor", "critics", "targets"):
        for a, b in zip(getattr(saved, mod).parameters(), getattr(resumed, mod).parameters()):
            assert torch.equal(a, b)
    for opt in ("actor_opt", "critic_opt", "alpha_opt"):
        sa, sb = getattr(saved, opt).state_dict()["state"], getattr(resumed, opt).state_dict()["state"]
        assert sa.keys() == sb.keys() and sa
        for k in sa:
            for key in ("exp_avg", "exp_avg_sq", "step"):
                assert torch.equal(sa[k][key], sb[k][key]), (opt, k, key)
    out_b = resumed.update(batch(99))
    assert out_a == out_b
    for mod in ("actor", "critics", "targets"):
        for a, b in zip(getattr(original, mod).parameters(), getattr(resumed, mod).parameters()):
            assert torch.equal(a, b), f"{mod} differs after the first update past the resume"
    assert torch.equal(original.log_alpha, resumed.log_alpha)


def test_load_newest_falls_back_past_corrupt_and_mismatched(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from functools import partial

    from learner.config import LearnerConfig

    good = trained()
    write_atomic(tmp_path / "ckpt-000000000010.sacl",
                 encode_checkpoint({"grad_steps": 10, "arch": ARCH.to_wire()}, snapshot(good)))
    other = SAC(small := Arch(3, 1, hidden=8, fc=8, act_low=(-2.0,), act_high=(2.0,)), SACConfig())
    write_atomic(tmp_path / "ckpt-000000000020.sacl",
                 encode_checkpoint({"grad_steps": 20, "arch": small.to_wire()}, snapshot(other)))
    (tmp_path / "ckpt-000000000030.sacl").write_bytes(b"\x93garbage")
    with caplog.at_level("INFO", logger="saclstm.checkpoint"):
        found = load_newest(tmp_path, check=partial(fits, LearnerConfig(hidden=16, fc=16)))
    assert found is not None and found[0].name == "ckpt-000000000010.sacl"
    lines = [r.message for r in caplog.records]
    assert len(lines) == 1 and "000030" in lines[0] and "000020" in lines[0] and "'hidden': 8" in lines[0]


def test_a_checkpoint_of_the_other_torso_layout_is_refused() -> None:
    """Adam moments are stored by position; loading them across layouts would pair them with the wrong tensors."""
    _, tensors = decode_checkpoint(encode_checkpoint({}, snapshot(trained(torso="shared"))))
    with pytest.raises(CheckpointError, match="torso = shared, this learner uses torso = separate"):
        restore(SAC(ARCH, SACConfig(torso="separate")), tensors)
    from learner.config import LearnerConfig

    meta = {"arch": ARCH.to_wire()}
    with pytest.raises(CheckpointError, match="'torso': 'shared'.*'torso': 'separate'"):
        fits(LearnerConfig(hidden=16, fc=16, torso="separate"), meta, tensors)
    fits(LearnerConfig(hidden=16, fc=16, torso="shared"), meta, tensors)
    restore(SAC(ARCH, SACConfig(torso="shared")), tensors)


def test_nothing_valid_means_a_fresh_start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "ckpt-000000000001.sacl").write_bytes(b"")
    with caplog.at_level("INFO", logger="saclstm.checkpoint"):
        assert load_newest(tmp_path) is None
    assert len(caplog.records) == 1 and "starting fresh" in caplog.records[0].message


def test_the_learner_skips_a_checkpoint_of_the_other_torso_layout(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """Resume picks the newest checkpoint that fits; one from the other layout is passed over with a log line."""
    from dataclasses import asdict

    from learner.config import LearnerConfig
    from learner.persistence import Persistence

    live = tmp_path / "live.sacl"
    dims = {"obs_dim": 3, "act_dim": 1, "act_low": (-2.0,), "act_high": (2.0,), "hidden": 16, "fc": 16}
    for steps, torso in ((10, "shared"), (20, "separate")):
        cfg = LearnerConfig(weights_path=str(live), torso=torso, **dims)
        meta = {"grad_steps": steps, "version": steps, "arch": ARCH.to_wire(), "config": asdict(cfg)}
        write_atomic(tmp_path / f"ckpt-{steps:012d}.sacl", encode_checkpoint(meta, snapshot(trained(torso=torso))))
    with caplog.at_level("INFO", logger="saclstm.checkpoint"):
        found = Persistence(LearnerConfig(weights_path=str(live), torso="shared", **dims)).newest()
    assert found is not None and found[0].name == "ckpt-000000000010.sacl"
    assert any("torso" in r.message and "000020" in r.message for r in caplog.records)


@pytest.mark.parametrize("fault", ["arch unreadable", "hidden", "obs_dim", "torso"])
def test_the_learner_refuses_a_file_of_another_model_with_its_reason(fault: str, tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    """learner/persistence.py: one file, valid but for the one way it does not fit; the log line names it."""
    from dataclasses import asdict

    from learner.config import LearnerConfig
    from learner.persistence import Persistence

    live = tmp_path / "live.sacl"
    dims = {"obs_dim": 3, "act_dim": 1, "act_low": (-2.0,), "act_high": (2.0,), "hidden": 16, "fc": 16}
    cfg = LearnerConfig(weights_path=str(live), torso="shared", **dims)
    meta = {"grad_steps": 10, "version": 10, "arch": ARCH.to_wire(), "config": asdict(cfg)}
    write_atomic(tmp_path / "ckpt-000000000010.sacl", encode_checkpoint(meta, snapshot(trained())))
    assert Persistence(cfg).newest() is not None  # the baseline fits
    want = {"arch unreadable": ("architecture unreadable", {}),
            "hidden": ("does not match", {"hidden": 32}),
            "obs_dim": ("does not match", {"obs_dim": 4}),
            "torso": ("does not match", {"torso": "separate"})}
    reason, change = want[fault]
    if fault == "arch unreadable":
        meta["arch"] = {"obs_dim": 3}
        write_atomic(tmp_path / "ckpt-000000000010.sacl", encode_checkpoint(meta, snapshot(trained())))
    with caplog.at_level("INFO", logger="saclstm.checkpoint"):
        found = Persistence(LearnerConfig(weights_path=str(live), **{**dims, "torso": "shared", **change})).newest()
    assert found is None
    lines = [r.message for r in caplog.records]
    assert len(lines) == 1 and "000010" in lines[0] and reason in lines[0], lines
    for key, value in change.items():
        assert f"{key!r}: {value!r}" in lines[0], lines  # the config's side of the mismatch is named
