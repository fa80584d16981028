"""Our tank in real battles: our server (a thread of this process), opponents on the official bot API (processes),
our controller, and the tank's experience as it leaves on a real ZeroMQ socket.

The reward test scripts only the tank's *policy* (aim at the last scan, fire when on it): every event still travels
the real path, the engine's turn -> the server's tick -> the bot API's parsing and dispatch order -> the tank. The
expected rewards are computed from the observer's copy of each turn's events with the reward table (TankRewards; docs/tankroyale.md).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import zmq

pytest.importorskip("robocode_tank_royale")

from actor.bots.tankroyale.brain import TankControls, TankRewards  # noqa: E402
from actor.bots.tankroyale.controller import Controller, GameAborted  # noqa: E402
from actor.bots.tankroyale.engine import Setup  # noqa: E402
from actor.bots.tankroyale.server import ServerHandle, run_server  # noqa: E402
from actor.bots.tankroyale.tank import SaclstmTank, spec  # noqa: E402
from actor.client import BotClient  # noqa: E402
from actor.config import ActorConfig  # noqa: E402
from protocol import EpisodeEnd, EpisodeStart, Experience, decode  # noqa: E402
from tests.procs import Procs, Watch, actor_stats, free_port  # noqa: E402
from tests.tankroyale.test_env import FIRST_FORM, aim_and_fire, expected_reward  # noqa: E402

R = TankRewards()
# Small arena, quick guns, little patience: short rounds. A generous turn timeout: a skipped turn here is a bug.
SETUP = Setup(arena_width=400, arena_height=400, number_of_rounds=2, gun_cooling_rate=0.5, max_inactivity_turns=100,
              turn_timeout_us=300_000)


class Inbox:
    """The learner's end of the tank's PUSH socket: every message the tank sends, decoded."""

    def __init__(self) -> None:
        self.ctx = zmq.Context()
        self.pull = self.ctx.socket(zmq.PULL)
        self.port = self.pull.bind_to_random_port("tcp://127.0.0.1")
        self.got: list[Any] = []

    def drain(self, until: type, count: int, timeout: float = 20.0) -> list[Any]:
        deadline = time.monotonic() + timeout
        while sum(isinstance(m, until) for m in self.got) < count and time.monotonic() < deadline:
            if self.pull.poll(50):
                self.got.append(decode(self.pull.recv()))
        return self.got

    def close(self) -> None:
        self.pull.close(0)
        self.ctx.term()


@pytest.fixture
def server() -> Iterator[ServerHandle]:
    handle = run_server(port=0, tps=-1, seed=5, setup=SETUP)
    try:
        yield handle
    finally:
        handle.close()


@pytest.fixture
def inbox() -> Iterator[Inbox]:
    box = Inbox()
    try:
        yield box
    finally:
        box.close()


def episodes(messages: list[Any]) -> list[dict[str, Any]]:
    """Per episode: its start, its steps in order (concatenated batches) and its end."""
    out: dict[int, dict[str, Any]] = {}
    for m in messages:
        if isinstance(m, (EpisodeStart, Experience, EpisodeEnd)):
            ep = out.setdefault(m.episode, {"start": None, "batches": [], "end": None})
            if isinstance(m, EpisodeStart):
                ep["start"] = m
            elif isinstance(m, EpisodeEnd):
                ep["end"] = m
            else:
                ep["batches"].append(m)
    for ep in out.values():
        b = sorted(ep["batches"], key=lambda m: m.t0)
        ep["reward"] = np.concatenate([m.reward for m in b]) if b else np.zeros(0)
        ep["terminated"] = np.concatenate([m.terminated for m in b]) if b else np.zeros(0, bool)
        ep["t0"] = [m.t0 for m in b]
    return [out[k] for k in sorted(out)]


@pytest.mark.parametrize("opponent", ["SittingDuck", "SpinBot"])
def test_every_reward_lands_in_the_step_ending_at_its_turn_won_rounds_included(server: ServerHandle, inbox: Inbox,
                                                                               tmp_path, opponent: str) -> None:
    """Against the stationary target the scripted aim wins every round; against the spinner rounds are won or lost:
    each round is one episode keyed by the opponent, one step per turn after the first, rewards in their turn."""
    procs = Procs(tmp_path)
    cfg = ActorConfig(ingest=f"tcp://127.0.0.1:{inbox.port}", weights=f"tcp://127.0.0.1:{free_port()}",
                      actor_id="tank", flow="realtime", flush_steps=10_000, flush_ms=60_000, close_linger_s=5)
    client = BotClient.connect(cfg, "saclstm-tank", *spec())
    client.act = aim_and_fire  # type: ignore[method-assign]  # the scripted policy; all else is the real tank
    tank = SaclstmTank(client, server_url=server.url, controls=TankControls(**FIRST_FORM))
    threading.Thread(target=tank.start, daemon=True).start()
    ticks: dict[tuple[int, int], list[dict]] = {}
    try:
        procs.start("opponent", "actor.bots.tankroyale.opponents", opponent, "--server", server.url)
        with Controller(server.url) as ctl:
            game = ctl.play(SETUP, ["saclstm-tank", opponent], timeout=120,
                            on_tick=lambda t: ticks.__setitem__((t["roundNumber"], t["turnNumber"]), t["events"]))
        eps = episodes(inbox.drain(EpisodeEnd, SETUP.number_of_rounds))
    finally:
        client.close()
        procs.close()
    assert server.stats["skipped_turns"] == 0 and tank.skipped == 0
    assert len(eps) == SETUP.number_of_rounds == len(game.rounds)
    before: dict[str, float] = {}
    for ep, rnd in zip(eps, game.rounds):
        number, last_turn = rnd["roundNumber"], rnd["turnNumber"]
        ours = next(r for r in rnd["results"] if r["id"] == 1)  # the game's results so far: this round's is the gain
        won = ours["lastSurvivorBonus"] > before.get("lastSurvivorBonus", 0)
        before = ours
        assert won or opponent != "SittingDuck", "the scripted aim kills a sitting duck in a small arena"
        assert ep["start"].opponent == opponent  # a one-on-one names its opponent from the first round
        # One step per turn after the first, the last one terminal: nothing lost, nothing a turn late.
        assert len(ep["reward"]) == last_turn - 1 == ep["end"].length
        assert ep["terminated"][-1] and not ep["terminated"][:-1].any()
        # Step k ends at turn k + 2 and carries that turn's events (the win from the round's result).
        want = [expected_reward([e for e in ticks[(number, k + 2)] if e["type"] != "WonRoundEvent"])
                for k in range(len(ep["reward"]))]
        want[-1] += R.win if won else 0.0
        np.testing.assert_allclose(ep["reward"], want, atol=1e-4)
        last = ticks[(number, last_turn)]
        if won:
            kill = [e for e in last if e["type"] == "BulletHitBotEvent" and e["energy"] <= 0]
            assert kill and ep["reward"][-1] == pytest.approx(
                R.damage_dealt * kill[0]["damage"] + R.kill + R.win + R.turn, abs=1e-4), "killing shot, kill, win"
        else:
            assert any(e["type"] == "BotDeathEvent" and e["victimId"] == 1 for e in last)
            assert ep["reward"][-1] <= R.death + R.turn + 1e-4, "the death (and the lethal hit) in the last step"
        assert ep["end"].ret == pytest.approx(float(ep["reward"].sum()), abs=1e-3)


def test_eval_mode_sends_no_experience(server: ServerHandle, inbox: Inbox, tmp_path) -> None:
    procs = Procs(tmp_path)
    try:
        procs.start("duck", "actor.bots.tankroyale.opponents", "SittingDuck", "--server", server.url)
        procs.start("tank", "deploy", "tank", "--eval", "--server", server.url, "--ingest",
                    f"tcp://127.0.0.1:{inbox.port}", "--weights", f"tcp://127.0.0.1:{free_port()}", "--actor-id", "ev")
        with Controller(server.url) as ctl:
            game = ctl.play(SETUP, ["saclstm-tank", "SittingDuck"], timeout=120)
        got = inbox.drain(EpisodeEnd, SETUP.number_of_rounds)
    finally:
        procs.close()
    assert len(game.rounds) == SETUP.number_of_rounds
    ends = [m for m in got if isinstance(m, EpisodeEnd)]
    assert len(ends) == SETUP.number_of_rounds and all(m.eval for m in ends), "each round is an eval episode"
    assert not [m for m in got if isinstance(m, (Experience, EpisodeStart))], "eval sends no experience"


def test_a_restarted_learner_finds_the_tank_still_playing_and_sending(server: ServerHandle, procs: Procs,
                                                                      eps: dict[str, str]) -> None:
    """SIGKILL the learner mid-battle and start a new one on the same endpoints: the tank never stopped playing
    (no skipped turn, never left the game) and its experience reaches the new learner."""
    small = ("--hidden", "16", "--fc", "16", "--seq-len", "8", "--overlap", "4", "--batch-size", "8",
             "--learning-starts", "100000")
    learner = procs.learner(eps, *small)
    watch = Watch(eps["metrics"])
    game: dict[str, Any] = {}
    ctl = Controller(server.url)
    player = threading.Thread()
    try:
        watch.wait(lambda h: True, 60, "the learner")
        procs.start("duck", "actor.bots.tankroyale.opponents", "SittingDuck", "--server", server.url)
        procs.start("tank", "deploy", "tank", "--server", server.url, "--ingest", eps["ingest"], "--weights",
                    eps["weights"], "--actor-id", "tank0", "--flush-steps", "16")
        long = replace(SETUP, number_of_rounds=1000, max_inactivity_turns=10_000)  # rounds that outlast the test
        ctl.wait_for_bots(["saclstm-tank", "SittingDuck"], 60)
        def play() -> None:
            with contextlib.suppress(GameAborted):  # stopped by the test's end
                game["r"] = ctl.play(long, ["saclstm-tank", "SittingDuck"])
        player = threading.Thread(target=play, daemon=True)
        player.start()
        watch.wait(lambda h: (actor_stats(h, "tank0") or {}).get("received", 0) >= 100, 60, "the tank's steps")
        turns_before = server.stats["turns"]
        learner.kill()
        learner.wait(10)
        procs.learner(eps, *small, name="learner2")
        h = watch.wait(lambda h: (actor_stats(h, "tank0") or {}).get("received", 0) >= 100, 90,
                       "the tank's steps at the new learner")
        assert h["session"] and server.stats["turns"] > turns_before
        assert server.stats["skipped_turns"] == 0 and server.stats["bots_left_in_game"] == 0
        assert "session" in procs.log("tank") or "learner" in procs.log("tank")  # it noticed, and said so once
    finally:
        ctl.stop_game()
        if player.is_alive():
            player.join(30)
        ctl.close()
        watch.close()


@pytest.mark.parametrize("label_wait", [0, 6])
def test_the_tank_sends_its_shots_aim_labels_only_to_an_actor_that_waits_for_them(server: ServerHandle, inbox: Inbox,
                                                                                tmp_path, label_wait: int) -> None:
    """The guess-factor form fires head-on at a sitting duck: each shot's label (where the enemy was when the wave
    passed) is an aim of 0, known a few decisions after the shot. With `label_wait` the labels ride with their steps'
    batches; without it none are sent and none are counted dropped (labels_late stays 0): nobody asked for them."""
    procs = Procs(tmp_path)
    cfg = ActorConfig(ingest=f"tcp://127.0.0.1:{inbox.port}", weights=f"tcp://127.0.0.1:{free_port()}",
                      actor_id="tank", flow="realtime", flush_steps=2, flush_ms=60_000, close_linger_s=5,
                      label_wait=label_wait)
    client = BotClient.connect(cfg, "saclstm-tank", *spec())
    client.act = lambda obs: np.array([0.0, 0.0, 0.0, 2.0], np.float32)  # type: ignore[method-assign]  # head-on, 2
    tank = SaclstmTank(client, server_url=server.url, controls=TankControls(aim="gf", radar="lock", repeat=4))
    threading.Thread(target=tank.start, daemon=True).start()
    try:
        procs.start("opponent", "actor.bots.tankroyale.opponents", "SittingDuck", "--server", server.url)
        with Controller(server.url) as ctl:
            ctl.play(SETUP, ["saclstm-tank", "SittingDuck"], timeout=120)
        got = inbox.drain(EpisodeEnd, SETUP.number_of_rounds)
    finally:
        client.close()
        procs.close()
    targets = [m.target for m in got if isinstance(m, Experience) and m.target is not None]
    assert client.labels_late == 0
    if not label_wait:
        assert targets == []
        return
    assert targets, "no step carried a label"
    aims = np.concatenate(targets)[:, 2]
    aims = aims[~np.isnan(aims)]
    assert len(aims) >= 5, "a shot's label for each of the duck's deaths' shots"
    np.testing.assert_allclose(aims, 0.0, atol=0.5)  # head-on hits a duck: the aim that would have hit is 0
    assert np.isnan(np.concatenate(targets)[:, [0, 1, 3]]).all()  # only the aim is labelled
