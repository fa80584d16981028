"""Our Tank Royale server with bots on the official Python bot API, driven by our controller.

Everything real: the server on a thread of this process on a free 127.0.0.1 port, each bot its own
process (tests/tankroyale/bots.py, killed when the test ends, pass or fail), the rules engine.py's.
Waits poll a condition with a deadline.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from typing import Any

import pytest

pytest.importorskip("robocode_tank_royale")

from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from actor.bots.tankroyale.controller import Controller, ControllerError, GameAborted  # noqa: E402
from actor.bots.tankroyale.engine import Setup  # noqa: E402
from actor.bots.tankroyale.rules import direction_to, normalize_relative_degrees  # noqa: E402
from actor.bots.tankroyale.server import ServerHandle, run_server  # noqa: E402
from tests.procs import ROOT, Procs, free_port  # noqa: E402

BOT_SECRET, CTL_SECRET = "bots-only", "controllers-only"
# Short rounds: a small arena, fast guns, little patience for inactivity.
SHORT = Setup(arena_width=400, arena_height=400, number_of_rounds=3, gun_cooling_rate=0.5, max_inactivity_turns=60,
              turn_timeout_us=200_000, ready_timeout_us=5_000_000)


def wait_for(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def server(caplog: pytest.LogCaptureFixture) -> Iterator[ServerHandle]:
    caplog.set_level(logging.INFO, logger="saclstm.tankroyale.server")
    handle = run_server(port=0, bot_secrets=BOT_SECRET, controller_secrets=CTL_SECRET, seed=11)
    try:
        yield handle
    finally:
        handle.close()


def start_bot(procs: Procs, url: str, kind: str, name: str, secret: str = BOT_SECRET, *extra: str
              ) -> subprocess.Popen:
    return procs.start(name, "tests.tankroyale.bots", kind, "--name", name, "--url", url, "--secret", secret,
                       "--log", str(procs.tmp / f"{name}.jsonl"), *extra)


def bot_events(procs: Procs, name: str, event: str | None = None) -> list[dict[str, Any]]:
    path = procs.tmp / f"{name}.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    events = [json.loads(line) for line in lines if line.endswith("}")]
    return [e for e in events if event is None or e["event"] == event]


def has_events(procs: Procs, name: str, event: str, count: int = 1) -> bool:
    return len(bot_events(procs, name, event)) >= count


def handshake(url: str, kind: str, **fields: Any) -> dict[str, Any]:
    """A raw client's handshake; the server's first answer (ConnectionClosed if it refuses)."""
    with connect(url) as raw:
        hello = json.loads(raw.recv(5))
        raw.send(json.dumps({"type": kind, "sessionId": hello["sessionId"], "name": "raw", "version": "1",
                             "authors": ["x"], **fields}))
        return json.loads(raw.recv(5))


def no_errors(procs: Procs, caplog: pytest.LogCaptureFixture, server: ServerHandle) -> None:
    assert server.stats["errors"] == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "server logged errors"
    for name, _ in procs.procs:
        log = procs.log(name)
        assert "Traceback" not in log and "Error" not in log, f"{name}: {log[-2000:]}"


def test_official_bots_play_a_full_game_and_a_wrong_secret_is_refused(
        server: ServerHandle, procs: Procs, caplog: pytest.LogCaptureFixture) -> None:
    names = ["Spinner", "Walker", "Twirl"]
    for kind, name in zip(("spin", "walk", "spin"), names):
        start_bot(procs, server.url, kind, name)
    intruder = start_bot(procs, server.url, "spin", "Intruder", "wrong secret")
    with pytest.raises(ControllerError, match="1008"):
        Controller(server.url, "wrong secret")
    assert handshake(server.url, "ObserverHandshake", secret=CTL_SECRET)["type"] == "BotListUpdate"
    with pytest.raises(ConnectionClosed, match="1008"):
        handshake(server.url, "ObserverHandshake", secret="")
    with Controller(server.url, CTL_SECRET) as ctl:
        ctl.wait_for_bots(names, timeout=30)
        game = ctl.play(SHORT, names, timeout=60)
        assert intruder.wait(timeout=10) is not None  # the bot API gives up once refused
        assert "Intruder" not in {b["name"] for b in ctl.bots}
        again = ctl.play(replace(SHORT, number_of_rounds=1), names[:2], timeout=60)  # the same bots play on
        assert len(again.rounds) == 1 and sorted(e["name"] for e in again.results) == sorted(names[:2])
    stats = server.stats
    assert stats["refused_secret"] == 3 and stats["games_ended"] == 2 and stats["rounds"] == 3 + 1
    assert stats["malformed"] == stats["unexpected"] == 0

    # Every round ended, each with every bot's result (the game's so far, as the official server sends them):
    # scores only grow, one more round's places each time, and the last round's results are the game's.
    assert [r["roundNumber"] for r in game.rounds] == [1, 2, 3]
    assert all(sorted(e["id"] for e in r["results"]) == [1, 2, 3] for r in game.rounds)
    for bot_id in (1, 2, 3):
        totals = [next(e["totalScore"] for e in r["results"] if e["id"] == bot_id) for r in game.rounds]
        assert totals == sorted(totals), totals
    for k, r in enumerate(game.rounds, 1):  # at most one place a round (none in a round nobody scored in)
        assert all(e["firstPlaces"] + e["secondPlaces"] + e["thirdPlaces"] <= k for e in r["results"]), r
    assert game.rounds[-1]["results"] == game.results
    assert {e["id"]: e["name"] for e in game.results} == {1: "Spinner", 2: "Walker", 3: "Twirl"}
    ranked = sorted(game.results, key=lambda e: e["rank"])
    assert [e["rank"] for e in ranked][0] == 1
    assert [e["totalScore"] for e in ranked] == sorted((e["totalScore"] for e in ranked), reverse=True)

    # Each official bot saw the whole game and its own result.
    by_name = {e["name"]: e for e in game.results}
    for name in names:
        games = 2 if name in names[:2] else 1
        wait_for(partial(has_events, procs, name, "game_ended", games), 10, f"{name}'s game ends")
        ended = bot_events(procs, name, "game_ended")
        # (its rank is its place in the official server's unsorted list, so only the score must agree)
        assert ended[0]["rounds"] == 3 and ended[0]["total"] == by_name[name]["totalScore"]
        assert [e["round"] for e in bot_events(procs, name, "round_ended")] == [1, 2, 3, 1][:2 + games]
        assert bot_events(procs, name, "game_started")[0]["my_id"] == by_name[name]["id"]
    no_errors(procs, caplog, server)


def ticks_of_one_game(procs: Procs, seed: int, tag: str) -> list[tuple]:
    """Every observer tick of a 2-round game of two deterministic bots on a fresh server."""
    ticks: list[tuple] = []

    def record(msg: dict[str, Any]) -> None:
        bots = sorted((b["id"], b["x"], b["y"], b["energy"], b["direction"], b["gunDirection"], b["speed"])
                      for b in msg["botStates"])
        bullets = sorted((b["ownerId"], b["x"], b["y"], b["power"]) for b in msg["bulletStates"])
        ticks.append((msg["roundNumber"], msg["turnNumber"], bots, bullets))
    with run_server(port=0, seed=seed) as handle:
        names = [f"Spin{tag}", f"Walk{tag}"]
        start_bot(procs, handle.url, "spin", names[0], "")
        start_bot(procs, handle.url, "walk", names[1], "")
        with Controller(handle.url) as ctl:
            # A turn timeout no turn reaches, so every intent counts: no skipped turn, one battle.
            ctl.play(Setup(arena_width=400, arena_height=400, number_of_rounds=2, gun_cooling_rate=0.5,
                           max_inactivity_turns=60, turn_timeout_us=5_000_000, ready_timeout_us=5_000_000),
                     names, on_tick=record, timeout=60)
        assert handle.stats["skipped_turns"] == 0
    return ticks


def test_the_same_seed_gives_the_same_battle(procs: Procs) -> None:
    first = ticks_of_one_game(procs, 5, "A")
    second = ticks_of_one_game(procs, 5, "B")
    assert len(first) > 20 and {t[0] for t in first} == {1, 2}
    # Round 1 whole. From round 2 on, the bot API restarts each bot's thread at round start, and when a bot's
    # first go() lands is up to that thread (one CI run saw a bot fire a turn later there): not the server's.
    assert [t for t in first if t[0] == 1] == [t for t in second if t[0] == 1]


def test_garbage_is_refused_and_counted_and_the_battle_goes_on(
        server: ServerHandle, procs: Procs, caplog: pytest.LogCaptureFixture) -> None:
    names = ["GarbageSpin", "GarbageWalk"]
    start_bot(procs, server.url, "spin", names[0])
    start_bot(procs, server.url, "walk", names[1])
    codes: list[int | None] = []

    def throw_garbage(msg: dict[str, Any]) -> None:
        if msg["roundNumber"] != 1 or msg["turnNumber"] != 5:
            return
        for frame in ("not json", b"\x00\xff binary", "[1, 2]", '{"type": 7}', '{"type": "Nope"}',
                      '{"type": "BotIntent", "targetSpeed": 8}', " " * (2 << 20)):
            with connect(server.url) as raw:
                raw.recv(5)  # the server's handshake
                raw.send(frame)
                try:
                    raw.recv(5)
                except ConnectionClosed as e:
                    codes.append(e.rcvd.code if e.rcvd else None)
        with connect(server.url) as raw:  # a bot that joined properly, then talks nonsense: dropped, kept
            hello = json.loads(raw.recv(5))
            raw.send(json.dumps({"type": "BotHandshake", "sessionId": hello["sessionId"], "name": "Chatter",
                                 "version": "1", "authors": ["x"], "secret": BOT_SECRET}))
            for frame in ("{{{", '{"type": "BotIntent", "targetSpeed": "fast"}', '{"type": "StartGame"}'):
                raw.send(frame)
            assert raw.ping().wait(5)  # still connected after all that
    with Controller(server.url, CTL_SECRET) as ctl:
        addresses = [{"host": b["host"], "port": b["port"]} for b in ctl.wait_for_bots(names, 30)]
        for bad in ({"gameSetup": {"arenaWidth": "wide"}, "botAddresses": addresses},
                    {"gameSetup": {"arenaWidth": 100}, "botAddresses": addresses},  # too small for the rules
                    {"botAddresses": "everyone"}):
            ctl.send({"type": "StartGame", **bad})
        game = ctl.play(SHORT, names, on_tick=throw_garbage, timeout=60)
    assert codes == [1008] * 6 + [1009]  # policy violation; message too big
    assert len(game.rounds) == 3 and len(game.results) == 2
    stats = server.stats
    assert stats["malformed"] == 5 + 1 + 2 + 3 and stats["refused_no_handshake"] == 1 and stats["unexpected"] == 1
    assert stats["games_started"] == stats["games_ended"] == 1
    for name in names:
        wait_for(partial(has_events, procs, name, "game_ended"), 10, f"{name}'s game end")
    no_errors(procs, caplog, server)


def test_a_bot_that_never_says_ready_is_left_out_at_the_ready_timeout(server: ServerHandle, procs: Procs) -> None:
    names = ["ReadySpin", "ReadyWalk"]
    start_bot(procs, server.url, "spin", names[0])
    start_bot(procs, server.url, "walk", names[1])
    with connect(server.url) as mute, Controller(server.url, CTL_SECRET) as ctl:
        hello = json.loads(mute.recv(5))
        mute.send(json.dumps({"type": "BotHandshake", "sessionId": hello["sessionId"], "name": "Mute",
                              "version": "1", "authors": ["x"], "secret": BOT_SECRET}))
        setup = Setup(arena_width=400, arena_height=400, number_of_rounds=1, gun_cooling_rate=0.5,
                      max_inactivity_turns=60, ready_timeout_us=1_000_000)
        game = ctl.play(setup, [*names, "Mute"], timeout=60)
        assert json.loads(mute.recv(5))["type"] == "GameStartedEventForBot"  # it was asked, and never answered
    assert sorted(p["name"] for p in game.participants) == sorted(names)
    assert sorted(e["name"] for e in game.results) == sorted(names)


def test_a_bot_killed_mid_round_leaves_the_others_to_finish(
        server: ServerHandle, procs: Procs, caplog: pytest.LogCaptureFixture) -> None:
    names = ["Victim", "KeepSpin", "KeepWalk"]
    victim = start_bot(procs, server.url, "spin", names[0])
    start_bot(procs, server.url, "spin", names[1])
    start_bot(procs, server.url, "walk", names[2])

    def kill_at_turn_10(msg: dict[str, Any]) -> None:
        if msg["roundNumber"] == 1 and msg["turnNumber"] == 10:
            os.killpg(victim.pid, signal.SIGKILL)
    with Controller(server.url, CTL_SECRET) as ctl:
        game = ctl.play(SHORT, names, on_tick=kill_at_turn_10, timeout=60)
    assert victim.wait(5) == -signal.SIGKILL
    assert [r["roundNumber"] for r in game.rounds] == [1, 2, 3]
    assert sorted(e["name"] for e in game.results) == sorted(names)  # the one that left keeps its score
    stats = server.stats
    assert stats["bots_left_in_game"] == 1 and stats["games_ended"] == 1
    for name in names[1:]:
        wait_for(partial(has_events, procs, name, "game_ended"), 10, f"{name}'s game end")
    no_errors(procs, caplog, server)


def test_tps_minus_one_runs_as_fast_as_the_bots_a_fixed_tps_is_kept_and_pause_holds(
        server: ServerHandle, procs: Procs) -> None:
    names = ["FastSpin", "FastWalk"]
    start_bot(procs, server.url, "spin", names[0])
    start_bot(procs, server.url, "walk", names[1])
    stamps: list[float] = []
    paused: list[int] = []

    with Controller(server.url, CTL_SECRET) as ctl:
        def clock(msg: dict[str, Any]) -> None:
            stamps.append(time.monotonic())
            if len(stamps) == 60:
                ctl.change_tps(20)
            elif len(stamps) == 60 + 5 + 30:
                ctl.pause()
                time.sleep(0.1)  # at most the turn in flight is played after the pause arrives
                paused.append(server.stats["turns"])
                time.sleep(0.4)
                paused.append(server.stats["turns"])
                ctl.resume()
            elif len(stamps) == 60 + 5 + 30 + 5:
                ctl.stop_game()
        with pytest.raises(GameAborted):
            ctl.play(Setup(number_of_rounds=50, turn_timeout_us=30_000, ready_timeout_us=5_000_000), names,
                     on_tick=clock, timeout=60)
    fast = 49 / (stamps[59] - stamps[10])
    fixed = 29 / (stamps[94] - stamps[65])
    print(f"turns per second: {fast:.0f} at TPS -1, {fixed:.1f} at TPS 20")
    assert 16 <= fixed <= 22, fixed
    assert fast > 3 * fixed, (fast, fixed)
    assert paused[0] == paused[1] and len(stamps) == 100  # paused: no turn; resumed: the game went on


def test_a_bot_that_answers_late_gets_skipped_turn_events(server: ServerHandle, procs: Procs) -> None:
    names = ["Sleepy", "Awake"]
    start_bot(procs, server.url, "sleepy", names[0], BOT_SECRET, "--late-s", "0.15")
    start_bot(procs, server.url, "spin", names[1])
    with Controller(server.url, CTL_SECRET) as ctl:
        def until_skipped(msg: dict[str, Any]) -> None:
            if msg["turnNumber"] % 5 == 0 and bot_events(procs, "Sleepy", "skipped_turn"):
                ctl.stop_game()
        with pytest.raises(GameAborted):
            ctl.play(Setup(number_of_rounds=20, turn_timeout_us=40_000, ready_timeout_us=5_000_000), names,
                     on_tick=until_skipped, timeout=20)
    skipped = bot_events(procs, "Sleepy", "skipped_turn")
    assert any(e["turn"] % 7 in (3, 4, 5, 6) for e in skipped), skipped[:5]  # the turns it slept through
    assert server.stats["skipped_turns"] >= len(skipped)


def test_command_lines_of_server_and_controller(procs: Procs) -> None:
    port = free_port()
    srv = procs.start("server", "actor.bots.tankroyale.server", "--port", str(port), "--bot-secret", "b",
                      "--controller-secret", "c", "--seed", "3")
    url = f"ws://127.0.0.1:{port}"
    wait_for(lambda: "listening on" in procs.log("server"), 20, "the server to listen")
    start_bot(procs, url, "spin", "CliSpin", "b")
    start_bot(procs, url, "walk", "CliWalk", "b")
    out = subprocess.run([sys.executable, "-m", "actor.bots.tankroyale.controller", "--url", url, "--secret", "c",
                          "--bots", "CliSpin,CliWalk", "--rounds", "1", "--arena", "400x400", "--timeout", "60"],
                         capture_output=True, text=True, cwd=ROOT, timeout=90)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines[0]["round"] == 1 and lines[-1]["numberOfRounds"] == 1
    assert sorted(e["name"] for e in lines[-1]["results"]) == ["CliSpin", "CliWalk"]
    assert procs.stop(srv) == 0
    stats = json.loads(procs.log("server").strip().splitlines()[-1])["stats"]
    assert stats["games_ended"] == 1 and stats["errors"] == 0


def marker_bot(url: str, errors: list[BaseException]) -> None:
    """A raw bot that shoots a sitting duck and turns its body +10 a turn in round 1, -10 in round 2. Its answer
    to a round's last tick (the duck's death in it) goes out only after it has read the round's end, and its
    answer to round 2's first tick 0.3 s late: as a bot on the official API does now and then, by chance."""
    try:
        with connect(url) as ws:
            hello = json.loads(ws.recv(10))
            ws.send(json.dumps({"type": "BotHandshake", "sessionId": hello["sessionId"], "name": "Marker",
                                "version": "1", "authors": ["x"]}))
            duck, held = None, None
            while True:
                msg = json.loads(ws.recv(30))
                kind = msg["type"]
                if kind == "GameStartedEventForBot":
                    ws.send(json.dumps({"type": "BotReady"}))
                elif kind == "RoundEndedEventForBot" and held is not None:
                    ws.send(held)
                    held = None
                elif kind == "GameEndedEventForBot":
                    return
                elif kind == "TickEventForBot":
                    me, events = msg["botState"], msg["events"]
                    duck = next(((e["x"], e["y"]) for e in events if e["type"] == "ScannedBotEvent"), duck)
                    intent = json.dumps(marker_intent(msg["roundNumber"], me, duck))
                    if any(e["type"] == "BotDeathEvent" for e in events):
                        held = intent
                        continue
                    if (msg["roundNumber"], msg["turnNumber"]) == (2, 1):
                        time.sleep(0.3)
                    ws.send(intent)
    except BaseException as e:  # noqa: BLE001 - the test reports it
        errors.append(e)


