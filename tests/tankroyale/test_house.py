"""House bots: scripted opponents our game server plays itself (actor/bots/tankroyale/house.py).

The twin test runs real processes on the official bot API against a real server; the others need only the
server on its thread and our controller on a real WebSocket.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from actor.bots.tankroyale.controller import Controller
from actor.bots.tankroyale.engine import Setup
from actor.bots.tankroyale.house import HOST
from actor.bots.tankroyale.server import run_server
from tests.procs import ROOT

# A turn timeout no loaded machine reaches: no turn is skipped, so the bot processes' games are deterministic.
SETUP = Setup(number_of_rounds=3, turn_timeout_us=1_500_000, ready_timeout_us=20_000_000)


def observed(ctl: Controller, names: list[str], setup: Setup = SETUP) -> tuple[list[tuple], list[tuple]]:
    """Every observer tick of one game (each bot's place, heading, gun, energy) and each round's scores."""
    ticks: list[tuple] = []
    rounds: list[tuple] = []
    ctl.play(setup, names, timeout=180,
             on_tick=lambda m: ticks.append((m["roundNumber"], m["turnNumber"], tuple(
                 (b["id"], b["x"], b["y"], b["direction"], b["gunDirection"], b["energy"]) for b in m["botStates"]))),
             on_round=lambda m: rounds.append(tuple((r["id"], r["totalScore"]) for r in m["results"])))
    return ticks, rounds


@pytest.mark.parametrize("names", [["Orbiter", "Dodger"], ["RandomBot", "Reverser"]])
def test_house_bots_play_the_same_rounds_as_their_bot_process_twins(procs, names: list[str]) -> None:  # noqa: ANN001
    """The same seed, three rounds of opponents that use chance: every tick and each round's score gains are
    equal whether the server plays them itself or they play as processes on the official bot API.

    A bot process's timing can still part a round from its twin (before the server waited on a round's last
    turn, 3 of 6 games had a round whose first turn took a survivor's answer to the last round's last tick).
    A round's start does not depend on how the last one was played (the engine draws the same start places),
    so each round is judged alone: a bot-process game is played up to four times, and each round must equal
    the house's in at least one of them. A house bot that plays differently differs in every attempt and
    fails."""
    pytest.importorskip("robocode_tank_royale")
    with run_server(port=0, seed=5, setup=SETUP, house=names, house_seed=11) as server:
        with Controller(server.url) as ctl:
            in_house = by_round(observed(ctl, names))
        assert server.stats["connections"] == 1  # the controller alone: no bot connected
    assert len(in_house) == 3 and all(len(ticks) > 30 for ticks, _ in in_house.values())
    equal: list[list[bool]] = []
    for attempt in range(4):
        with run_server(port=0, seed=5, setup=SETUP) as server:
            for name in names:
                procs.start(f"{name}{attempt}", "actor.bots.tankroyale.opponents", name, "--server", server.url,
                            "--seed", "11")
            with Controller(server.url) as ctl:
                game = by_round(observed(ctl, names))
            assert server.stats["skipped_turns"] == 0
        procs.close()
        equal.append([game.get(r) == in_house[r] for r in (1, 2, 3)])
        if all(any(e[i] for e in equal) for i in range(3)):
            return
    pytest.fail(f"a round no bot-process game plays as the house does; rounds equal per game: {equal}")


def by_round(game: tuple[list[tuple], list[tuple]]) -> dict[int, tuple[list[tuple], tuple]]:
    """Each round's ticks and its score gains (the results are running totals)."""
    ticks, totals = game
    gains: list[tuple] = []
    before: dict[int, float] = {}
    for results in totals:
        gains.append(tuple((i, round(score - before.get(i, 0.0), 9)) for i, score in results))
        before = dict(results)
    return {r: ([t for t in ticks if t[0] == r], gains[r - 1]) for r in range(1, len(gains) + 1)}


def test_house_bots_join_the_bot_list_and_a_game_needs_no_connection() -> None:
    with run_server(port=0, seed=1, setup=Setup(number_of_rounds=1), house=["SpinBot", "SittingDuck"]) as server:
        with Controller(server.url) as ctl:
            bots = ctl.wait_for_bots(["SpinBot", "SittingDuck"], timeout=5)
            assert [(b["host"], b["port"]) for b in bots] == [(HOST, 1), (HOST, 2)]
            game = ctl.play(Setup(number_of_rounds=1), ["SpinBot", "SittingDuck"], timeout=60)
        stats = server.stats
    assert [r["name"] for r in game.results][0] == "SpinBot"  # it fires at what it scans; the duck never does
    assert stats["games_ended"] == 1 and stats["skipped_turns"] == 0 and stats["intents"] >= 2 * stats["turns"] - 10


