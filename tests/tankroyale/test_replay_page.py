"""The replay page's script, run (under node, replay_harness.js: a stand-in DOM and a canvas that records its
calls with the transform in force): a page that no longer draws a tank where the round had it, its gun and
radar along their headings, a bullet in flight, a hit, or that steps, seeks and plays to the wrong turn fails
here, as does a page whose script throws. test_replay.py checks the data the page carries; this checks what
the page does with it."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from actor.bots.tankroyale.engine import Engine, Intent, Participant, Setup, Turn
from actor.bots.tankroyale.fight import Frame
from actor.bots.tankroyale.replay import Recorder

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: the replay page's script runs under "
                                                     "node here (CI has node 20)")
HARNESS = Path(__file__).with_name("replay_harness.js")
ARENA = (800, 600)  # not square: a y axis drawn the wrong way up shows
NAMES = {1: "Aimer", 2: "Circler"}
WIDTH, DPR = 640, 2  # the page's width and device pixels per CSS pixel: the canvas is 1280 x 960
TOL = 0.5  # device pixels


# -- the round -----------------------------------------------------------------------------------------------------

def aim(me: dict[str, Any], them: dict[str, Any]) -> float:
    """Degrees the gun must turn to point at `them` (the engine clamps the turn to what a gun can do)."""
    bearing = math.degrees(math.atan2(them["y"] - me["y"], them["x"] - me["x"]))
    return (bearing - me["gunDirection"] + 180.0) % 360.0 - 180.0


def orders(turn: Turn) -> dict[int, Intent]:
    """Aimer (1) crawls in a circle, aims at Circler and fires when on target; Circler (2) circles the other way
    firing small shots: hits, misses into walls, bullets meeting, and a death, in about 1,400 turns."""
    s = turn.bot_states
    if not (1 in s and 2 in s):
        return {}
    off = aim(s[1], s[2])
    return {1: Intent(target_speed=2.0, turn_rate=3.0, gun_turn_rate=off, radar_turn_rate=45.0,
                      firepower=1.0 if abs(off) < 4 else 0.0),
            2: Intent(target_speed=3.0, turn_rate=-2.0, gun_turn_rate=7.0, radar_turn_rate=45.0, firepower=0.3)}


@cache
def recorded_round() -> tuple[str, tuple[tuple[Any, ...], ...]]:
    """A whole engine round as its page, and the turns the page carries (as tuples: cached, so not to be
    changed)."""
    engine = Engine(Setup(arena_width=ARENA[0], arena_height=ARENA[1], number_of_rounds=1),
                    [Participant(b, n) for b, n in NAMES.items()], seed=2)
    rec = Recorder(ARENA, NAMES, "scripted round")
    turn = engine.new_round()
    rec.add(Frame.from_turn(turn))
    while not turn.round_ended and turn.turn_number < 3000:
        turn = engine.step(orders(turn))
        rec.add(Frame.from_turn(turn))
    assert turn.round_ended
    return rec.page(), tuple(tuple(row) for row in rec.turns)


@pytest.fixture(scope="module")
def page() -> str:
    return recorded_round()[0]


@pytest.fixture(scope="module")
def turns() -> tuple[tuple[Any, ...], ...]:
    return recorded_round()[1]


# -- running the page ----------------------------------------------------------------------------------------------

def page_parts(html: str) -> tuple[str, str, list[str]]:
    """The page's data (the text of #data, as a browser would read it), its inline script and its element ids."""
    data = re.search(r'<script id="data" type="application/json">(.*?)</script>', html, re.S)
    script = re.search(r"<script>(.*?)</script>", html, re.S)
    assert data is not None and script is not None, "the page has no data or no script"
    body = html[:data.start()]
    return data.group(1), script.group(1), re.findall(r'\bid="([^"]+)"', body) + ["data"]


def run_page(html: str, actions: list[dict[str, Any]], tmp_path: Path, *, hash: str = "",
             script: str | None = None) -> list[dict[str, Any]]:
    """What the page did at each action: the canvas calls made, #turn's text, the slider, errors thrown."""
    data, page_script, ids = page_parts(html)
    spec = {"script": page_script if script is None else script, "data": data, "ids": ids, "width": WIDTH,
            "dpr": DPR, "hash": hash, "actions": [{"do": "start"}, *actions]}
    (tmp_path / "page.json").write_text(json.dumps(spec))
    assert NODE is not None
    done = subprocess.run([NODE, str(HARNESS), str(tmp_path / "page.json")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout)["steps"])


