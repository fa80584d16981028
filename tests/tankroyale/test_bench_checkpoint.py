"""bench_tank_checkpoint.py: a checkpoint played in process with the form of a run's config, beside the constant
action, each side against its own opponent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from actor.bots.tankroyale.brain import TankControls, obs_dim
from tests.tankroyale.test_eval_honesty import checkpoint

ROOT = Path(__file__).resolve().parents[2]


def test_a_checkpoint_plays_in_the_configs_form_beside_the_constant_action(tmp_path: Path) -> None:
    ckpt = checkpoint(tmp_path / "tiny.sacl", obs_dim=obs_dim(TankControls(observe="duel")))
    out = subprocess.run([sys.executable, str(ROOT / "tests/bench/bench_tank_checkpoint.py"), "--checkpoint", str(ckpt),
                          "--config", str(ROOT / "deploy/tank.toml"), "--opponents", "SittingDuck",
                          "--rounds", "2", "--action=-4,0,0,3", "--env", "kill_shot=1"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    assert figures["env"]["observe"] == "duel" and figures["env"]["kill_shot"] == "1"  # the config's form, the flag over it
    assert figures["destroyed_constant_sittingduck"] == 1.0  # power 3 at a target that never moves
    assert 0.0 <= figures["destroyed_learned_sittingduck"] <= 1.0 and "hit_learned_sittingduck" in figures
