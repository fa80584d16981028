"""Evaluating along the way does not change the run it watches.

bench_tank_ladder.py's snapshots (`--log-every`, `--log-from`) are how a policy's late swings were found
(docs/tank-experiments.md): a snapshot is only worth reading if it is of the same run. An evaluation draws
from torch's generator (the actor's noise) like training does; `play` puts the stream back. A short
Pendulum run with and without evaluations along the way must end with the same actor, bit for bit.
"""

from __future__ import annotations

import torch

from tests.bench.inprocess import evaluate, run_settings, train

ENV = "Pendulum-v1"


def trained_actor(evaluate_along: bool) -> list[torch.Tensor]:
    run = run_settings(["learning_starts=64", "batch_size=4", "seq_len=8", "overlap=0", "bots=2", "flush=8"], hidden=8)

    def along(sac, steps, bots) -> None:  # noqa: ANN001 - as train calls it
        if evaluate_along:
            evaluate(sac, ENV, {}, episodes=1)

    sac = train(ENV, {}, 160, run, seed=5, log_every=40, on_steps=along)
    return [p.detach().clone() for p in sac.actor.parameters()]


def test_evaluating_along_the_way_leaves_the_run_as_it_was() -> None:
    plain, watched = trained_actor(False), trained_actor(True)
    assert all(torch.equal(a, b) for a, b in zip(plain, watched, strict=True))