def no_errors(steps: list[dict[str, Any]]) -> None:
    for step in steps:
        assert not step["errors"], f"{step['action']}: {step['errors']}"


def colors(html: str) -> dict[int, str]:
    """Each bot's colour as the page picks it (its palette, in order of bot id)."""
    palette = json.loads(re.search(r"const COLORS = (\[[^\]]*\])", html).group(1))  # type: ignore[union-attr]
    return {bot: palette[k % len(palette)] for k, bot in enumerate(sorted(NAMES))}


# -- where things were drawn ---------------------------------------------------------------------------------------

def canvas_point(x: float, y: float, width: int = WIDTH) -> tuple[float, float]:
    """An arena point (y up) on the canvas (device pixels, y down) of a page `width` CSS pixels wide."""
    scale = min(width, 1000) / ARENA[0] * DPR
    return x * scale, (ARENA[1] - y) * scale


def device(m: list[float], x: float, y: float) -> tuple[float, float]:
    """Where the transform `m` in force at a call puts the call's point (x, y)."""
    return m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]


def near(a: tuple[float, float], b: tuple[float, float], tol: float = TOL) -> bool:
    return math.dist(a, b) <= tol


def along(m: list[float], degrees: float) -> bool:
    """Whether the call's x axis points along `degrees` (game heading: 0 east, counter-clockwise, y up)."""
    norm = math.hypot(m[0], m[1])
    return norm > 0 and near((m[0] / norm, m[1] / norm), (math.cos(math.radians(degrees)),
                                                           -math.sin(math.radians(degrees))), 1e-3)


def rect_centre(c: dict[str, Any]) -> tuple[float, float]:
    x, y, w, h = c["args"]
    return device(c["m"], x + w / 2, y + h / 2)


def rect_base(c: dict[str, Any]) -> tuple[float, float]:
    """The middle of the rectangle's start (x) edge: where a barrel drawn from a point begins."""
    x, y, _, h = c["args"]
    return device(c["m"], x, y + h / 2)


def calls(step: dict[str, Any], op: str) -> list[dict[str, Any]]:
    return [c for c in step["calls"] if c["op"] == op]


def tank_problems(step: dict[str, Any], row: tuple[Any, ...], color: dict[int, str],
                  width: int = WIDTH) -> list[str]:
    """What the frame drawn in `step` lacks of turn `row`'s tanks: for each, a body in its colour centred where
    the tank is and along its heading, a gun barrel from its centre along the gun's heading, the radar's beam
    or sweep from its centre, and its name and energy."""
    problems = []
    rects, texts = calls(step, "fillRect"), [c["args"][0] for c in calls(step, "fillText")]
    for bot, x, y, energy, body, gun, radar, sweep in row[1]:
        at, label = canvas_point(x, y, width), f"bot {bot} at turn {row[0]}"
        if not any(c["fill"].startswith(color[bot]) and near(rect_centre(c), at) and along(c["m"], body)
                   for c in rects) and energy > 0:
            problems.append(f"{label}: no body at {at} heading {body}")
        if not any(near(rect_base(c), at) and along(c["m"], gun) and c["args"][2] > 10 for c in rects):
            problems.append(f"{label}: no gun from {at} heading {gun}")
        if not any(near(device(c["m"], *c["args"][:2]), at) for c in calls(step, "moveTo")):
            problems.append(f"{label}: no radar beam from {at}")
        if sweep and not any(near(device(c["m"], *c["args"][:2]), at) and
                             {round(a, 6) for a in c["args"][3:5]} == {round(math.radians(radar), 6),
                                                                       round(math.radians(radar - sweep), 6)}
                             for c in calls(step, "arc")):
            problems.append(f"{label}: no radar sweep from {radar - sweep} to {radar}")
        if not any(NAMES[bot] in t and f"{energy:.1f}" in t for t in texts):
            problems.append(f"{label}: no label with its name and energy {energy:.1f} in {texts}")
    return problems


