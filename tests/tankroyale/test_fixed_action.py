"""The constant-action baseline (actor/bots/tankroyale/baseline.py): what our tank's controls win with no network.

`saclstm tank --fixed-action` plays one action every decision through the tank's own form (the brain's orders,
radar lock, repeat), with no learner, no checkpoint and no torch; `saclstm tank-eval` plays it as a fourth side,
"constant-action", in the same battles as our tank, HeadOnBot and RandomBot; bench_tank_learning.py reports it
beside every win rate and reads back only evaluations that have it.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from actor.bots.tankroyale.baseline import FIXED_ACTIONS, fixed_action, parse_action
from actor.bots.tankroyale.brain import ACT_HIGH, ACT_LOW, TankControls
from actor.bots.tankroyale.engine import Setup
from tests.procs import Procs, free_port

# Small arena, quick guns, a generous turn timeout (a skipped turn would be our bug): rounds of seconds.
SETUP = Setup(arena_width=400, arena_height=400, number_of_rounds=1, gun_cooling_rate=0.5, max_inactivity_turns=100,
              turn_timeout_us=300_000)
NAME = "constant-action"


# -- the action ----------------------------------------------------------------------------------------------------

def test_the_path_form_plays_the_measured_action_and_every_entry_fits_the_tank() -> None:
    assert fixed_action(TankControls()).tolist() == [8.0, -5.0, 0.0, 2.0]  # TankControls' default aim is path
    for aim, action in FIXED_ACTIONS.items():
        TankControls(aim=aim)  # a form the tank knows
        assert np.all(np.asarray(action) >= ACT_LOW) and np.all(np.asarray(action) <= ACT_HIGH), aim


def test_a_form_without_a_constant_action_is_named() -> None:
    with pytest.raises(ValueError, match="'rate'"):
        fixed_action(TankControls(aim="rate"))


@pytest.mark.parametrize(("text", "reason"), [("8,-5,0", "give 4 numbers"), ("8,-5,x,2", "the aim 'x' is not"),
                                              ("8,-5,0,3.5", "the fire power 3.5 is outside [0, 3]"),
                                              ("nan,0,0,2", "the speed nan is outside")])
def test_a_bad_action_says_which_number_and_why(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason.replace("[", r"\[")):
        parse_action(text)


# -- saclstm tank --fixed-action: stops at start on a bad value ---------------------------------------------------

@pytest.mark.parametrize(("flags", "reason"), [
    (["--fixed-action=9,0,0,2"], "--fixed-action 9,0,0,2: the speed 9 is outside [-8, 8]"),
    (["--fixed-action", "--config", "RATE"], "no constant action for the aim form 'rate'"),
    (["--fixed-action", "--checkpoint", "some.sacl"], "--fixed-action plays no checkpoint"),
])
def test_tank_fixed_action_stops_at_start_with_the_reason(flags: list[str], reason: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("robocode_tank_royale")
    from actor.bots.tankroyale.cli import main

    rate = tmp_path / "rate.toml"
    rate.write_text('[controls]\naim = "rate"\n')
    argv = [str(rate) if f == "RATE" else f for f in flags]
    assert main([*argv, "--server", f"ws://127.0.0.1:{free_port()}"]) == 2  # 2, not 1: before any server is looked for
    assert reason in capsys.readouterr().err


# -- saclstm tank --fixed-action in a real battle ------------------------------------------------------------------

def play_fixed(procs: Procs, action: str, stop_after: int) -> tuple[list[Any], str]:
    """`saclstm tank --fixed-action=ACTION` (no learner anywhere) against SittingDuck on our server, for one round or
    `stop_after` turns; the observer's frames and the tank's log, which ends saying whether it imported torch."""
    from actor.bots.tankroyale.controller import Controller, GameAborted
    from actor.bots.tankroyale.fight import Frame
    from actor.bots.tankroyale.server import run_server

    server = run_server(port=0, tps=-1, seed=5, setup=SETUP)
    frames: list[Frame] = []
    try:
        tank = procs.start("tank", "tests.tankroyale.torchless", "deploy", "tank", f"--fixed-action={action}",
                           "--server", server.url, "--name", NAME)
        procs.start("duck", "actor.bots.tankroyale.opponents", "SittingDuck", "--server", server.url)
        with Controller(server.url) as ctl:
            stopped = threading.Event()

            def on_tick(msg: dict[str, Any]) -> None:
                frames.append(Frame.from_tick(msg))
                if frames[-1].turn >= stop_after and not stopped.is_set():
                    stopped.set()
                    ctl.stop_game()

            try:
                ctl.play(SETUP, [NAME, "SittingDuck"], on_tick=on_tick, timeout=120)
            except GameAborted:
                assert stopped.is_set()
    finally:
        server.close()  # a clean close: the tank (no --retry-s) exits 0
    assert tank.wait(30) == 0, procs.log("tank")
    return frames, procs.log("tank")


def shots_of(frames: list[Any], bot: int) -> list[float]:
    return [e["bullet"]["power"] for f in frames for e in f.events
            if e["type"] == "BulletFiredEvent" and e["bullet"]["ownerId"] == bot]


def test_the_tank_plays_the_constant_action_with_no_learner_and_no_torch(procs: Procs) -> None:
    """(8, -5, 0, 2): full speed ahead, and every shot at power 2 (a policy of any other kind, or the untrained
    client's uniform actions, fires at other powers); the tank is id 1, the first bot named to the game."""
    frames, log = play_fixed(procs, "8,-5,0,2", stop_after=300)
    powers = shots_of(frames, 1)
    assert powers and all(p == pytest.approx(2.0) for p in powers), powers
    assert max(f.bots[1]["speed"] for f in frames if 1 in f.bots) == pytest.approx(8.0)
    assert "torch imported: False" in log, log


def test_below_the_smallest_shot_the_tank_never_fires(procs: Procs) -> None:
    """Fire power 0.05 (the game's smallest shot is 0.1) holds fire, though the gun is cool and on the enemy; the
    tank still drives at full speed."""
    frames, _ = play_fixed(procs, "8,-5,0,0.05", stop_after=120)
    ours = [f.bots[1] for f in frames if 1 in f.bots]
    assert len(ours) >= 100 and any(s["gunHeat"] == 0 for s in ours)
    assert shots_of(frames, 1) == []
    assert max(s["speed"] for s in ours) == pytest.approx(8.0)


# -- saclstm tank-eval's constant-action side ----------------------------------------------------------------------

def tiny_checkpoint(tmp_path: Path) -> Path:
    pytest.importorskip("robocode_tank_royale")
    from tests.tankroyale.test_eval_honesty import checkpoint

    return checkpoint(tmp_path / "good.sacl")


def bearing_config(tmp_path: Path) -> Path:
    """A run trained with the bearing aim, whose constant action (8, -5, 0, 3) fires at power 3, not path's 2."""
    path = tmp_path / "bearing.toml"
    path.write_text('[controls]\naim = "bearing"\n')
    return path


def fired_power_3(side: dict[str, Any]) -> bool:
    """Power 3 does 16 damage a hit (4p + 2(p - 1)), power 2 only 10 (a ram adds 0.6): told apart by the damage."""
    return side["hits"] > 0 and side["mean_dealt"] * side["rounds"] >= 16 * side["hits"] - 1e-6


def test_tank_eval_plays_the_constant_action_of_the_run_s_form_in_the_same_battles(tmp_path: Path) -> None:
    """The run's --config gives the form: its own constant action, played through its controls by the tank."""
    from deploy.tank.evaluate import evaluate

    logs = tmp_path / "logs"
    results = evaluate(str(tiny_checkpoint(tmp_path)), "SittingDuck", 2, config=str(bearing_config(tmp_path)),
                       log_dir=logs)
    assert list(results) == ["saclstm-tank", "constant-action", "HeadOnBot", "RandomBot"]  # the report's order
    assert {side: (r["rounds"], r["fought"]) for side, r in results.items()} == {side: (2, 2) for side in results}
    assert fired_power_3(results["constant-action"])
    played = (logs / "constant-action.log").read_text()
    assert "playing the constant action (8, -5, 0, 3) in the form aim=bearing" in played, played


def test_tank_eval_fixed_action_overrides_the_form_s_own_and_is_reported(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deploy.tank.evaluate import main

    out = tmp_path / "eval.json"
    assert main(["--checkpoint", str(tiny_checkpoint(tmp_path)), "--opponent", "SittingDuck", "--rounds", "1",
                 "--fixed-action", "8,-5,0,3", "--out", str(out)]) == 0  # the default form, path: its own fires 2
    done, printed = json.loads(out.read_text()), capsys.readouterr().out
    assert done["fixed_action"] == [8.0, -5.0, 0.0, 3.0] and done["controls"]["aim"] == "path"
    assert {r["rounds"] for r in done["results"].values()} == {1} and len(done["results"]) == 4
    assert fired_power_3(done["results"]["constant-action"])
    assert "constant-action = (8, -5, 0, 3)" in printed and "learned minus the constant action" in printed, printed
    assert "  constant-action win rate" in printed, printed


@pytest.mark.parametrize(("flags", "reason"), [
    (["--fixed-action", "8,-5,0"], "--fixed-action 8,-5,0: give 4 numbers"),
    (["--no-baselines", "--fixed-action", "8,-5,0,2"], "drop one of them"),
    (["--config", "RATE"], "no constant action for the aim form 'rate'"),
])
def test_tank_eval_stops_at_start_on_a_constant_action_it_cannot_play(flags: list[str], reason: str, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from deploy.tank.evaluate import main
    from tests.tankroyale.test_eval_honesty import checkpoint

    rate = tmp_path / "rate.toml"
    rate.write_text('[controls]\naim = "rate"\n')
    good = checkpoint(tmp_path / "good.sacl")
    argv = [str(rate) if f == "RATE" else f for f in flags]
    assert main(["--checkpoint", str(good), "--opponent", "SittingDuck", "--rounds", "1", *argv]) == 2
    assert reason in capsys.readouterr().err


# -- bench_tank_learning.py's figures ------------------------------------------------------------------------------

def side(rounds: int, destroyed: int) -> dict[str, Any]:
    """One side of tank-eval's results, as much of it as the bench reads."""
    return {"rounds": rounds, "win_rate": destroyed / rounds, "win_rate_destroyed": destroyed / rounds,
            "hit_rate": 0.5, "shots": 10, "hits": 5}


def test_the_bench_reads_back_only_evaluations_with_the_constant_action(tmp_path: Path) -> None:
    """An evaluation made before tank-eval played the constant action is played again, not read back (nor a crash)."""
    from tests.bench.bench_tank_learning import read_back

    old = {"saclstm-tank": side(20, 18), "RandomBot": side(20, 0), "HeadOnBot": side(20, 5)}
    path = tmp_path / "eval-SpinBot.json"
    path.write_text(json.dumps({"rounds": 20, "checkpoint_sha256": "abc", "results": old}))
    assert read_back(path, "abc", 20) is None
    new = old | {"constant-action": side(20, 17)}
    path.write_text(json.dumps({"rounds": 20, "checkpoint_sha256": "abc", "results": new}))
    assert read_back(path, "abc", 20) == new
    assert read_back(path, "other", 20) is None and read_back(path, "abc", 100) is None
    assert read_back(tmp_path / "none.json", "abc", 20) is None


def test_the_bench_puts_the_constant_action_beside_each_win_rate_and_sums_up_the_adaptive() -> None:
    from tests.bench.bench_tank_learning import adaptive_figures, held_out_min, opponent_figures

    results = {"Surfer": {"saclstm-tank": side(20, 18), "constant-action": side(20, 10), "HeadOnBot": side(20, 4)},
               "SpinBot": {"saclstm-tank": side(20, 19), "constant-action": side(20, 18), "HeadOnBot": side(20, 1)},
               "Dodger": {"saclstm-tank": side(20, 12), "constant-action": side(20, 2), "HeadOnBot": side(20, 0)}}
    out: dict[str, Any] = {}
    for opponent, r in results.items():
        out.update(opponent_figures(opponent, r))
    assert (out["win_rate_surfer"], out["fixed_win_rate_surfer"], out["headon_win_rate_surfer"]) == (0.9, 0.5, 0.2)
    opponents = list(results)
    none = adaptive_figures(out, opponents, [], {"SpinBot"})
    assert none == {"learned_minus_fixed_min": None, "held_out_adaptive_min_win_rate": None}
    figures = adaptive_figures(out, opponents, ["Surfer", "Dodger", "NotPlayed"], trained={"SpinBot", "Surfer"})
    assert figures == {"learned_minus_fixed_min": 0.4, "held_out_adaptive_min_win_rate": 0.6}  # Surfer was trained on
    assert held_out_min(out, opponents, {"SpinBot", "Surfer"}) == 0.6  # the run's pool, not the bench's list
    assert held_out_min(out, opponents, set(opponents)) is None


def test_tank_eval_sample_plays_the_policy_s_distribution_the_same_for_a_seed(tmp_path: Path) -> None:
    """--sample: our tank's actions drawn from the checkpoint's policy, seeded: the same seed plays the same rounds,
    and they are not the deterministic rounds (a tiny random policy against SittingDuck, 2 rounds). Our tank is on
    the official bot API, whose round-start race (tests/tankroyale/test_house.py) now and then shifts a game by a
    turn: the same-seed run is played up to three times, and one of them must equal the first."""
    from deploy.tank.evaluate import evaluate

    ckpt = str(tiny_checkpoint(tmp_path))

    def ours(sample: bool) -> dict[str, Any]:
        results = evaluate(ckpt, "SittingDuck", 2, seed=3, baselines=False, sample=sample, turn_timeout_ms=1500.0)
        return {k: v for k, v in results["saclstm-tank"].items() if k != "time"}
    sampled = ours(True)
    again = [ours(True)]
    while again[-1] != sampled and len(again) < 3:
        again.append(ours(True))
    assert again[-1] == sampled, again
    assert sampled != ours(False)
