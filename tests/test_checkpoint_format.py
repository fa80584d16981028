"""Checkpoint format and exact resume, in-process."""

from __future__ import annotations

import copy
from pathlib import Path

import msgpack
import numpy as np
import pytest
import torch

from learner.networks import Arch
from learner.sac import SAC, TORSOS, Batch, SACConfig
from learner.state import check_against, restore, snapshot
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


@pytest.mark.parametrize("damage", ["truncate", "flip", "nan", "rev"])
def test_damaged_files_are_refused_with_a_reason(damage: str) -> None:
    data = encode_checkpoint({"game": "g"}, {"w": np.arange(64, dtype=np.float32)})
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        obj = msgpack.unpackb(data)
        raw = bytearray(obj["tensors"]["w"]["data"])
        raw[10] ^= 0x01
        obj["tensors"]["w"]["data"] = bytes(raw)
        data = msgpack.packb(obj)
    elif damage == "nan":
        obj = msgpack.unpackb(data)
        obj["tensors"]["w"]["data"] = np.full(64, np.nan, np.float32).tobytes()
        data = msgpack.packb(obj)
    else:
        obj = msgpack.unpackb(data)
        obj["meta"]["rev"] = "0" * 16
        data = msgpack.packb(obj)
    with pytest.raises(CheckpointError):
        decode_checkpoint(data)


@pytest.mark.parametrize("torso", TORSOS)
def test_resume_is_bitwise_exact_and_continues_identically(torso: str) -> None:
    original = trained(torso=torso)
    copy_of = copy.deepcopy(original)
    meta, tensors = decode_checkpoint(encode_checkpoint({"game": "t"}, snapshot(original)))
    torch.manual_seed(123)  # a fresh process would have another RNG state: restore must bring it back
    resumed = SAC(ARCH, SACConfig(torso=torso))
    restore(resumed, tensors)
    for mod in ("actor", "critics", "targets"):
        for a, b in zip(getattr(copy_of, mod).parameters(), getattr(resumed, mod).parameters()):
            assert torch.equal(a, b)
    for opt in ("actor_opt", "critic_opt", "alpha_opt"):
        sa, sb = getattr(copy_of, opt).state_dict()["state"], getattr(resumed, opt).state_dict()["state"]
        assert sa.keys() == sb.keys() and sa
        for k in sa:
            for key in ("exp_avg", "exp_avg_sq", "step"):
                assert torch.equal(sa[k][key], sb[k][key]), (opt, k, key)
    torch.set_rng_state(torch.from_numpy(np.array(tensors["rng.torch"])))
    out_a = copy_of.update(batch(99))
    torch.set_rng_state(torch.from_numpy(np.array(tensors["rng.torch"])))
    out_b = resumed.update(batch(99))
    assert out_a == out_b


def test_load_newest_falls_back_past_corrupt_and_mismatched(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    good = trained()
    write_atomic(tmp_path / "ckpt-000000000010.sacl", encode_checkpoint({"grad_steps": 10}, snapshot(good)))
    other = SAC(Arch(3, 1, hidden=8, fc=8, act_low=(-2.0,), act_high=(2.0,)), SACConfig())
    write_atomic(tmp_path / "ckpt-000000000020.sacl", encode_checkpoint({"grad_steps": 20}, snapshot(other)))
    (tmp_path / "ckpt-000000000030.sacl").write_bytes(b"\x93garbage")
    with caplog.at_level("INFO", logger="saclstm.checkpoint"):
        found = load_newest(tmp_path, check=check_against(good))
    assert found is not None and found[0].name == "ckpt-000000000010.sacl"
    lines = [r.message for r in caplog.records]
    assert len(lines) == 1 and "000030" in lines[0] and "000020" in lines[0] and "shape" in lines[0]


def test_a_checkpoint_of_the_other_torso_layout_is_refused() -> None:
    """Adam moments are stored by position; loading them across layouts would pair them with the wrong tensors."""
    _, tensors = decode_checkpoint(encode_checkpoint({}, snapshot(trained(torso="shared"))))
    with pytest.raises(CheckpointError, match="torso = shared, this learner uses torso = separate"):
        restore(SAC(ARCH, SACConfig(torso="separate")), tensors)
    with pytest.raises(CheckpointError, match="torso"):
        check_against(SAC(ARCH, SACConfig(torso="separate")))({}, tensors)
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