def bullets_drawn(step: dict[str, Any], color: dict[int, str]) -> list[tuple[int, tuple[float, float], float]]:
    """The bullets a frame drew: discs filled in exactly a bot's colour (its bullets' colour), as (owner, where,
    radius in arena units)."""
    owner = {c: bot for bot, c in color.items()}
    return [(owner[c["fill"]], device(c["m"], *c["args"][:2]), c["args"][2]) for c in calls(step, "arc")
            if c["fill"] in owner]


def shown(step: dict[str, Any], row: tuple[Any, ...], count: int) -> bool:
    return bool(re.match(rf"turn {row[0]} \(\d+/{count}\)", step["turn"]))


# -- the tests -----------------------------------------------------------------------------------------------------

def test_the_page_opens_on_the_first_turn_with_every_tank_where_the_round_has_it(page: str, turns: Any,
                                                                                  tmp_path: Path) -> None:
    (opened,) = run_page(page, [], tmp_path)
    no_errors([opened])
    assert opened["canvas"] == [WIDTH * DPR, round(WIDTH * ARENA[1] / ARENA[0]) * DPR]
    assert shown(opened, turns[0], len(turns)) and opened["seek"] == "0" and opened["seekMax"] == str(len(turns) - 1)
    assert opened["title"] == "scripted round" and opened["pendingFrames"] == 1  # the play loop is waiting
    assert not tank_problems(opened, turns[0], colors(page)), tank_problems(opened, turns[0], colors(page))
    for name in NAMES.values():
        assert name in opened["table"]
    assert "destroyed" in opened["table"] and "lost" in opened["table"]  # the whole round's tally


def test_bullets_are_drawn_where_they_fly_on_turns_that_have_them_and_only_then(page: str, turns: Any,
                                                                                 tmp_path: Path) -> None:
    busy = next(k for k, row in enumerate(turns) if {b[0] for b in row[2]} == {1, 2} and len(row[2]) >= 3)
    quiet = max(k for k, row in enumerate(turns) if k < busy and not row[2])  # seeking back
    steps = run_page(page, [{"do": "input", "id": "seek", "value": busy},
                            {"do": "input", "id": "seek", "value": quiet}], tmp_path)
    no_errors(steps)
    color = colors(page)
    drawn, expected = bullets_drawn(steps[1], color), turns[busy][2]
    assert shown(steps[1], turns[busy], len(turns)) and len(drawn) == len(expected), (drawn, expected)
    for owner, x, y, power in expected:
        assert any(o == owner and near(at, canvas_point(x, y)) and r > power for o, at, r in drawn), (owner, x, y)
    assert shown(steps[2], turns[quiet], len(turns)) and bullets_drawn(steps[2], color) == []


def flash_alpha(step: dict[str, Any], where: tuple[float, float]) -> float | None:
    """How opaque the flash drawn at `where` is (the most opaque of those there), or None when none is."""
    alphas = [float(c["fill"].rstrip(")").split(",")[-1]) for c in calls(step, "arc")
              if c["fill"].startswith("rgba(") and near(device(c["m"], *c["args"][:2]), where)]
    return max(alphas) if alphas else None


def test_a_hit_flashes_where_it_happened_and_fades_over_the_next_turns(page: str, turns: Any, tmp_path: Path) -> None:
    hit = next(k for k, row in enumerate(turns) if any(f[0] == 1 for f in row[3]))
    steps = run_page(page, [{"do": "input", "id": "seek", "value": hit},
                            {"do": "input", "id": "seek", "value": hit + 3}], tmp_path)
    no_errors(steps)
    for kind, x, y, _ in turns[hit][3]:
        where = canvas_point(min(max(x, 0), ARENA[0]), min(max(y, 0), ARENA[1]))
        now, later = flash_alpha(steps[1], where), flash_alpha(steps[2], where)
        assert now is not None and later is not None and later < now, (kind, x, y, now, later)


