"""Battles as `tank-train` and `tank-eval` run them: arenas of one of our tanks against scripted opponents.

An arena is one game server (ours, on a thread of this process, or an official one at a URL), one
bot process per side (started by deploy/children.py, with a lifeline), and a controller that plays
games back to back on it. A round's outcome is read from the server's RoundEndedEventForObserver:
our tank won the round when it ranks first. How the round was fought (shots, hits, damage, and whether a won
round was won by destroying the opponent or by outlasting it) is counted from the same game's observer
ticks (actor/bots/tankroyale/fight.py), which the controller hands to every arena.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from actor.bots.tankroyale.controller import Controller, ControllerError, GameAborted
from actor.bots.tankroyale.engine import Setup
from actor.bots.tankroyale.fight import Fight, FightFeed, Frame

OURS = "saclstm-tank"  # our tank's name in the game


@dataclass(frozen=True)
class RoundRecord:
    """One round as our tank saw it: the server's round results, and our side of the fight from its ticks."""

    arena: int
    game: int
    round: int
    opponent: str
    won: bool
    score: float
    opponent_score: float
    turns: int
    time: float
    shots: int = 0  # bullets we fired
    hits: int = 0  # of them, those that hit
    dealt: float = 0.0  # damage our bullets and collisions did
    taken: float = 0.0  # damage bullets and collisions did to us
    ending: str = ""  # "destroyed", "outlasted" or "lost" (fight.py); "" when no tick of the round was seen

    @staticmethod
    def from_event(msg: dict[str, Any], arena: int, game: int, opponent: str,
                   before: dict[int, dict[str, Any]], fight: Fight | None = None) -> RoundRecord | None:
        """Our side is id 1 and theirs id 2 (the controller starts every game with the bots in that order).

        A round's results are the game's so far (as the official server sends them): this round's share is
        the difference from `before`, the previous round's, which this updates. `fight`: this round's, from
        its ticks (none: the fight fields stay empty).
        """
        results = {int(r.get("id", 0)): r for r in msg.get("results") or []}
        if 1 not in results:
            return None

        def gain(bot: int, key: str) -> float:
            return float(results.get(bot, {}).get(key, 0)) - float(before.get(bot, {}).get(key, 0))

        won = gain(1, "lastSurvivorBonus") > 0  # we outlived the other side
        record = RoundRecord(arena, game, int(msg.get("roundNumber", 0)), opponent, won, gain(1, "totalScore"),
                             gain(2, "totalScore"), int(msg.get("turnNumber", 0)), time.time())
        ours = fight.sides.get(1) if fight is not None else None
        if fight is not None and ours is not None:
            record = replace(record, shots=ours.shots, hits=ours.hits, dealt=round(ours.dealt, 3),
                             taken=round(ours.taken, 3), ending=fight.ending(1, won))
        before.clear()
        before.update(results)
        return record


def fight_stats(rows: list[dict[str, Any]]) -> dict[str, float]:
    """How rounds were fought (RoundRecord rows): hit rate, mean damage dealt and taken per round, and of the
    rounds won, the share won by destroying the opponent and by outlasting it; `win_rate_destroyed` is the
    rounds won by destroying over all rounds. Rows without a fight (older logs) are left out of all of it."""
    fought = [r for r in rows if r.get("ending")]
    n, shots, hits = len(fought), sum(r["shots"] for r in fought), sum(r["hits"] for r in fought)
    ends = {e: sum(1 for r in fought if r["ending"] == e) for e in ("destroyed", "outlasted")}
    wins = ends["destroyed"] + ends["outlasted"]
    return {"fought": n, "shots": shots, "hits": hits, "hit_rate": hits / shots if shots else 0.0,
            "mean_dealt": sum(r["dealt"] for r in fought) / n if n else 0.0,
            "mean_taken": sum(r["taken"] for r in fought) / n if n else 0.0,
            "destroyed_rate": ends["destroyed"] / wins if wins else 0.0,
            "outlasted_rate": ends["outlasted"] / wins if wins else 0.0,
            "win_rate_destroyed": ends["destroyed"] / n if n else 0.0}


