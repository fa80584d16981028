"""tank-train's opponent rotation, game numbers and seeds: arenas start spread over the opponents, and a run
resumed on the same run dir goes on where it stopped (the next game number, the next opponent in turn, the
next server seed) instead of starting again at the first opponent with the first piece's start positions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deploy.tank.battle import RoundLog, RoundRecord, game_seed, next_games, rotation, rotation_start


def row(arena: int, game: int, opponent: str = "SittingDuck", rnd: int = 1) -> dict[str, Any]:
    return RoundRecord(arena, game, rnd, opponent, True, 10.0, 0.0, 300, 0.0).__dict__.copy()


@pytest.mark.parametrize("opponents", [1, 2, 3, 7, 9])
def test_arenas_playing_game_for_game_never_face_the_same_opponent(opponents: int) -> None:
    for arenas in range(1, opponents + 1):
        starts = [rotation_start(i, arenas, opponents) for i in range(arenas)]
        for game in range(3 * opponents):
            faced = [rotation(s, game, opponents) for s in starts]
            assert len(set(faced)) == arenas, (arenas, opponents, game, faced)
        # and each arena still plays the whole list in turn
        for s in starts:
            assert sorted(rotation(s, g, opponents) for g in range(opponents)) == list(range(opponents))


def test_the_default_two_arenas_start_across_the_nine() -> None:
    assert [rotation_start(i, 2, 9) for i in range(2)] == [0, 4]
    assert rotation_start(0, 1, 9) == 0  # one arena starts at the first opponent, as before


def test_the_next_game_of_each_arena_is_one_past_what_it_logged() -> None:
    rows = [row(0, 0), row(1, 0), row(0, 0, rnd=2), row(0, 1), row(1, 1), row(0, 2), row(1, 2), row(1, 3)]
    assert next_games(rows, 2) == [3, 4]
    assert next_games(rows, 3) == [3, 4, 0]  # an arena added on resume starts at game 0
    assert next_games(rows, 1) == [3]  # fewer arenas: the others' rows are left alone
    assert next_games([{"arena": 0}, {"game": 5}, {"arena": "0", "game": 9}], 1) == [0]  # rows without both
    assert next_games([], 2) == [0, 0]


def test_each_game_has_a_seed_of_its_own_that_a_resume_carries_on() -> None:
    first = [game_seed(7, 0, g) for g in range(3)]
    resumed = [game_seed(7, 0, g) for g in range(next_games([row(0, g) for g in range(3)], 1)[0], 6)]
    assert first == [7, 8, 9] and resumed == [10, 11, 12]
    assert game_seed(7, 1, 0) == 1007  # arena i plays seed + 1000 i + game


def test_a_torn_last_line_is_cut_so_the_next_round_keeps_a_line_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "rounds.jsonl"
    whole = [json.dumps(row(0, g)) for g in range(2)]
    path.write_text("\n".join(whole) + "\n" + json.dumps(row(0, 2))[:25])  # a crash mid-write
    log = RoundLog(path)
    assert log.resumed == 2 and next_games(log.rounds, 1) == [2]
    log.add(RoundRecord(0, 2, 1, "SpinBot", False, 0.0, 10.0, 200, 0.0))
    again = RoundLog(path)
    assert again.resumed == 3 and [r["game"] for r in again.rounds] == [0, 1, 2]
    assert path.read_text().splitlines()[:2] == whole


def test_a_whole_last_line_without_its_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "rounds.jsonl"
    path.write_text(json.dumps(row(0, 0)) + "\n" + json.dumps(row(0, 1)))
    log = RoundLog(path)
    assert log.resumed == 2
    log.add(RoundRecord(0, 2, 1, "SpinBot", False, 0.0, 10.0, 200, 0.0))
    assert [r["game"] for r in RoundLog(path).rounds] == [0, 1, 2]


def test_a_resumed_trainer_starts_its_arenas_on_their_next_game_seed_and_opponent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wiring in TankTrainer._start_arena, with nothing started: what the server, the tank and the arena
    are given when the run dir's log says arena 0 played games 0-4 and arena 1 games 0-2 (its last line torn)."""
    import actor.bots.tankroyale.server as server_module
    import deploy.tank.train as train
    from deploy.tank.train import BattleConfig, TankTrainer

    run = tmp_path / "run"
    run.mkdir()
    rows = [row(0, g) for g in range(5)] + [row(1, g) for g in range(3)]
    (run / "rounds.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"arena": 1, "game": 3, "ro')
    servers: list[int] = []
    started: dict[str, tuple[str, ...]] = {}
    arenas: list[dict[str, Any]] = []

    class FakeServer:
        url = "ws://127.0.0.1:1"

    def run_server(**kw: Any) -> FakeServer:
        servers.append(kw["seed"])
        return FakeServer()

    class FakeArena:
        def __init__(self, index: int, *args: Any, **kw: Any) -> None:
            arenas.append({"index": index, "opponents": args[3], **kw})

        def start(self) -> FakeArena:
            return self

    monkeypatch.setattr(server_module, "run_server", run_server)
    monkeypatch.setattr(train, "Arena", FakeArena)
    t = TankTrainer(BattleConfig(run_dir=str(run), seed=5, progress=False), None, [], [])
    monkeypatch.setattr(t.children, "start", lambda name, *argv: started.__setitem__(name, argv))
    for i in range(2):
        t._start_arena(i)

    assert servers == [5 + 5, 5 + 1000 + 3]  # the seeds of arena 0's game 5 and arena 1's game 3
    assert [a["first_game"] for a in arenas] == [5, 3]
    pool = list(BattleConfig().opponents)
    n = len(pool)  # arena 1 starts half the list on: n // 2, and its game 3 is three on from there
    assert [a["opponents"][rotation(a["start"], a["first_game"], n)] for a in arenas] == [pool[5], pool[(n // 2 + 3) % n]]
    tank_seeds = [started[f"tank{i}"][started[f"tank{i}"].index("--seed") + 1] for i in range(2)]
    assert tank_seeds == ["1005", "2003"]  # not the first piece's 1000 and 2000: the sampling goes on too


@pytest.mark.slow
def test_a_resumed_run_goes_on_numbering_its_games_and_through_its_opponents(tmp_path: Path) -> None:
    """Real processes (tests/tankroyale/test_train.py's small run: one tank, SittingDuck and SpinBot, one round a
    game): a first piece of one round, a crash's torn line, then a resume to two rounds."""
    pytest.importorskip("robocode_tank_royale")
    from tests.tankroyale.test_train import train

    run = tmp_path / "run"
    out = train(run, 1)
    assert out.returncode == 0, out.stdout + out.stderr
    with open(run / "rounds.jsonl", "a") as fh:
        fh.write('{"arena": 0, "game": 1, "round": 1, "oppo')  # a crash mid-write
    again = train(run, 2)
    assert again.returncode == 0, again.stdout + again.stderr
    rounds = [json.loads(line) for line in (run / "rounds.jsonl").read_text().splitlines()]
    assert [(r["arena"], r["game"], r["opponent"]) for r in rounds] == [(0, 0, "SittingDuck"), (0, 1, "SpinBot")]
