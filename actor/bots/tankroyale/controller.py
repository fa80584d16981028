"""A Tank Royale controller: the official controller messages, to our server or the official one.

It connects (ServerHandshake -> ControllerHandshake with the controller secret), keeps the server's
BotListUpdate, waits until the named bots have joined, starts a game (StartGame: gameSetup and the
chosen bots' addresses, ids following that order), streams ticks and round results to callbacks and
returns the game's results. Blocking, one thread, no event loop to share:

    with Controller("ws://127.0.0.1:7654", secret="c") as ctl:
        bots = ctl.wait_for_bots(["saclstm-tank", "SpinBot"], timeout=30)
        game = ctl.play(Setup(number_of_rounds=3), bots, on_round=print)
        game.results   # GameEndedEventForObserver results, ranked

    python -m actor.bots.tankroyale.controller --url ws://127.0.0.1:7654 --secret c --bots saclstm-tank,SpinBot
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from actor.bots.tankroyale.engine import Setup
from actor.bots.tankroyale.protocol_tr import dumps

Callback = Callable[[dict[str, Any]], None]


class ControllerError(RuntimeError):
    """The server refused us, went away or said something we cannot use."""


class GameAborted(ControllerError):
    """The server aborted the game (a controller stopped it, or its bots left or were not ready)."""


@dataclass(frozen=True)
class GameRecord:
    """What a played game left: the final results (ranked) and each round's RoundEndedEventForObserver."""

    number_of_rounds: int
    results: list[dict[str, Any]]
    rounds: list[dict[str, Any]] = field(default_factory=list)
    participants: list[dict[str, Any]] = field(default_factory=list)