def wilson(wins: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a win rate (sound at 0 and 1, unlike the normal approximation)."""
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - half) / (1 + z * z / n)), min(1.0, (centre + half) / (1 + z * z / n))


def rotation_start(arena: int, arenas: int, opponents: int) -> int:
    """Where arena `arena` of `arenas` starts in a list of `opponents`: spread evenly over it (arena i at
    i * opponents // arenas), so that arenas playing game for game never face the same opponent at once while
    there are at least as many opponents as arenas."""
    return arena * opponents // arenas


def rotation(start: int, game: int, opponents: int) -> int:
    """The index of the opponent of an arena's game number `game`: the list in turn from `start`. Game numbers
    count across the pieces of a run, so a resumed arena goes on in the list where it stopped."""
    return (start + game) % opponents


def next_games(rows: Iterable[dict[str, Any]], arenas: int) -> list[int]:
    """Per arena, the number of its next game: one past the highest game its logged rounds name (RoundLog's
    rows), 0 for an arena with none. A game cut before its first round ended left no row: it is played again."""
    nxt = [0] * arenas
    for r in rows:
        arena, game = r.get("arena"), r.get("game")
        if isinstance(arena, int) and isinstance(game, int) and 0 <= arena < arenas:
            nxt[arena] = max(nxt[arena], game + 1)
    return nxt


def game_seed(seed: int, arena: int, game: int) -> int:
    """The server seed (start positions) of an arena's game number `game`. Our server plays game k of its own
    run with its seed + k: an arena's server starts at the seed of the first game it plays."""
    return seed + 1000 * arena + game


class Arena:
    """Games back to back between `ours` and each opponent in turn, on one server; runs on its own thread."""

    def __init__(self, index: int, url: str, secret: str | None, ours: str, opponents: list[str], setup: Setup,
                 more: Callable[[], bool], on_round: Callable[[RoundRecord], None], join_timeout: float = 60.0,
                 replay: Path | None = None, first_game: int = 0, start: int = 0) -> None:
        """`more()` is asked before each game (the budget may be shared between arenas). `replay`: a folder
        for a replay page of every round played (round-001.html, ...; actor/bots/tankroyale/replay.py).
        `first_game`: the number of the first game played here (a resumed run's arena goes on from its log);
        game g is against opponents[rotation(start, g, len(opponents))]."""
        self.index, self.url, self.secret, self.ours = index, url, secret, ours
        self.opponents, self.setup, self.more, self.on_round = opponents, setup, more, on_round
        self.join_timeout, self.replay = join_timeout, replay
        self.first_game, self.start_at = first_game, start
        self.replays: list[Path] = []  # the pages written
        self.stopping = threading.Event()
        self.error: str | None = None
        self.games_played = 0
        self.tps_wanted: int | None = None  # set from another thread; sent between messages
        self._thread = threading.Thread(target=self._run, name=f"arena{index}", daemon=True)
        self._ctl: Controller | None = None

    def start(self) -> Arena:
        self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self.stopping.set()
        ctl = self._ctl
        if ctl is not None:
            try:
                ctl.stop_game()
            except ControllerError:
                pass

    def _run(self) -> None:
        try:
            self._ctl = self._connect()
            game = self.first_game
            while not self.stopping.is_set() and self.more():
                opponent = self.opponents[rotation(self.start_at, game, len(self.opponents))]
                self._play(game, opponent)
                game += 1
                self.games_played = game - self.first_game
        except (ControllerError, TimeoutError, OSError) as exc:
            if not self.stopping.is_set():
                self.error = f"arena {self.index}: {exc}"
        finally:
            if self._ctl is not None:
                self._ctl.close()

    def _connect(self) -> Controller:
        deadline = time.monotonic() + self.join_timeout
        while True:
            try:
                return Controller(self.url, self.secret)
            except ControllerError:
                if time.monotonic() > deadline or self.stopping.is_set():
                    raise
                time.sleep(0.2)  # the server is still starting: nothing to wait on but time

    def _play(self, game: int, opponent: str) -> None:
        assert self._ctl is not None
        ctl = self._ctl
        bots = ctl.wait_for_bots([self.ours, opponent], self.join_timeout)

        before: dict[int, dict[str, Any]] = {}
        fights, replays = FightFeed(), self._replays(opponent)

        def on_round(msg: dict[str, Any]) -> None:
            fight = fights.fight if fights.fight.frames and fights.fight.round == msg.get("roundNumber") else None
            record = RoundRecord.from_event(msg, self.index, game, opponent, before, fight)
            if record is None:
                return
            if replays is not None and self.replay is not None:
                page = self.replay / f"round-{len(self.replays) + 1:03d}.html"
                if replays.save(record.round, page, record.won) is not None:
                    self.replays.append(page)
            self.on_round(record)

        def on_tick(msg: dict[str, Any]) -> None:
            frame = Frame.from_tick(msg)
            fights.add(frame)
            if replays is not None:
                replays.add(frame)
            if self.tps_wanted is not None:
                tps, self.tps_wanted = self.tps_wanted, None
                ctl.change_tps(tps)
            if self.stopping.is_set():
                ctl.stop_game()

        try:
            ctl.play(self.setup, bots, on_round=on_round, on_tick=on_tick, join_timeout=self.join_timeout)
        except GameAborted:
            if not self.stopping.is_set():
                raise

    def _replays(self, opponent: str) -> Any:
        """A ReplayFeed for this game when replays are asked for (replay.py is imported only then)."""
        if self.replay is None:
            return None
        from actor.bots.tankroyale.replay import ReplayFeed

        return ReplayFeed((self.setup.arena_width, self.setup.arena_height), f"{self.ours} against {opponent}")


class RoundLog:
    """Rounds as they end: kept in memory for the progress view and appended to a JSONL file (resume reads it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.rounds: list[dict[str, Any]] = []
        if path.exists():
            data = path.read_bytes()
            for line in data.decode(errors="replace").splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a crash: the rest still count
                if isinstance(row, dict):
                    self.rounds.append(row)
            self._mend(data)
        self.resumed = len(self.rounds)

    def _mend(self, data: bytes) -> None:
        """A last line without its newline (a crash mid-write) would swallow the next row appended to it: cut it
        off when it is torn, end it when it is whole."""
        if not data or data.endswith(b"\n"):
            return
        cut = data.rfind(b"\n") + 1
        try:
            json.loads(data[cut:])
        except ValueError:
            os.truncate(self.path, cut)
            return
        with open(self.path, "ab") as fh:
            fh.write(b"\n")

    def add(self, record: RoundRecord) -> None:
        row = record.__dict__.copy()
        with self.lock:
            self.rounds.append(row)
            with open(self.path, "a") as fh:
                fh.write(json.dumps(row) + "\n")

    def by_opponent(self, last: int = 0) -> dict[str, dict[str, float]]:
        """Per opponent: rounds, wins, win rate (over the last `last` rounds of each, 0 = all), mean score,
        and how the rounds were fought (fight_stats)."""
        with self.lock:
            rows = list(self.rounds)
        out: dict[str, dict[str, float]] = {}
        for name in sorted({r["opponent"] for r in rows}):
            mine = [r for r in rows if r["opponent"] == name]
            window = mine[-last:] if last else mine
            wins = sum(1 for r in window if r["won"])
            out[name] = {"rounds": len(mine), "wins": wins, "win_rate": wins / len(window),
                         "mean_score": sum(r["score"] for r in window) / len(window),
                         "mean_turns": sum(r["turns"] for r in window) / len(window), **fight_stats(window)}
        return out
