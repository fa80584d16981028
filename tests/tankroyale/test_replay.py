"""Replay pages (replay.py): every turn of the round, positions and energies as the engine had them (to the
precision stored), the same page from observer ticks as from engine turns, small, and self-contained."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from actor.bots.tankroyale.engine import Engine, Intent, Participant, Setup, Turn
from actor.bots.tankroyale.env import TankRoyaleEnv
from actor.bots.tankroyale.fight import Frame
from actor.bots.tankroyale.opponents import act_on_turn, make
from actor.bots.tankroyale.protocol_tr import tick_for_observer
from actor.bots.tankroyale.replay import POS_DIGITS, RecordEpisodes, Recorder

SETUP = Setup(arena_width=400, arena_height=400, number_of_rounds=1)
NAMES = {1: "HeadOnBot", 2: "SittingDuck"}


def head_on_round(seed: int = 3) -> list[Turn]:
    """Every turn of one engine round of HeadOnBot (1) against SittingDuck (2), the first included."""
    engine = Engine(SETUP, [Participant(1, NAMES[1]), Participant(2, NAMES[2])], seed=seed)
    policies = {1: make(NAMES[1]), 2: make(NAMES[2])}
    for i, p in policies.items():
        p.reset(np.random.default_rng(i))
    turns = [engine.new_round()]
    while not turns[-1].round_ended:
        t = turns[-1]
        turns.append(engine.step({b: act_on_turn(p, b, t, (400, 400)) for b, p in policies.items() if b in t.bot_states}))
    return turns


def page_data(html: str) -> dict[str, Any]:
    """The JSON a page plays, read back from the page itself."""
    found = re.search(r'<script id="data" type="application/json">(.*?)</script>', html, re.S)
    assert found is not None
    return json.loads(found.group(1))


def test_a_replay_holds_every_turn_with_the_engines_positions_and_energies() -> None:
    turns = head_on_round()
    rec = Recorder((400, 400), NAMES, "head on")
    for t in turns:
        rec.add(Frame.from_turn(t))
    data = page_data(rec.page())
    assert len(data["turns"]) == len(turns) and [row[0] for row in data["turns"]] == [t.turn_number for t in turns]
    tol = 0.5 * 10 ** -POS_DIGITS + 1e-9
    for t, (_, bots, bullets, _) in zip(turns, data["turns"]):
        assert [b[0] for b in bots] == sorted(t.bot_states)
        for bot_id, x, y, energy, *_ in bots:
            s = t.bot_states[bot_id]
            assert abs(x - s["x"]) <= tol and abs(y - s["y"]) <= tol and abs(energy - s["energy"]) <= tol
        assert len(bullets) == len(t.bullets)
    flashes = [f[0] for row in data["turns"] for f in row[3]]
    assert 1 in flashes and 5 in flashes  # hits and the duck's death flash
    assert data["fight"]["1"]["ending"] == "destroyed" and data["names"] == {"1": "HeadOnBot", "2": "SittingDuck"}


def test_a_replay_from_observer_ticks_is_the_replay_from_engine_turns() -> None:
    """The server sends the engine's turn as a TickEventForObserver; the recorder makes the same page of it."""
    turns = head_on_round(seed=4)
    handshakes = {b: {"sessionId": f"s{b}", "name": n, "version": "1"} for b, n in NAMES.items()}
    from_ticks, from_turns = Recorder((400, 400), title="r"), Recorder((400, 400), NAMES, title="r")
    for t in turns:
        from_ticks.add(Frame.from_tick(json.loads(json.dumps(tick_for_observer(t, handshakes)))))
        from_turns.add(Frame.from_turn(t))
    assert from_ticks.page() == from_turns.page()  # names read from the ticks' bot states


def test_a_round_of_1000_turns_is_well_under_a_megabyte() -> None:
    """Both tanks circle and fire small shots all round: bullets in flight on most turns. Under a quarter of
    a megabyte, so compacting (rounded numbers, arrays) is what keeps it there."""
    setup = Setup(arena_width=800, arena_height=600, number_of_rounds=1)
    engine = Engine(setup, [Participant(1, "a"), Participant(2, "b")], seed=1)
    rec = Recorder((800, 600))
    turn = engine.new_round()
    rec.add(Frame.from_turn(turn))
    orders = {b: Intent(target_speed=6.0, turn_rate=4.0 * (-1) ** b, gun_turn_rate=7.0, radar_turn_rate=45.0,
                        firepower=0.1) for b in (1, 2)}
    while turn.turn_number < 1000:
        turn = engine.step(orders)
        rec.add(Frame.from_turn(turn))
        assert not turn.round_ended
    page = rec.page().encode()
    in_flight = sum(len(row[2]) for row in rec.turns) / len(rec.turns)
    assert len(rec.turns) == 1000 and in_flight > 2
    # About 130 kB; the same turns with unrounded numbers make about 380 kB, as dicts more still.
    assert len(page) < 250_000, len(page)


