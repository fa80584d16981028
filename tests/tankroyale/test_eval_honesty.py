"""An evaluation of a checkpoint that cannot play our tank stops at once, with the file and the reason.

Before, `tank-eval` on a file of random bytes printed a win rate (of a tank playing without its model)
and exited 0: the tank process only logged "checkpoint ... not usable". Both commands that evaluate a
file, `saclstm tank-eval` and `saclstm tank --eval --checkpoint`, now ask evaluate.checkpoint_problem first.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from actor.bots.tankroyale.brain import ACT_HIGH, ACT_LOW, OBS_DIM
from actor.bots.tankroyale.fits import checkpoint_problem
from tests.procs import free_port


def checkpoint(path: Path, obs_dim: int = OBS_DIM, act_low: np.ndarray = ACT_LOW,
               act_high: np.ndarray = ACT_HIGH) -> Path:
    """A valid learner checkpoint (a tiny SAC, as the learner saves it) of the given shape."""
    torch = pytest.importorskip("torch")
    from learner.sac import SAC, SACConfig
    from learner.state import snapshot
    from protocol.arch import Arch
    from protocol.checkpoint import encode_checkpoint, write_atomic

    torch.manual_seed(0)
    arch = Arch(obs_dim, len(act_low), hidden=8, fc=8, act_low=tuple(map(float, act_low)),
                act_high=tuple(map(float, act_high)))
    meta = {"grad_steps": 1, "version": 1, "arch": arch.to_wire()}
    write_atomic(path, encode_checkpoint(meta, snapshot(SAC(arch, SACConfig()))))
    return path


def random_bytes(path: Path) -> Path:
    path.write_bytes(np.random.default_rng(0).bytes(4096))
    return path


BAD = {
    "random bytes": (random_bytes, "not a checkpoint"),
    "observation width": (lambda p: checkpoint(p, obs_dim=OBS_DIM + 3), f"reads {OBS_DIM + 3} observations"),
    "action bounds": (lambda p: checkpoint(p, act_high=ACT_HIGH * 2), "action bounds"),
}


def test_a_checkpoint_of_the_tank_passes(tmp_path: Path) -> None:
    assert checkpoint_problem(checkpoint(tmp_path / "good.sacl")) is None


@pytest.mark.parametrize("fault", sorted(BAD))
def test_tank_eval_stops_at_once_with_the_file_and_the_reason(fault: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from deploy.tank.evaluate import main

    make, reason = BAD[fault]
    path = make(tmp_path / "bad.sacl")
    start = time.monotonic()
    assert main(["--checkpoint", str(path), "--opponent", "SittingDuck", "--rounds", "1"]) == 2
    assert time.monotonic() - start < 10  # no battle was played
    err = capsys.readouterr().err
    assert str(path) in err and reason in err, err


@pytest.mark.parametrize("fault", sorted(BAD))
def test_tank_eval_mode_stops_at_once_with_the_file_and_the_reason(fault: str, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 2 with the reason, before looking for a server (none answers here: that would be exit 1)."""
    pytest.importorskip("robocode_tank_royale")
    from actor.bots.tankroyale.cli import main

    make, reason = BAD[fault]
    path = make(tmp_path / "bad.sacl")
    assert main(["--eval", "--checkpoint", str(path), "--server", f"ws://127.0.0.1:{free_port()}"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and reason in err, err


def test_tank_eval_mode_with_a_good_checkpoint_goes_on_to_the_server(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("robocode_tank_royale")
    from actor.bots.tankroyale.cli import main

    path = checkpoint(tmp_path / "good.sacl")
    port = free_port()
    assert main(["--eval", "--checkpoint", str(path), "--server", f"ws://127.0.0.1:{port}",
                 "--ingest", f"tcp://127.0.0.1:{free_port()}", "--weights", f"tcp://127.0.0.1:{free_port()}"]) == 1
    assert "no game server answers" in capsys.readouterr().err


def test_the_observation_is_as_wide_as_the_form_the_checkpoint_is_played_with(tmp_path: Path) -> None:
    """observe = "duel" adds five numbers: a checkpoint trained without them cannot play that form, nor one
    trained with them the basic form; each is told so, naming both widths."""
    from actor.bots.tankroyale.brain import TankControls, obs_dim

    duel, basic = TankControls(observe="duel"), TankControls(observe="basic")
    wide = checkpoint(tmp_path / "duel.sacl", obs_dim=obs_dim(duel))
    narrow = checkpoint(tmp_path / "basic.sacl", obs_dim=obs_dim(basic))
    assert checkpoint_problem(wide, duel) is None and checkpoint_problem(narrow, basic) is None
    assert "reads 35 observations, the tank gives 40" in (checkpoint_problem(narrow, duel) or "")
    assert "reads 40 observations, the tank gives 35" in (checkpoint_problem(wide, basic) or "")