def marker_intent(round_number: int, me: dict[str, Any], duck: tuple[float, float] | None) -> dict[str, Any]:
    intent: dict[str, Any] = {"type": "BotIntent", "turnRate": 10.0 if round_number == 1 else -10.0,
                              "targetSpeed": 0.0, "radarTurnRate": 45.0, "adjustGunForBodyTurn": True,
                              "adjustRadarForBodyTurn": True, "adjustRadarForGunTurn": True}
    if duck is not None:
        off = normalize_relative_degrees(direction_to(me["x"], me["y"], *duck) - me["gunDirection"])
        intent["gunTurnRate"] = max(-20.0, min(20.0, off))
        if abs(off) < 2.0 and me["gunHeat"] == 0:
            intent["firepower"] = 3.0
    return intent


def test_an_answer_to_a_rounds_last_tick_is_not_the_next_rounds_first_intent() -> None:
    """A survivor's answer to a round's last tick, sent after it read the round's end, belongs to that turn:
    the server waits for it there (as the official server does) and the next round's first turn plays the
    answer to its own tick. Before, a round's last turn did not wait: at TPS -1 that late answer was taken as
    the next round's first intent, and the bot's orders ran a turn late."""
    setup = Setup(arena_width=400, arena_height=400, number_of_rounds=2, gun_cooling_rate=0.5,
                  turn_timeout_us=5_000_000, ready_timeout_us=5_000_000)
    errors: list[BaseException] = []
    headings: dict[tuple[int, int], float] = {}

    def note(msg: dict[str, Any]) -> None:
        for b in msg["botStates"]:
            if b["name"] == "Marker":
                headings[(msg["roundNumber"], msg["turnNumber"])] = b["direction"]

    with run_server(port=0, seed=3, house=["SittingDuck"]) as server:
        bot = threading.Thread(target=marker_bot, args=(server.url, errors), daemon=True)
        bot.start()
        with Controller(server.url) as ctl:
            game = ctl.play(setup, ["SittingDuck", "Marker"], on_tick=note, timeout=60)
        bot.join(10)
    assert not errors, errors
    assert len(game.rounds) == 2
    assert [r["results"][0]["name"] for r in game.rounds] == ["Marker", "Marker"]  # the duck died in both
    turned = normalize_relative_degrees(headings[(2, 2)] - headings[(2, 1)])
    assert turned == pytest.approx(-10.0), "round 2's first turn played round 1's last orders"