def test_a_house_bot_beside_a_connected_one_with_another_seed_plays_other_rounds() -> None:
    """The seed is the only chance: another house seed, another game (the twin test's equality is no accident)."""
    def game(seed: int) -> list[tuple]:
        with run_server(port=0, seed=2, setup=SETUP, house=["RandomBot", "SittingDuck"], house_seed=seed) as server:
            with Controller(server.url) as ctl:
                return observed(ctl, ["RandomBot", "SittingDuck"])[0]
    assert game(1) == game(1)
    assert game(1) != game(2)


def test_the_server_refuses_an_unknown_house_bot_in_one_line() -> None:
    out = subprocess.run([sys.executable, "-m", "actor.bots.tankroyale.server", "--port", "0", "--house", "Nobody"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "unknown opponents ['Nobody']" in out.stderr
    with pytest.raises(ValueError, match="unknown opponent 'Nobody'"):
        run_server(port=0, house=["Nobody"])


def test_tank_eval_plays_the_same_rounds_with_the_scripted_bots_in_the_server_as_in_processes(tmp_path) -> None:  # noqa: ANN001
    """tank-eval's default (the opponent, HeadOnBot and RandomBot played by the server) against --opponent-processes:
    every side's rounds, scores and fights equal (up to three process runs, for the bot API's race above), and no
    scripted bot process started."""
    pytest.importorskip("robocode_tank_royale")
    from deploy.tank.evaluate import evaluate

    def played(results: dict) -> dict:
        return {side: {k: v for k, v in r.items() if k != "time"} for side, r in results.items()}

    slow = 1500.0  # no bot is ever late: a loaded machine's skipped turns are not what this test is about
    house = played(evaluate(None, "Dodger", 2, seed=4, log_dir=tmp_path / "house", config="deploy/tank.toml",
                            turn_timeout_ms=slow))
    assert sorted(p.name for p in (tmp_path / "house").glob("*.log")) == ["constant-action.log"]
    assert [r["rounds"] for r in house.values()] == [2, 2, 2]
    runs = []
    for attempt in range(3):
        logs = tmp_path / f"processes{attempt}"
        runs.append(played(evaluate(None, "Dodger", 2, seed=4, log_dir=logs, config="deploy/tank.toml",
                                    opponent_processes=True, turn_timeout_ms=slow)))
        assert sorted(p.name for p in logs.glob("*.log")) == [
            "HeadOnBot-vs-Dodger.log", "HeadOnBot.log", "RandomBot-vs-Dodger.log", "RandomBot.log",
            "constant-action-vs-Dodger.log", "constant-action.log"]
        if runs[-1] == house:
            return
    pytest.fail(f"no run with bot processes played the house's rounds: {house} vs {runs}")


def test_a_game_ends_when_its_last_connected_bot_leaves_whatever_house_bots_are_left(procs) -> None:  # noqa: ANN001
    """Our side's process killed mid-round against a house bot: the game is aborted (a crashed tank's rounds are not
    played out as losses), and the server plays the next game with the same house bot."""
    from actor.bots.tankroyale.controller import GameAborted
    from tests.tankroyale.test_server import start_bot

    setup = Setup(number_of_rounds=3)
    with run_server(port=0, seed=1, setup=setup, house=["SpinBot"]) as server:
        victim = start_bot(procs, server.url, "walk", "Victim", "")

        def kill_at_turn_10(msg: dict) -> None:
            if msg["turnNumber"] == 10 and victim.poll() is None:
                os.killpg(victim.pid, signal.SIGKILL)
        with Controller(server.url) as ctl:
            with pytest.raises(GameAborted):
                ctl.play(setup, ["Victim", "SpinBot"], on_tick=kill_at_turn_10, timeout=60)
            stats = server.stats
            assert stats["games_aborted"] == 1 and stats["bots_left_in_game"] == 1 and stats["rounds"] == 0
            start_bot(procs, server.url, "walk", "Next", "")
            game = ctl.play(Setup(number_of_rounds=1), ["Next", "SpinBot"], timeout=60)
    assert [r["roundNumber"] for r in game.rounds] == [1]