class Controller:
    """One controller connection. Not thread-safe: use it from one thread."""

    def __init__(self, url: str, secret: str | None = None, name: str = "saclstm-controller",
                 version: str = "0.1.0", timeout: float = 10.0) -> None:
        self.url = url
        self.bots: list[dict[str, Any]] = []
        self._stack = contextlib.ExitStack()  # websockets >= 17.1 wants connect() entered as a context
        try:
            self.ws: ClientConnection = self._stack.enter_context(
                connect(url, open_timeout=timeout, compression=None, max_size=1 << 24))
        except (OSError, TimeoutError) as e:
            raise ControllerError(f"cannot connect to {url}: {e}") from e
        try:
            hello = self._recv(timeout)
            if hello.get("type") != "ServerHandshake":
                raise ControllerError(f"expected ServerHandshake, got {hello.get('type')!r}")
            self.server: dict[str, Any] = hello
            self.send({"type": "ControllerHandshake", "sessionId": hello["sessionId"], "name": name,
                       "version": version, "author": "saclstm", **({"secret": secret} if secret else {})})
            self._recv_until({"BotListUpdate"}, timeout)  # the server's answer to a handshake it accepts
        except BaseException:
            self.close()
            raise

    # -- plumbing -----------------------------------------------------------------------------

    def send(self, msg: dict[str, Any]) -> None:
        try:
            self.ws.send(dumps(msg))
        except ConnectionClosed as e:
            raise ControllerError(f"server closed the connection: {_why(e)}") from e

    def _recv(self, timeout: float | None) -> dict[str, Any]:
        """The next message (BotListUpdate also refreshes `bots`); TimeoutError when none comes in time."""
        try:
            raw = self.ws.recv(timeout)
        except ConnectionClosed as e:
            raise ControllerError(f"server closed the connection: {_why(e)}") from e
        msg = json.loads(raw)
        if not isinstance(msg, dict):
            raise ControllerError(f"server sent a non-object: {raw!r:.80}")
        if msg.get("type") == "BotListUpdate":
            self.bots = list(msg.get("bots") or [])
        return msg

    def _recv_until(self, kinds: set[str], timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            msg = self._recv(max(0.0, deadline - time.monotonic()))
            if msg.get("type") in kinds:
                return msg

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Controller:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- commands -----------------------------------------------------------------------------

    def wait_for_bots(self, names: Sequence[str], timeout: float = 30.0) -> list[dict[str, Any]]:
        """One joined bot (`bot-info`) per name, in the names' order; a name twice wants two such bots."""
        deadline = time.monotonic() + timeout
        while True:
            chosen = pick_bots(self.bots, names)
            if chosen is not None:
                return chosen
            left = deadline - time.monotonic()
            if left <= 0:
                joined = sorted(str(b.get("name")) for b in self.bots)
                raise TimeoutError(f"bots {list(names)} did not all join in {timeout:g} s (joined: {joined})")
            try:
                self._recv(left)
            except TimeoutError:
                pass

    def play(self, setup: Setup, bots: Sequence[dict[str, Any] | str], *, on_round: Callback | None = None,
             on_tick: Callback | None = None, timeout: float | None = None, join_timeout: float = 30.0
             ) -> GameRecord:
        """Start a game of `bots` (bot-infos or names) and follow it to its end; stops it on timeout."""
        infos = self._resolve(bots, join_timeout)
        self.send({"type": "StartGame",
                   "gameSetup": setup.to_schema(),
                   "botAddresses": [{"host": b["host"], "port": b["port"]} for b in infos]})
        deadline = None if timeout is None else time.monotonic() + timeout
        rounds: list[dict[str, Any]] = []
        participants: list[dict[str, Any]] = []
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                self.stop_game()
                raise TimeoutError(f"game did not end in {timeout:g} s ({len(rounds)} rounds played)")
            try:
                msg = self._recv(left)
            except TimeoutError:
                continue
            kind = msg.get("type")
            if kind == "GameStartedEventForObserver":
                participants = list(msg.get("participants") or [])
            elif kind == "TickEventForObserver" and on_tick is not None:
                on_tick(msg)
            elif kind == "RoundEndedEventForObserver":
                rounds.append(msg)
                if on_round is not None:
                    on_round(msg)
            elif kind == "GameEndedEventForObserver":
                return GameRecord(int(msg.get("numberOfRounds") or len(rounds)), list(msg.get("results") or []),
                                  rounds, participants)
            elif kind == "GameAbortedEvent":
                raise GameAborted(f"the server aborted the game after {len(rounds)} rounds")

    def _resolve(self, bots: Sequence[dict[str, Any] | str], timeout: float) -> list[dict[str, Any]]:
        if all(isinstance(b, dict) for b in bots):
            return [b for b in bots if isinstance(b, dict)]
        return self.wait_for_bots([b if isinstance(b, str) else str(b.get("name")) for b in bots], timeout)

    def stop_game(self) -> None:
        self.send({"type": "StopGame"})

    def pause(self) -> None:
        self.send({"type": "PauseGame"})

    def resume(self) -> None:
        self.send({"type": "ResumeGame"})

    def change_tps(self, tps: int) -> None:
        self.send({"type": "ChangeTps", "tps": tps})


def pick_bots(joined: Sequence[dict[str, Any]], names: Sequence[str]) -> list[dict[str, Any]] | None:
    """A distinct joined bot per name (oldest listed first), or None while some name has none."""
    free = list(joined)
    chosen = []
    for name in names:
        match = next((b for b in free if b.get("name") == name), None)
        if match is None:
            return None
        free.remove(match)
        chosen.append(match)
    return chosen


def _why(e: ConnectionClosed) -> str:
    rcvd = e.rcvd
    return f"code {rcvd.code}, {rcvd.reason!r}" if rcvd is not None else "no close frame"


# -- command line ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m actor.bots.tankroyale.controller",
                                 description="Start a Tank Royale game and print its results (JSON lines).")
    ap.add_argument("--url", default="ws://127.0.0.1:7654")
    ap.add_argument("--secret", default=None, help="controller secret")
    ap.add_argument("--bots", required=True, help="comma-separated bot names (a name twice: two such bots)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--arena", default="800x600", help="WIDTHxHEIGHT")
    ap.add_argument("--game-type", default="classic")
    ap.add_argument("--turn-timeout-us", type=int, default=30_000)
    ap.add_argument("--ready-timeout-us", type=int, default=1_000_000)
    ap.add_argument("--join-timeout", type=float, default=60.0, help="seconds to wait for the bots to join")
    ap.add_argument("--timeout", type=float, default=None, help="seconds for the whole game (then StopGame)")
    args = ap.parse_args(argv)
    width, height = (int(v) for v in args.arena.lower().split("x"))
    setup = Setup(arena_width=width, arena_height=height, number_of_rounds=args.rounds, game_type=args.game_type,
                  turn_timeout_us=args.turn_timeout_us, ready_timeout_us=args.ready_timeout_us)

    def on_round(msg: dict[str, Any]) -> None:
        print(json.dumps({"round": msg.get("roundNumber"), "turns": msg.get("turnNumber"),
                          "results": msg.get("results")}), flush=True)
    try:
        with Controller(args.url, args.secret) as ctl:
            bots = ctl.wait_for_bots([n for n in args.bots.split(",") if n], args.join_timeout)
            game = ctl.play(setup, bots, on_round=on_round, timeout=args.timeout)
    except (ControllerError, TimeoutError) as e:
        print(f"controller: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"numberOfRounds": game.number_of_rounds, "results": game.results}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
