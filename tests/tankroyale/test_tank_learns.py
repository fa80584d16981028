"""The tank learns: a short TankRoyale-v0 run beats the untrained policy against SpinBot.

The learner's own parts (SequenceReplay, SAC.update, tests/bench/inprocess.py), a small network and the
default action form; the trained and the untrained deterministic policies then play the same fixed-seed
rounds. SpinBot is the rung where the untrained tank loses (it drives broadside and is shot to pieces)
and a few thousand decisions teach it to close in and win: a change that breaks learning, the action's
form or the rewards turns this red. The full-size figures are bench_tank_ladder.py's.
"""

from __future__ import annotations

import numpy as np
import torch

import actor.bots.tankroyale.env  # noqa: F401 - registers TankRoyale-v0
from tests.bench.inprocess import make_sac, play, run_settings, train

ENV = "TankRoyale-v0"
KW = {"opponent": "SpinBot", "max_turns": 1500}
ROUNDS = 12


def wins_and_return(sac) -> tuple[float, float]:  # noqa: ANN001 - a learner.sac.SAC
    bots = play(sac, ENV, KW, ROUNDS)
    return float(np.mean([i["won"] for i in bots.infos])), float(np.mean(bots.returns))


def test_a_short_run_beats_the_untrained_tank_against_spinbot() -> None:
    torch.set_num_threads(1)
    run = run_settings(["learning_starts=500", "seq_len=16", "overlap=8", "batch_size=16"], hidden=48)
    torch.manual_seed(0)
    untrained = wins_and_return(make_sac(ENV, KW, run))
    trained = wins_and_return(train(ENV, KW, 4000, run, seed=0))
    assert trained[0] >= untrained[0] + 0.3 and trained[1] > untrained[1] + 5, (untrained, trained)
