"""Stills of a replay (still.py): a PNG of one turn of a replay page, the arena's shape, with each tank drawn
where the page's data has it and, with a trail, where it was."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import matplotlib.image
import numpy as np
import pytest

from actor.bots.tankroyale.engine import Engine, Intent, Participant, Setup
from actor.bots.tankroyale.fight import Frame
from actor.bots.tankroyale.replay import Recorder
from actor.bots.tankroyale.still import draw_still, main, read_page

ARENA = (800, 600)
WIDTH = 400  # pixels: half an arena unit a pixel


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """120 turns of two tanks circling opposite ways, radars sweeping, firing small shots."""
    engine = Engine(Setup(arena_width=ARENA[0], arena_height=ARENA[1], number_of_rounds=1),
                    [Participant(1, "a"), Participant(2, "b")], seed=1)
    rec = Recorder(ARENA, {1: "a", 2: "b"}, "still")
    turn = engine.new_round()
    rec.add(Frame.from_turn(turn))
    orders = {b: Intent(target_speed=6.0, turn_rate=4.0 * (-1) ** b, gun_turn_rate=7.0, radar_turn_rate=45.0,
                        firepower=0.5) for b in (1, 2)}
    while turn.turn_number < 120:
        turn = engine.step(orders)
        rec.add(Frame.from_turn(turn))
    return rec.save(tmp_path_factory.mktemp("still") / "round.html")


def pixels(path: Path) -> np.ndarray:
    return np.asarray(matplotlib.image.imread(path))[..., :3]


def pixel_of(x: float, y: float) -> tuple[int, int]:
    """(row, column) of an arena point (y up) in a still WIDTH pixels wide."""
    s = WIDTH / ARENA[0]
    return int((ARENA[1] - y) * s), int(x * s)


def bots_at(data: dict[str, Any], turn: int) -> dict[int, list[Any]]:
    row = next(r for r in data["turns"] if r[0] == turn)
    return {b[0]: b for b in row[1]}


def test_a_still_is_the_arenas_shape_and_draws_each_tank_where_it_is(page: Path, tmp_path: Path) -> None:
    data, palette = read_page(page)
    both = pixels(draw_still(data, palette, 80, tmp_path / "both.png", width=WIDTH, trail=0))
    assert both.shape == (WIDTH * ARENA[1] // ARENA[0], WIDTH, 3)
    without = copy.deepcopy(data)
    row = next(r for r in without["turns"] if r[0] == 80)
    row[1] = [b for b in row[1] if b[0] != 2]  # bot 2 gone from this turn only
    one = pixels(draw_still(without, palette, 80, tmp_path / "one.png", width=WIDTH, trail=0))
    bots = bots_at(data, 80)
    differs = np.abs(both - one).max(axis=2) > 0.05
    r2, c2 = pixel_of(*bots[2][1:3])
    assert differs[r2 - 3:r2 + 4, c2 - 3:c2 + 4].all()  # where bot 2 is: its gun's hub, in one still only
    r1, c1 = pixel_of(*bots[1][1:3])
    assert not differs[r1, c1]  # where bot 1 is: the same tank in both
    assert np.abs(both[r1, c1] - both[r2, c2]).max() < 0.05  # ... each hub the page's light grey
    background = np.array([0x0B, 0x0D, 0x10]) / 255
    assert np.abs(both[r1, c1] - background).max() > 0.5


def test_a_trail_draws_where_each_tank_was(page: Path, tmp_path: Path) -> None:
    data, palette = read_page(page)
    plain = pixels(draw_still(data, palette, 100, tmp_path / "plain.png", width=WIDTH, trail=0))
    trailed = pixels(draw_still(data, palette, 100, tmp_path / "trail.png", width=WIDTH, trail=30))
    for bot in (1, 2):
        before, now = bots_at(data, 85)[bot], bots_at(data, 100)[bot]
        assert math.dist(before[1:3], now[1:3]) > 40  # clear of the tank's body and label
        r, c = pixel_of(*before[1:3])
        assert np.abs(trailed[r - 1:r + 2, c - 1:c + 2] - plain[r - 1:r + 2, c - 1:c + 2]).max() > 0.05, bot


def test_the_command_writes_the_still_of_a_turn_beside_the_page(page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(page), "--turn", "50", "--width", "200"]) == 0
    out = page.with_name("round-turn50.png")
    assert capsys.readouterr().out.strip() == str(out)
    assert pixels(out).shape == (150, 200, 3)
    assert main([str(page), "--turn", "5000", "--width", "200", "-o", str(page.with_name("last.png"))]) == 0
    assert pixels(page.with_name("last.png")).shape == (150, 200, 3)  # past the end: the round's last turn


def test_a_page_that_is_not_a_replay_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.html").write_text("<html></html>")
    with pytest.raises(ValueError, match="not a replay page"):
        read_page(tmp_path / "x.html")
