"""Tiny bots on the official Python bot API (unmodified) for the server tests, one process each.

    python -m tests.tankroyale.bots spin --name SpinBot --url ws://127.0.0.1:P --secret S --log bot.jsonl

Each writes what the server told it (game start, skipped turns, round and game ends) as JSON lines to
--log, so a test can read what an official bot saw. Kinds:
    spin    turns, sweeps its gun and fires every turn it can
    walk    drives in wide circles, fires when the gun is cool
    sleepy  spins, but sleeps --late-s seconds on every 7th turn (to miss the turn timeout)
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from typing import Any

from robocode_tank_royale.bot_api import Bot, BotInfo
from robocode_tank_royale.bot_api.events import (
    DeathEvent,
    GameEndedEvent,
    GameStartedEvent,
    RoundEndedEvent,
    RoundStartedEvent,
    SkippedTurnEvent,
    WonRoundEvent,
)


class LoggingBot(Bot):
    """Logs the server's game events to a JSON-lines file; `act` sets a turn's commands, `run` sends them.

    A `Bot` with a run loop, not a `BaseBot` acting in on_tick: the bot API dispatches events only from
    go(), so a BaseBot that calls go() only in its handlers never hears of a tick.
    """

    def __init__(self, name: str, url: str, secret: str | None, log_path: str, late_s: float = 0.0) -> None:
        super().__init__(BotInfo(name=name, version="1.0", authors=["saclstm tests"]), url, secret)
        self.log_file = open(log_path, "a", buffering=1)  # noqa: SIM115 - lives as long as the process
        self.lock = threading.Lock()
        self.late_s = late_s

    def note(self, event: str, **fields: Any) -> None:
        with self.lock:
            self.log_file.write(json.dumps({"event": event, "t": time.monotonic(), **fields}) + "\n")

    def on_game_started(self, e: GameStartedEvent) -> None:
        self.note("game_started", my_id=e.my_id, rounds=e.game_setup.number_of_rounds)

    def on_round_started(self, e: RoundStartedEvent) -> None:
        self.note("round_started", round=e.round_number)

    def on_skipped_turn(self, e: SkippedTurnEvent) -> None:
        self.note("skipped_turn", turn=e.turn_number)

    def on_death(self, e: DeathEvent) -> None:
        self.note("death", turn=e.turn_number)

    def on_won_round(self, e: WonRoundEvent) -> None:
        self.note("won_round", turn=e.turn_number)

    def on_round_ended(self, e: RoundEndedEvent) -> None:
        self.note("round_ended", round=e.round_number, turn=e.turn_number, rank=e.results.rank,
                  total=e.results.total_score)

    def on_game_ended(self, e: GameEndedEvent) -> None:
        self.note("game_ended", rounds=e.number_of_rounds, rank=e.results.rank, total=e.results.total_score)

    def run(self) -> None:
        while self.running:
            self.act(self.turn_number)
            self.go()

    def act(self, turn: int) -> None:
        raise NotImplementedError


class Spin(LoggingBot):
    def act(self, turn: int) -> None:
        self.turn_rate = 10
        self.gun_turn_rate = 20
        self.set_fire(3)


class Walk(LoggingBot):
    def act(self, turn: int) -> None:
        self.target_speed = 6
        self.turn_rate = 4
        self.radar_turn_rate = 45
        if self.gun_heat == 0:
            self.set_fire(3)


class Sleepy(Spin):
    def act(self, turn: int) -> None:
        super().act(turn)
        if turn % 7 == 3:
            time.sleep(self.late_s)


KINDS: dict[str, type[LoggingBot]] = {"spin": Spin, "walk": Walk, "sleepy": Sleepy}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=sorted(KINDS))
    ap.add_argument("--name", required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--secret", default=None)
    ap.add_argument("--log", required=True)
    ap.add_argument("--late-s", type=float, default=0.2)
    args = ap.parse_args()
    KINDS[args.kind](args.name, args.url, args.secret, args.log, args.late_s).start()


if __name__ == "__main__":
    main()
