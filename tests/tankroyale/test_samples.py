"""The held-out sample bots (samples.py) move and fire as their samples do, over whole rounds on the rules
engine against a SittingDuck: what tells them apart from the six the tank trains on."""

from __future__ import annotations

import math

import numpy as np

from actor.bots.tankroyale.opponents import OPPONENTS, Me, View, make, normal
from actor.bots.tankroyale.opponents.samples import SAMPLES, Rotation
from tests.tankroyale.test_opponents import BOT, fired, kinds, play


def states(history: list, bot: int = BOT) -> list[dict]:
    return [t.bot_states[bot] for t in history if bot in t.bot_states]


def test_the_samples_are_opponents_but_not_the_training_six() -> None:
    from deploy.tank.train import BattleConfig

    names = {p.name for p in SAMPLES}
    assert names == {"Crazy", "Corners", "VelociBot", "MyFirstBot", "Fire"} and names <= set(OPPONENTS)
    assert not names & set(BattleConfig().opponents), "held out: tank-train never plays them by default"


def test_a_rotation_counts_down_what_the_heading_really_turned() -> None:
    r = Rotation(-180.0, 350.0)
    for heading in (345.0, 340.0, 250.0):
        r.seen(heading)
    assert r.remaining == -80.0 and not r.done
    r.seen(170.0)
    assert r.done, "a turn past what was left ends it"


def test_crazy_zigzags_flat_out_and_reverses_at_walls() -> None:
    history = play("Crazy", turns=600)
    s = states(history)
    assert max(abs(x["speed"]) for x in s) == 8
    turns = [normal(b["direction"] - a["direction"]) for a, b in zip(s, s[1:])]
    assert any(t > 0 for t in turns) and any(t < 0 for t in turns), "turns both ways"
    walls = [i for i, t in enumerate(history) if "BotHitWallEvent" in kinds(t)]
    assert walls, "flat out for 600 turns it meets a wall"
    w = walls[0]
    before = math.copysign(1, history[w - 1].bot_states[BOT]["speed"])
    after = [t.bot_states[BOT]["speed"] for t in history[w + 1:w + 12]]
    assert any(math.copysign(1, v) == -before and abs(v) > 2 for v in after), "it backs off the wall"


def test_corners_drives_into_a_corner_and_sweeps_its_gun_there() -> None:
    for seed in (1, 3):  # (with seed 0 the duck sits on its way: it stops and shoots it dead, as the sample does)
        history = play("Corners", turns=500, seed=seed)
        last = states(history)[-1]
        assert min(last["x"], 800 - last["x"]) < 25 and min(last["y"], 600 - last["y"]) < 25, "in a corner"
        guns = [x["gunDirection"] for x in states(history)[-60:]]
        steps = {round(abs(normal(b - a)), 6) for a, b in zip(guns, guns[1:])}
        assert steps == {3.0}, f"sweeps 3 degrees a turn: {steps}"


def test_velocibot_alternates_ahead_at_4_and_back_at_6_on_a_turning_gun() -> None:
    s = states(play("VelociBot", turns=200))
    assert max(x["speed"] for x in s) == 4 and min(x["speed"] for x in s) == -6
    guns = [normal(b["gunDirection"] - a["gunDirection"]) for a, b in zip(s[:30], s[1:31])]
    assert all(abs(g - 15.0) < 1e-6 for g in guns), "the gun turns 15 a turn while the body goes straight"


def test_myfirstbot_seesaws_100_and_spins_its_gun_at_each_end() -> None:
    s = states(play("MyFirstBot", turns=200))
    start = (s[0]["x"], s[0]["y"])
    away = [math.hypot(x["x"] - start[0], x["y"] - start[1]) for x in s]
    assert 99 < max(away) < 101, "100 ahead"
    assert min(away[60:]) < 1, "and back"
    gun = sum(abs(normal(b["gunDirection"] - a["gunDirection"])) for a, b in zip(s, s[1:]))
    assert gun >= 700, "a full turn of the gun at each end"


def test_fire_sits_still_until_hit_then_steps_aside() -> None:
    quiet = states(play("Fire", target="SittingDuck", turns=120))
    assert {(x["x"], x["y"]) for x in quiet} == {(quiet[0]["x"], quiet[0]["y"])}, "no bullet, no move"
    history = play("Fire", target="HeadOnBot", turns=400)
    hit = next(i for i, t in enumerate(history) if "BulletHitBotEvent" in kinds(t)
               and any(e["type"] == "BulletHitBotEvent" and e["victimId"] == BOT for e in t.events[BOT]))
    s = states(history)
    moved = max(math.hypot(x["x"] - s[hit]["x"], x["y"] - s[hit]["y"]) for x in s[hit:hit + 60])
    assert 40 < moved < 60, f"moves 50 after a hit: {moved:.1f}"
    assert fired(history) > 0


def test_a_hit_turns_myfirstbot_perpendicular_to_the_bullet() -> None:
    bot = make("MyFirstBot")
    bot.reset(np.random.default_rng(0))
    me = Me(400, 300, 100, 0.0, 0.0, 0.0, 0.0, 1.0)
    intent = bot.act(View(5, me, 800, 600, hit_by_bullet=True, bullet_direction=30.0))
    assert intent.turn_rate == -10.0, "turn right toward 30 - 90 = -60 degrees, at the rate allowed"


def test_each_sample_runs_as_a_bot_process_by_its_name() -> None:
    """`python -m actor.bots.tankroyale.opponents NAME` is how tank-eval starts an opponent: the held-out
    names must be known there too, not only to an importer of the module."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "actor.bots.tankroyale.opponents", "--help"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for p in SAMPLES:
        assert p.name in out.stdout, out.stdout