def test_stepping_seeking_and_the_arrow_keys_draw_the_turn_they_reach(page: str, turns: Any, tmp_path: Path) -> None:
    last = len(turns) - 1
    script: list[tuple[dict[str, Any], int]] = [
        ({"do": "click", "id": "fwd"}, 1), ({"do": "click", "id": "fwd"}, 2), ({"do": "click", "id": "back"}, 1),
        ({"do": "key", "key": "ArrowRight"}, 2), ({"do": "key", "key": "ArrowLeft"}, 1),
        ({"do": "click", "id": "back"}, 0), ({"do": "click", "id": "back"}, 0),  # no turn before the first
        ({"do": "input", "id": "seek", "value": 700}, 700), ({"do": "click", "id": "fwd"}, 701),
        ({"do": "input", "id": "seek", "value": last}, last), ({"do": "click", "id": "fwd"}, last),  # nor after
    ]
    steps = run_page(page, [action for action, _ in script], tmp_path)
    no_errors(steps)
    color = colors(page)
    for step, (action, index) in zip(steps[1:], script):
        assert shown(step, turns[index], len(turns)) and step["seek"] == str(index), (action, step["turn"])
        assert not tank_problems(step, turns[index], color), (action, tank_problems(step, turns[index], color))
    assert turns[last][1][1][3] == 0  # the last turn: Circler destroyed, drawn dead at where it died


def test_play_runs_30_turns_a_second_at_1x_faster_at_8x_and_stops_at_the_end(page: str, turns: Any,
                                                                             tmp_path: Path) -> None:
    last = len(turns) - 1
    steps = run_page(page, [
        {"do": "click", "id": "play"}, {"do": "raf", "ms": 1000},
        {"do": "change", "id": "speed", "value": "8"}, {"do": "raf", "ms": 1000},
        {"do": "key", "key": " "}, {"do": "raf", "ms": 1000},
        {"do": "input", "id": "seek", "value": last - 50}, {"do": "click", "id": "play"}, {"do": "raf", "ms": 3000},
    ], tmp_path)
    no_errors(steps)
    index = [int(s["seek"]) for s in steps]
    assert "pause" in steps[1]["play"] and 27 <= index[2] <= 31, index  # 1 s of 16 ms frames at 30 turns a second
    assert 230 <= index[4] - index[2] <= 250 and "play" in steps[5]["play"], index  # 8x, then space pauses
    assert index[6] == index[5]  # paused: frames come, the turn stays
    assert index[9] == last and "play" in steps[9]["play"] and "pause" not in steps[9]["play"]
    color = colors(page)
    for k in (2, 4, 9):
        assert not tank_problems(steps[k], turns[index[k]], color), tank_problems(steps[k], turns[index[k]], color)


def test_a_link_to_a_turn_opens_there_and_a_resize_redraws_at_the_new_scale(page: str, turns: Any,
                                                                            tmp_path: Path) -> None:
    steps = run_page(page, [{"do": "resize", "width": 1400}], tmp_path, hash="#t=300")
    no_errors(steps)
    at = next(k for k, row in enumerate(turns) if row[0] >= 300)
    assert shown(steps[0], turns[at], len(turns))
    assert not tank_problems(steps[0], turns[at], colors(page))
    assert steps[1]["canvas"] == [1000 * DPR, 750 * DPR]  # the page is at most 1000 px wide
    problems = tank_problems(steps[1], turns[at], colors(page), width=1000)
    assert not problems, problems


def test_the_checks_catch_a_page_that_throws_or_no_longer_draws_its_tanks(page: str, turns: Any,
                                                                          tmp_path: Path) -> None:
    """The harness reports what the script throws, and the tank check fails on a page whose tank() draws nothing
    (the mutation the test suite must catch); a mutation needs the script's `function tank(b) {` to be there."""
    _, script, _ = page_parts(page)
    assert "function tank(b) {" in script, "the page's tank() was renamed: update this test's mutation"
    (thrown,) = run_page(page, [], tmp_path, script=script + "\nnull.draw();")
    assert thrown["errors"] and "TypeError" in thrown["errors"][0]
    (blank,) = run_page(page, [], tmp_path, script=script.replace("function tank(b) {", "function tank(b) { return;"))
    assert not blank["errors"]
    problems = tank_problems(blank, turns[0], colors(page))
    assert any("no body" in p for p in problems) and any("no gun" in p for p in problems), problems