def test_the_page_needs_no_network() -> None:
    rec = Recorder((400, 400), {1: "a</script><script>alert(1)</script>"}, title="<b>t</b>")
    for t in head_on_round()[:5]:
        rec.add(Frame.from_turn(t))
    html = rec.page()
    assert not re.search(r"(src|href)\s*=|https?://|@import|fetch\(|XMLHttpRequest", html)
    assert html.count("</script>") == 2  # a name cannot end the data early
    assert page_data(html)["names"]["1"].startswith("a</script>")
    for needed in ("<canvas", 'id="play"', 'id="back"', 'id="fwd"', 'id="speed"', 'id="seek"'):
        assert needed in html


@pytest.mark.parametrize("repeat", [1, 3])
def test_tankroyale_v0_episodes_are_recorded_turn_by_turn(repeat: int, tmp_path: Path) -> None:
    env = RecordEpisodes(TankRoyaleEnv(opponent="HeadOnBot", max_turns=400, repeat=repeat))
    env.reset(seed=5)
    energies = {}
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(np.array([0.0, 0.0, 0.0, 3.0], np.float32))
        energies[info["turn"]] = round(info["energy"], POS_DIGITS)
        done = terminated or truncated
    assert env.recorder is not None
    rows = page_data(env.save(tmp_path / "episode.html").read_text())["turns"]
    assert [r[0] for r in rows] == list(range(1, info["turn"] + 1))  # every engine turn, not every decision
    for row in rows:
        if row[0] in energies:
            assert row[1][0][3] == pytest.approx(energies[row[0]], abs=1e-9)
    env.reset(seed=6)  # a new episode, a new recording
    assert len(env.recorder.turns) == 1


def test_tank_eval_reports_the_fight_and_writes_a_replay_of_every_round(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A real evaluation (our server, the tank on a checkpoint, the opponent on the official bot API): the
    report and --out carry the fight, and --replay holds a page per round with every turn the server played."""
    pytest.importorskip("robocode_tank_royale")
    from deploy.tank.evaluate import main
    from tests.tankroyale.test_eval_honesty import checkpoint

    good, out, pages = checkpoint(tmp_path / "good.sacl"), tmp_path / "eval.json", tmp_path / "replays"
    assert main(["--checkpoint", str(good), "--opponent", "HeadOnBot", "--rounds", "2", "--no-baselines",
                 "--out", str(out), "--replay", str(pages)]) == 0
    printed = capsys.readouterr().out
    assert "hit rate" in printed and "damage per round" in printed and "replays: 2 pages" in printed, printed
    ours = json.loads(out.read_text())["results"]["saclstm-tank"]
    for key in ("win_rate", "ci95", "hit_rate", "mean_dealt", "mean_taken", "destroyed_rate", "outlasted_rate",
                "win_rate_destroyed"):
        assert key in ours, key
    assert ours["fought"] == 2 and ours["mean_taken"] > 0  # HeadOnBot hits a tank that plays an untrained policy
    rounds = [page_data((pages / f"round-00{n}.html").read_text()) for n in (1, 2)]
    assert sorted(p.name for p in pages.iterdir()) == ["round-001.html", "round-002.html"]
    for data in rounds:
        numbers = [row[0] for row in data["turns"]]
        assert numbers == list(range(1, len(numbers) + 1))  # every turn of the round, from the observer's ticks
        assert data["names"]["1"] == "saclstm-tank" and data["names"]["2"] == "HeadOnBot"
    assert sum(len(d["turns"]) for d in rounds) == pytest.approx(2 * ours["mean_turns"])
    taken = sum(d["fight"]["1"]["taken"] for d in rounds) / 2
    assert taken == pytest.approx(ours["mean_taken"], abs=1e-3)
