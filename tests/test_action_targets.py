"""Action targets (protocol 1.5 `target`): labels known after their step, kept by step, trained toward.

From the bot (BotClient.label, label_wait, an env's info["action_targets"]) over the wire to the replay and the
actor's loss, and end to end with a real learner, actor daemon and Gymnasium task (tests/label_env.py).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import zmq

from actor.client import BotClient
from actor.config import ActorConfig
from learner.networks import Arch
from learner.replay import SequenceReplay, StepBatch
from learner.sac import SAC, Batch, SACConfig
from protocol import Bye, EpisodeEnd, Experience, Hello, decode
from protocol.scaling import ActionScale
from tests.procs import Procs, Watch, actor_stats, free_port

NAN = np.float32(np.nan)


def _steps(t0: int, n: int, targets: dict[int, float]) -> StepBatch:
    t = np.arange(t0, t0 + n, dtype=np.float32)
    obs = np.stack([t, t], axis=1)
    target = np.full((n, 1), NAN, np.float32)
    for step, value in targets.items():
        if t0 <= step < t0 + n:
            target[step - t0, 0] = value
    return StepBatch(("a", "bot"), 0, t0, obs, np.zeros((n, 1), np.float32), t, obs + 1, False, False, target=target)


def test_the_replay_keeps_each_steps_target_with_its_step_in_the_policys_units() -> None:
    replay = SequenceReplay(256, 8, 4, 2, 1, targets=True)
    labels = {1: 1.0, 5: -2.0, 9: 0.5, 14: 2.0}  # environment units, bounds -2..2
    for t0 in range(0, 24, 6):
        replay.add(_steps(t0, 6, labels))
    assert replay.n_live == 5  # (refreshes the live list)
    got = replay._gather(replay._live, ActionScale(np.array([-2.0]), np.array([2.0])))
    assert got.target is not None and got.target_mask is not None
    seen = {}
    for obs, target, tmask, mask in zip(got.obs, got.target, got.target_mask, got.mask):
        for i in range(len(mask)):
            step = int(obs[i, 0])
            if tmask[i, 0]:
                assert mask[i] == 1, "a target on a context or padding step would be trained twice or on nothing"
                seen[step] = float(target[i, 0])
            elif mask[i]:
                assert step not in labels
            assert tmask[i, 0] or target[i, 0] == 0.0, "a step without a target must not carry a number"
    assert seen == {1: 0.5, 5: -1.0, 9: 0.25, 14: 1.0}


def test_a_replay_file_keeps_the_targets_and_one_without_them_gives_none() -> None:
    replay = SequenceReplay(256, 8, 4, 2, 1, targets=True)
    for t0 in range(0, 24, 6):
        replay.add(_steps(t0, 6, {3: 1.5}))
    saved = replay.export()
    # The replay file is a checkpoint, which refuses NaN: "no label" must travel as finite numbers (it once did
    # not, and every resume with action targets on started from an empty replay).
    assert all(np.isfinite(v).all() for v in saved.values() if v.dtype.kind == "f")
    back = SequenceReplay(256, 8, 4, 2, 1, targets=True)
    back.load(saved)
    assert np.array_equal(back.chunks().target_mask, replay.chunks().target_mask)
    assert back.chunks().target_mask.sum() == 1
    old = {k: v for k, v in saved.items() if k != "target"}  # a file written before targets, or without them
    back.load(old)
    assert back.chunks().target_mask.sum() == 0
    plain = SequenceReplay(256, 8, 4, 2, 1)
    plain.add(_steps(0, 6, {3: 1.5}))
    assert plain.chunks().target is None and "target" not in plain.export()


ARCH = Arch(3, 2, hidden=16, fc=16, act_low=(-1.0, -1.0), act_high=(1.0, 1.0))


def _batch(seed: int, aim: float) -> Batch:
    """Random steps whose first action part has the target `aim` on every other step; the second part has none."""
    g = torch.Generator().manual_seed(seed)
    B, T = 4, 8
    target_mask = torch.zeros(B, T, 2)
    target_mask[:, ::2, 0] = 1.0
    return Batch(torch.randn(B, T + 1, 3, generator=g), torch.rand(B, T, 2, generator=g) * 2 - 1, torch.zeros(B, 2),
                 torch.zeros(B), torch.randn(B, T, generator=g), torch.zeros(B, T), torch.ones(B, T),
                 target=target_mask * aim, target_mask=target_mask)


def _mean_action(sac: SAC) -> np.ndarray:
    from learner.sac import inputs, time_major

    with torch.no_grad():
        y, _ = sac.actor.features(time_major(inputs(_batch(999, 0.0), sac.arch)))
        return torch.tanh(sac.actor.heads(y)[0]).mean((0, 1)).numpy()


@pytest.mark.parametrize("torso", ["shared", "separate"])
def test_the_target_term_pulls_the_mean_action_to_the_targets(torso: str) -> None:
    means = {}
    for weight in (0.0, 2.0):
        torch.manual_seed(0)
        sac = SAC(ARCH, SACConfig(torso=torso, action_target_weight=weight, actor_lr=3e-3))
        for i in range(120):
            out = sac.update(_batch(i, 0.8))
        assert ("target_loss" in out) == (weight > 0)
        means[weight] = _mean_action(sac)
    assert means[2.0][0] - means[0.0][0] > 0.4, means  # the labelled part goes to its target (0.8)
    assert abs(means[2.0][1] - means[0.0][1]) < 0.1, means  # the unlabelled part is left to SAC


def test_the_target_term_reaches_the_shared_torso_and_no_critic_head() -> None:
    """What the label needs remembered the torso must learn to hold: its gradient goes into the shared LSTM, which
    the actor loss alone never touches, and never into a Q head."""
    torch.manual_seed(0)
    sac = SAC(ARCH, SACConfig(torso="shared", action_target_weight=1.0))
    losses = sac.losses(_batch(1, 0.8))
    torso = [p for n, p in sac.critics[0].named_parameters() if n.startswith(("inp.", "lstm."))]
    heads = [p for n, p in sac.critics[0].named_parameters() if not n.startswith(("inp.", "lstm."))]
    assert losses.target is not None
    grads = torch.autograd.grad(losses.target, torso + heads, allow_unused=True)
    assert any(g is not None and bool(g.abs().sum() > 0) for g in grads[:len(torso)])
    assert all(g is None or not bool(g.abs().sum() > 0) for g in grads[len(torso):])
    unlabelled = _batch(1, 0.8)
    assert sac.losses(unlabelled._replace(target_mask=torch.zeros_like(unlabelled.target_mask))).target is None


def _received(pull: zmq.Socket, until: type, timeout: float = 5.0) -> list:
    got: list = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not any(isinstance(m, until) for m in got):
        if pull.poll(50):
            got.append(decode(pull.recv()))
    return got


def test_a_batch_waits_label_wait_steps_for_its_labels_and_a_late_label_is_counted() -> None:
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    cfg = ActorConfig(ingest=f"tcp://127.0.0.1:{port}", weights=f"tcp://127.0.0.1:{free_port()}", actor_id="t",
                      flush_steps=4, flush_ms=60_000, label_wait=3)
    bot = BotClient.connect(cfg, "bot", -np.ones(2), np.ones(2), np.array([-2.0]), np.array([2.0]))
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not (pull.poll(20) and isinstance(decode(pull.recv()), Hello)):
            bot.link.housekeeping()
        obs = np.zeros(2, np.float32)
        for t in range(12):
            labels = {t - 3: np.array([t / 10], np.float32)} if t >= 3 else {}  # each step's label 3 steps on
            bot.step(obs, np.zeros(1, np.float32), 0.0, obs, False, t == 11, labels)
            if t == 7:
                assert bot.label(0, np.array([1.0])) is False  # steps 0-3 left at step 6: this one is late
        got = _received(pull, EpisodeEnd)
        batches = [m for m in got if isinstance(m, Experience)]
        assert [(b.t0, b.steps) for b in batches] == [(0, 4), (4, 4), (8, 4)]
        targets = np.concatenate([b.target[:, 0] for b in batches])
        np.testing.assert_allclose(targets[:9], [(t + 3) / 10 for t in range(9)], rtol=1e-6)
        assert np.isnan(targets[9:]).all()  # their labels would come after the episode
        assert bot.labels_late == 1
        with pytest.raises(ValueError, match="label"):
            bot.label(0, np.array([np.inf]))
        bot.close()
        bye = [m for m in _received(pull, Bye) if isinstance(m, Bye)]
        assert [(b.sent, b.labels_late) for b in bye] == [(12, 1)]  # the drop is on the wire, for health
    finally:
        bot.close()
        pull.close(0)
        ctx.term()


@pytest.mark.slow
def test_labels_from_an_env_reach_the_learner_and_train_the_actor_toward_them(procs: Procs, eps: dict[str, str],
                                                                              tmp_path: Path) -> None:
    """A task whose right action is only named two steps later (tests/label_env.py), a real actor daemon that waits
    for the labels (label_wait), a real learner that trains toward them: its target loss falls. A second actor that
    does not wait loses the labels of each batch's last steps, and health counts them."""
    metrics = tmp_path / "m.jsonl"
    procs.learner(eps, "--hidden", "16", "--fc", "16", "--seq-len", "8", "--overlap", "4", "--batch-size", "8",
                  "--learning-starts", "200", "--action-target-weight", "1", "--actor-lr", "0.003",
                  "--metrics-path", str(metrics))
    procs.actor(eps, "labels", "--env", "tests.label_env:LateLabel-v0", "--flush-steps", "8", "--label-wait", "4",
                "--flow", "rate-limited")
    procs.actor(eps, "hasty", "--env", "tests.label_env:LateLabel-v0", "--flush-steps", "8", "--flow", "rate-limited")
    watch = Watch(eps["metrics"])
    try:
        watch.wait(lambda h: (actor_stats(h, "hasty") or {}).get("labels_late", 0) > 0, 120, "hasty's late labels")
        watch.wait(lambda h: h["grad_steps"] > 600, 120, "600 gradient steps")
    finally:
        watch.close()
    lines = [json.loads(line) for line in metrics.read_text().splitlines()]
    losses = [line["target_loss"] for line in lines if "target_loss" in line]
    assert len(losses) >= 10, "no training pass had labelled steps"
    first, last = np.mean(losses[:3]), np.mean(losses[-3:])
    assert last < 0.5 * first, (first, last)
