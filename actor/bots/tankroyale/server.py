"""A headless Robocode Tank Royale game server speaking the official WebSocket protocol.

Official bots (any bot API, unmodified), observers and controllers connect to it as they would to the
official server; the rules are `engine.Engine`'s. One asyncio loop owns everything: connections, the
game, the turn clock, so there are no locks and a turn is one engine step plus the sends.

    handle = run_server(port=0, bot_secrets="b", controller_secrets="c", tps=-1, seed=7)   # in a thread
    ... handle.port, handle.url, handle.stats ...
    handle.close()

    python -m actor.bots.tankroyale.server --port 7654 --bot-secret b --controller-secret c --tps -1

House bots (`--house SpinBot,Walls`, house.py): scripted opponents the server plays itself, in its own
process; they join the bot list at address in-process:1, :2, ... and a controller chooses them as any bot.

A game (started by a controller's StartGame): GameStartedEventForBot to each chosen bot (ids 1..n in
the order of the start-game's botAddresses), wait for their BotReady (ready timeout), GameStartedEvent-
ForObserver, then per turn: RoundStartedEvent on turn 1, else SkippedTurnEvent to each live bot whose
intent did not arrive during the last turn; TickEventForBot to each bot; TickEventForObserver; Round-
EndedEventFor{Bot,Observer} after a round's last tick; GameEndedEventFor{Bot,Observer} after the last.
The next turn comes after 1/TPS seconds at the earliest (none with TPS -1) and as soon as every live,
connected bot's intent is in, or when the turn timeout has passed; a round's last turn too, as there: a
survivor's answer to the last tick, which may leave only as it reads the round's end, is taken (and
dropped) in that turn, not merged into the next round's first (measured before: in 3 of 6 three-round
games as fast as the bots answer, a bot process's first turn of a round carried its last round's orders).
Results, as the official server sends them: a round's end carries the game's results so far (not the
round's alone), a bot's own results carry its place in the official server's unsorted list
(engine.results_for_bot).

Robustness: a frame that is not a protocol message (binary, not JSON, unknown type, wrong field
types), a message the client's role may not send, a wrong secret or session id: logged (the first few
per connection), counted in `stats`, dropped; an unidentified connection that sends one is closed
(1008), as is any connection sending a frame over `max_message_bytes` (1009, counted as malformed).
A bot that disconnects mid-game stands still from then on (as the official server zeroes its intent),
the others play on; the game is aborted only when all of its connected bots have gone (house bots alone
play for no one).

Where this server differs from the official one (1.x, as read from its sources):
- Rules, scores and start positions are engine.py's; the random start positions come from the seed
  (`--seed`; game k of a server run uses seed + k), so a game is reproducible.
- Default TPS is -1 (as fast as the bots answer); the official default is 30. TPS 0 pauses, as there.
- Only controllers may send game commands (the official server accepts them from any connection);
  an observer's or bot's command is counted as unexpected and dropped. A second StartGame while a game
  runs is refused (the official one replaces the game).
- A bot's handshake must carry its own connection's session id (the official server accepts any live
  one). Unidentified connections must hand-shake within `handshake_timeout_s` or are closed.
- A bot that dies on a turn still gets that turn's tick (with its DeathEvent); the official server's
  sendTickToParticipants skips bots no longer alive, so there the dying bot gets no tick that turn.
- Bots not ready at the ready timeout are left out and the engine is rebuilt for those that are, as
  there (so start positions differ from the ones announced in GameStartedEventForBot, as there).
- A bot-intent with a wrong type or a non-finite number is dropped whole (and counted); two intents
  in one turn are merged field by field, as there.
- No teams, droid energy, team messages, debug graphics, initial positions or BotPolicyUpdate (accepted,
  ignored); std_out/std_err and colours in intents are ignored; no `features` in the handshake.
- Messages a malformed client sends never stop the server (the official one exits on an unknown type).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, broadcast, serve
from websockets.exceptions import ConnectionClosed

from actor.bots.tankroyale import protocol_tr as p
from actor.bots.tankroyale.engine import Engine, Intent, Participant, Setup, Turn
from actor.bots.tankroyale.house import HOST, HouseBot

log = logging.getLogger("saclstm.tankroyale.server")

STAT_KEYS = ("connections", "handshakes_bot", "handshakes_observer", "handshakes_controller", "refused_secret",
             "refused_session", "refused_no_handshake", "malformed", "unexpected", "bots_left_in_game",
             "games_started", "games_ended", "games_aborted", "rounds", "turns", "intents", "skipped_turns",
             "errors")
LOGGED_REJECTS_PER_CLIENT = 3
POLICY_VIOLATION = 1008
MESSAGE_TOO_BIG = 1009

EngineFactory = Callable[[Setup, list[Participant], int], Any]


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 7654
    bot_secrets: tuple[str, ...] = ()
    controller_secrets: tuple[str, ...] = ()
    game_types: tuple[str, ...] = p.GAME_TYPES
    tps: int = -1
    seed: int = 0
    setup: Setup = field(default_factory=Setup)
    handshake_timeout_s: float = 10.0
    max_message_bytes: int = 1 << 20
    house: tuple[str | tuple[str, int], ...] = ()  # scripted opponents this server plays itself (house.py): a name,
    house_seed: int = 0  # seeded with house_seed (round r of a game plays rng([seed, r]), as their bot processes
    # do with --seed), or (name, seed)


@dataclass(eq=False)
class Client:
    ws: ServerConnection | None  # None for a house bot
    session_id: str
    host: str
    port: int
    kind: str = "new"  # new | bot | observer | controller
    handshake: dict[str, Any] = field(default_factory=dict)
    bot_id: int | None = None  # in the running game
    rejects: int = 0
    house: HouseBot | None = None  # a scripted opponent played here, not over a connection

    @property
    def name(self) -> str:
        who = f"{self.handshake.get('name', '')} {self.handshake.get('version', '')}".strip() or "unidentified"
        return f"{who} ({self.kind} {self.host}:{self.port})"


@dataclass(eq=False)
class Game:
    setup: Setup
    setup_schema: dict[str, Any]
    seed: int
    bots: dict[int, Client]
    engine: Any = None
    turn: Turn | None = None
    state: str = "preparing"  # preparing | running | ended | stopped
    paused: bool = False
    step_once: bool = False
    ready: set[int] = field(default_factory=set)
    left: set[int] = field(default_factory=set)
    alive: set[int] = field(default_factory=set)
    pending: dict[int, Intent] = field(default_factory=dict)
    sent: set[int] = field(default_factory=set)
    skipped: set[int] = field(default_factory=set)
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def connected(self) -> set[int]:
        return set(self.bots) - self.left

    def house_ids(self) -> set[int]:
        return {i for i, c in self.bots.items() if c.house is not None}

    def all_intents_in(self) -> bool:
        return (self.alive - self.left) <= self.sent

    def participants(self) -> list[Participant]:
        return [Participant(i, c.handshake["name"], c.handshake["version"]) for i, c in self.bots.items()]


class GameServer:
    """The server's state and message handling; runs on one asyncio loop."""

    def __init__(self, config: ServerConfig, engine_factory: EngineFactory | None = None) -> None:
        self.config = config
        self.engine_factory: EngineFactory = engine_factory or Engine
        self.stats: dict[str, int] = dict.fromkeys(STAT_KEYS, 0)
        self.clients: dict[ServerConnection, Client] = {}
        self.game: Game | None = None
        self.tps = config.tps
        self.last_setup: dict[str, Any] | None = None
        self._tasks: set[asyncio.Task] = set()
        self.house = [self._house_bot(bot, port) for port, bot in enumerate(config.house, 1)]

    def _house_bot(self, entry: str | tuple[str, int], port: int) -> Client:
        name, seed = (entry, self.config.house_seed) if isinstance(entry, str) else entry
        bot, session_id = HouseBot(name, seed), p.new_session_id()
        return Client(None, session_id, HOST, port, "bot", bot.handshake(session_id), house=bot)

    # -- connections --------------------------------------------------------------------------

    async def handle(self, ws: ServerConnection) -> None:
        host, port = ws.remote_address[:2]
        client = Client(ws, p.new_session_id(), str(host), int(port))
        self.clients[ws] = client
        self.stats["connections"] += 1
        asyncio.get_running_loop().call_later(self.config.handshake_timeout_s, self._handshake_deadline, client)
        try:
            self._send(client, p.server_handshake(client.session_id, self.config.game_types, self.last_setup))
            async for raw in ws:
                self._on_frame(client, raw)
        except ConnectionClosed as e:
            if e.sent is not None and e.sent.code == MESSAGE_TOO_BIG:
                self.stats["malformed"] += 1
                log.warning("closed %s: a frame over %d bytes", client.name, self.config.max_message_bytes)
        except Exception:  # never let one connection take the server down
            self.stats["errors"] += 1
            log.exception("connection %s failed", client.name)
        finally:
            del self.clients[ws]
            self._on_gone(client)

    def _handshake_deadline(self, client: Client) -> None:
        if client.kind == "new" and client.ws in self.clients:
            self._refuse(client, "refused_no_handshake", "no handshake in time")

    def _on_frame(self, client: Client, raw: str | bytes) -> None:
        try:
            msg = p.parse(raw)
            kind = msg["type"]
            if client.kind == "new":
                if kind in p.HANDSHAKES:
                    self._on_handshake(client, msg)
                else:
                    self._refuse(client, "refused_no_handshake", f"{kind} before a handshake")
            elif client.kind == "bot" and kind in p.BOT_MESSAGES:
                self._on_bot_message(client, msg)
            elif client.kind == "controller" and kind in p.CONTROLLER_MESSAGES:
                self._on_command(client, msg)
            else:
                self._reject(client, "unexpected", f"{kind} from a {client.kind}")
        except p.ProtocolError as e:
            self._reject(client, "malformed", str(e))

    def _reject(self, client: Client, stat: str, why: str) -> None:
        """Count and drop; an unidentified client is refused altogether."""
        if client.kind == "new":
            self._refuse(client, stat, why)
            return
        self.stats[stat] += 1
        client.rejects += 1
        if client.rejects <= LOGGED_REJECTS_PER_CLIENT:
            log.warning("dropped a message from %s: %s: %s", client.name, stat, why)

    def _refuse(self, client: Client, stat: str, why: str) -> None:
        self.stats[stat] += 1
        log.warning("refused %s: %s", client.name, why)
        if client.ws is not None:  # always so: only a connection is refused
            self._spawn(client.ws.close(POLICY_VIOLATION, why[:120]))

    def _on_handshake(self, client: Client, msg: dict[str, Any]) -> None:
        p.check_handshake(msg)
        kind = {"BotHandshake": "bot", "ObserverHandshake": "observer", "ControllerHandshake": "controller"}
        role = kind[msg["type"]]
        if msg["sessionId"] != client.session_id:
            self._refuse(client, "refused_session", "Missing session id")
            return
        secrets = self.config.bot_secrets if role == "bot" else self.config.controller_secrets
        if secrets and msg.get("secret") not in secrets:
            self._refuse(client, "refused_secret", "Invalid secret")
            return
        client.kind, client.handshake = role, {k: v for k, v in msg.items() if k != "secret"}
        self.stats[f"handshakes_{role}"] += 1
        log.info("%s joined", client.name)
        if role == "bot":
            self._broadcast(self._watchers(), self._bot_list())
        else:
            self._send(client, self._bot_list())

    def _on_gone(self, client: Client) -> None:
        game = self.game
        if client.kind != "bot":
            return
        log.info("%s left", client.name)
        if game is not None and client.bot_id is not None and game.state in ("preparing", "running"):
            game.left.add(client.bot_id)
            self.stats["bots_left_in_game"] += 1
            game.wake.set()
            if not game.connected - game.house_ids():  # house bots alone play for no one: abort as when all left
                self._abort(game, "all bots left" if not game.connected else "every connected bot left")
        self._broadcast(self._watchers(), self._bot_list())

    # -- bots and controllers -----------------------------------------------------------------

    def _on_bot_message(self, client: Client, msg: dict[str, Any]) -> None:
        intent = p.intent_from_msg(msg) if msg["type"] == "BotIntent" else None  # malformed in or out of a game
        game, bot_id = self.game, client.bot_id
        if game is None or bot_id is None:
            return  # not in a game: the official server ignores it too
        if intent is None:
            if game.state == "preparing":
                game.ready.add(bot_id)
                game.wake.set()
            return
        if game.state != "running":
            return
        self.stats["intents"] += 1
        game.pending[bot_id] = p.merge_intent(game.pending.get(bot_id), intent)
        game.sent.add(bot_id)
        if game.all_intents_in():
            game.wake.set()

    def _on_command(self, client: Client, msg: dict[str, Any]) -> None:
        kind, game = msg["type"], self.game
        if kind == "StartGame":
            self._start_game(client, msg)
        elif kind == "StopGame" and game is not None:
            self._abort(game, f"stopped by {client.name}")
        elif kind in ("PauseGame", "ResumeGame", "NextTurn") and game is not None:
            self._pause(game, kind)
        elif kind == "ChangeTps":
            self._change_tps(msg)

    def _start_game(self, client: Client, msg: dict[str, Any]) -> None:
        if self.game is not None:
            self._reject(client, "unexpected", "StartGame while a game runs")
            return
        setup = p.setup_from_schema(msg.get("gameSetup"), self.config.setup)
        chosen = self._bots_at(p.bot_addresses(msg))
        if not chosen:
            self._reject(client, "unexpected", "StartGame names no connected bot")
            return
        seed = self.config.seed + self.stats["games_started"]
        game = Game(setup, setup.to_schema(), seed, {i: c for i, c in enumerate(chosen, 1)}, paused=self.tps == 0)
        try:
            game.engine = self.engine_factory(setup, game.participants(), seed)
        except ValueError as e:  # a setup the rules cannot play, e.g. too many bots for the arena
            raise p.ProtocolError(f"StartGame: {e}") from None
        self.last_setup = game.setup_schema
        for bot_id, bot in game.bots.items():
            bot.bot_id = bot_id
        self.game = game
        self.stats["games_started"] += 1
        log.info("game %d: %s, %d rounds, seed %d", self.stats["games_started"],
                 ", ".join(c.handshake["name"] for c in chosen), setup.number_of_rounds, seed)
        self._spawn(self._run_game(game))

    def _bots_at(self, addresses: list[tuple[str, int]]) -> list[Client]:
        bots = {(c.host, c.port): c for c in self._bots()}
        chosen: list[Client] = []
        for host, port in addresses:
            host = "127.0.0.1" if host.lower() == "localhost" else host
            bot = bots.get((host, port))
            if bot is not None and bot not in chosen:
                chosen.append(bot)
        return chosen

    def _pause(self, game: Game, kind: str) -> None:
        if kind == "PauseGame" and not game.paused:
            game.paused = True
            self._broadcast(self._watchers(), p.simple("GamePausedEventForObserver", pauseCause="pause"))
        elif kind == "ResumeGame" and game.paused:
            game.paused = False
            self._broadcast(self._watchers(), p.simple("GameResumedEventForObserver"))
        elif kind == "NextTurn" and game.paused:
            game.step_once = True
        game.wake.set()

    def _change_tps(self, msg: dict[str, Any]) -> None:
        tps = msg.get("tps")
        if isinstance(tps, bool) or not isinstance(tps, int) or tps < -1:
            raise p.ProtocolError(f"ChangeTps: 'tps' must be an integer >= -1, not {tps!r:.40}")
        if tps == self.tps:
            return
        self.tps = tps
        self._broadcast(self._watchers(), p.simple("TpsChangedEvent", tps=tps))
        if self.game is not None:
            self._pause(self.game, "PauseGame" if tps == 0 else "ResumeGame")

    # -- the game -----------------------------------------------------------------------------

    async def _run_game(self, game: Game) -> None:
        try:
            if await self._prepare(game):
                await self._play(game)
        except Exception:
            self.stats["errors"] += 1
            log.exception("game failed")
            self._abort(game, "internal error")
        finally:
            for bot in game.bots.values():
                bot.bot_id = None
            if self.game is game:
                self.game = None

    async def _prepare(self, game: Game) -> bool:
        """GameStartedEventForBot to each bot, then wait for their BotReady up to the ready timeout."""
        game.turn = game.engine.new_round()
        names = {i: c.handshake["name"] for i, c in game.bots.items()}
        for bot_id, bot in game.bots.items():
            start = game.turn.bot_states.get(bot_id)
            self._send(bot, p.game_started_for_bot(bot_id, game.setup_schema, start, names))
            if bot.house is not None:
                bot.house.game_started()
                game.ready.add(bot_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + game.setup.ready_timeout_us / 1e6
        while game.state == "preparing" and not game.connected <= game.ready:
            if not await self._wait(game, deadline - loop.time()):
                break
        ready = game.ready & game.connected
        if game.state != "preparing":
            return False
        if len(ready) < game.setup.min_number_of_participants or not ready:
            self._abort(game, f"only {len(ready)} of {len(game.bots)} bots ready")
            return False
        if ready != set(game.bots):
            log.warning("not ready in time, left out: %s", sorted(set(game.bots) - ready))
            for bot_id in set(game.bots) - ready:
                game.bots.pop(bot_id).bot_id = None
            game.engine = self.engine_factory(game.setup, game.participants(), game.seed)
            game.turn = game.engine.new_round()
        return True

    async def _play(self, game: Game) -> None:
        assert game.turn is not None
        game.state = "running"
        participants = [p.participant(i, c.handshake) for i, c in game.bots.items()]
        self._broadcast(self._watchers(), p.simple("GameStartedEventForObserver", gameSetup=game.setup_schema,
                                                   participants=participants))
        while True:
            self._publish(game, game.turn)
            if game.turn.game_ended:
                self._finish(game)
                return
            await self._wait_turn(game)
            if game.state != "running":
                return
            self._advance(game)

    async def _wait(self, game: Game, timeout: float) -> bool:
        """Sleep until something happens to the game or the timeout passes; False on timeout."""
        game.wake.clear()
        if timeout <= 0:
            return False
        try:
            await asyncio.wait_for(game.wake.wait(), timeout)
            return True
        except TimeoutError:
            return False

    async def _wait_turn(self, game: Game) -> None:
        """At least 1/TPS; then until every live bot's intent is in or the turn timeout has passed."""
        assert game.turn is not None
        loop = asyncio.get_running_loop()
        start = loop.time()
        while game.state == "running":
            if game.step_once:
                game.step_once = False
                return
            if game.paused:
                await self._wait(game, 3600.0)
                start = loop.time()
                continue
            earliest = start + (1.0 / self.tps if self.tps > 0 else 0.0)
            latest = max(earliest, start + game.setup.turn_timeout_us / 1e6)
            now = loop.time()
            if now >= earliest and (game.all_intents_in() or now >= latest):
                return
            await self._wait(game, (earliest if now < earliest else latest) - now)

    def _advance(self, game: Game) -> None:
        """Play the next turn with the intents that arrived (a new round after a round's last turn)."""
        assert game.turn is not None
        intents, sent = game.pending, game.sent
        game.pending, game.sent = {}, set()
        if game.turn.round_ended:
            game.skipped = set()
            game.turn = game.engine.new_round()
        else:
            game.skipped = (game.alive - game.left) - sent
            for bot_id in game.left:
                intents[bot_id] = p.STAND_STILL
            game.turn = game.engine.step(intents)
        self.stats["turns"] += 1

    def _publish(self, game: Game, turn: Turn) -> None:
        """One turn's messages in the official order."""
        connected = game.connected
        if turn.turn_number == 1:
            self._broadcast(self._sockets(game, connected) + self._watchers(), p.round_started(turn.round_number))
        else:
            skipped = p.dumps(p.skipped_turn(turn.turn_number - 1))
            self._broadcast(self._sockets(game, game.skipped & connected), skipped)
            self.stats["skipped_turns"] += len(game.skipped & connected)
        for bot_id in turn.bot_states:
            if bot_id in connected:
                self._send(game.bots[bot_id], p.tick_for_bot(turn, bot_id))
        watchers = self._watchers()
        if watchers:
            handshakes = {i: c.handshake for i, c in game.bots.items()}
            self._broadcast(watchers, p.tick_for_observer(turn, handshakes))
        dead = {e.get("victimId") for e in turn.observer_events if e.get("type") == "BotDeathEvent"}
        game.alive = set(turn.bot_states) - dead
        if turn.round_ended:
            self._round_ended(game, turn)
            game.sent |= game.house_ids() & game.alive  # they answer no last tick; waiting is for the others
        else:
            self._house_turn(game, turn)

    def _house_turn(self, game: Game, turn: Turn) -> None:
        """The house bots' intents for the next turn, in as a connected bot's would be on time."""
        arena = (game.setup.arena_width, game.setup.arena_height)
        for bot_id, bot in game.bots.items():
            if bot.house is None or bot_id not in game.alive:
                continue
            bot.house.round(turn.round_number)
            game.pending[bot_id] = bot.house.act(bot_id, turn, arena)
            game.sent.add(bot_id)
            self.stats["intents"] += 1

    def _round_ended(self, game: Game, turn: Turn) -> None:
        self.stats["rounds"] += 1
        for bot_id in game.connected:
            results = game.engine.results_for_bot(bot_id)
            self._send(game.bots[bot_id], p.round_ended_for_bot(turn.round_number, turn.turn_number, results))
        results = p.ranked(game.engine.results())  # the game's so far, as the official server sends them
        parts = {q.id: q for q in game.participants()}
        observed = [p.results_for_observer(e, parts) for e in results if e.get("id") in parts]
        self._broadcast(self._watchers(), p.round_ended_for_observer(turn.round_number, turn.turn_number, observed))

    def _finish(self, game: Game) -> None:
        results = p.ranked(game.engine.results())
        rounds = game.turn.round_number if game.turn else game.setup.number_of_rounds
        parts = {q.id: q for q in game.participants()}
        for bot_id in game.connected:
            self._send(game.bots[bot_id], p.game_ended_for_bot(rounds, game.engine.results_for_bot(bot_id)))
        observed = [p.results_for_observer(e, parts) for e in results if e.get("id") in parts]
        game.state = "ended"
        self.stats["games_ended"] += 1
        self._broadcast(self._watchers(), p.game_ended_for_observer(rounds, observed))
        log.info("game ended: %s; stats %s", json.dumps([(e["name"], e["totalScore"]) for e in observed]),
                 json.dumps(self.stats))

    def _abort(self, game: Game, why: str) -> None:
        if game.state in ("ended", "stopped"):
            return
        game.state = "stopped"
        game.wake.set()
        self.stats["games_aborted"] += 1
        log.warning("game aborted: %s", why)
        self._broadcast(self._sockets(game, game.connected) + self._watchers(), p.simple("GameAbortedEvent"))
        if self.game is game:
            self.game = None
            for bot in game.bots.values():
                bot.bot_id = None

    # -- sending ------------------------------------------------------------------------------

    def _bots(self) -> list[Client]:
        """Every bot that may be chosen for a game: the connected ones, then the house's."""
        return [c for c in self.clients.values() if c.kind == "bot"] + self.house

    def _sockets(self, game: Game, ids: Iterable[int]) -> list[ServerConnection]:
        """The connections of the game's bots `ids` (house bots have none)."""
        return [ws for i in ids if (ws := game.bots[i].ws) is not None]

    def _watchers(self) -> list[ServerConnection]:
        return [c.ws for c in self.clients.values() if c.kind in ("observer", "controller") and c.ws is not None]

    def _bot_list(self) -> dict[str, Any]:
        bots = [p.bot_info(c.handshake, c.host, c.port) for c in self._bots()]
        return p.simple("BotListUpdate", bots=bots)

    def _send(self, client: Client, msg: dict[str, Any]) -> None:
        if client.ws is not None:  # a house bot is told of the game by _house_turn, not by messages
            broadcast([client.ws], p.dumps(msg))

    def _broadcast(self, conns: list[ServerConnection], msg: dict[str, Any] | str) -> None:
        if conns:
            broadcast(conns, msg if isinstance(msg, str) else p.dumps(msg))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def serve(self, started: Callable[[Server], None] | None = None,
                    stop: asyncio.Future | None = None) -> None:
        """Listen until `stop` resolves (forever without one)."""
        async with serve(self.handle, self.config.host, self.config.port, compression=None,
                         max_size=self.config.max_message_bytes) as server:
            log.info("listening on %s:%d (TPS %d, seed %d)", self.config.host, _bound_port(server), self.tps,
                     self.config.seed)
            if started is not None:
                started(server)
            await (stop if stop is not None else asyncio.get_running_loop().create_future())
            for task in list(self._tasks):
                task.cancel()


def _bound_port(server: Server) -> int:
    return int(next(iter(server.sockets)).getsockname()[1])


# -- in-process handle ----------------------------------------------------------------------------


class ServerHandle:
    """A server running on its own thread and loop; `close()` stops it (idempotent)."""

    def __init__(self, server: GameServer) -> None:
        self.server = server
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Future | None = None
        self._listening = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="tankroyale-server", daemon=True)

    @property
    def url(self) -> str:
        return f"ws://{self.server.config.host}:{self.port}"

    @property
    def stats(self) -> dict[str, int]:
        return dict(self.server.stats)  # fixed keys: a copy is safe from another thread

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._stop = self._loop.create_future()

        def started(server: Server) -> None:
            self.port = _bound_port(server)
            self._listening.set()
        try:
            self._loop.run_until_complete(self.server.serve(started, self._stop))
        except BaseException as e:  # reported by start()
            self._failure = e
        finally:
            self._listening.set()
            self._loop.close()

    def start(self, timeout: float = 10.0) -> ServerHandle:
        self._thread.start()
        if not self._listening.wait(timeout) or self._failure is not None or not self.port:
            raise RuntimeError(f"server did not start: {self._failure!r}")
        return self

    def close(self, timeout: float = 10.0) -> None:
        if self._thread.is_alive() and self._stop is not None:
            stop = self._stop
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(lambda: None if stop.done() else stop.set_result(None))
            self._thread.join(timeout)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _secrets(value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def run_server(host: str = "127.0.0.1", port: int = 0, *, bot_secrets: str | Iterable[str] | None = None,
               controller_secrets: str | Iterable[str] | None = None, tps: int = -1, seed: int = 0,
               setup: Setup | None = None, engine_factory: EngineFactory | None = None,
               game_types: Iterable[str] = p.GAME_TYPES, handshake_timeout_s: float = 10.0,
               house: Iterable[str | tuple[str, int]] = (), house_seed: int = 0) -> ServerHandle:
    """Start a server on a thread; port 0 picks a free one (read it from `.port`). `house`: scripted opponents
    it plays itself (house.py), by name (seeded with `house_seed`) or as (name, seed)."""
    config = ServerConfig(host=host, port=port, bot_secrets=_secrets(bot_secrets),
                          controller_secrets=_secrets(controller_secrets), game_types=tuple(game_types), tps=tps,
                          seed=seed, setup=setup or Setup(), handshake_timeout_s=handshake_timeout_s,
                          house=tuple(house), house_seed=house_seed)
    return ServerHandle(GameServer(config, engine_factory)).start()


# -- command line ---------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m actor.bots.tankroyale.server", description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=7654, help="0 picks a free port (printed)")
    ap.add_argument("--bot-secret", action="append", default=[], help="accepted bot secret (repeatable; none: any)")
    ap.add_argument("--controller-secret", action="append", default=[],
                    help="accepted controller/observer secret (repeatable; none: any)")
    ap.add_argument("--tps", type=int, default=-1, help="turns per second; -1 as fast as the bots answer")
    ap.add_argument("--seed", type=int, default=0, help="game k of this run uses seed + k")
    ap.add_argument("--game-types", default=",".join(p.GAME_TYPES))
    ap.add_argument("--house", default="", metavar="NAME,NAME", help="scripted opponents the server plays itself, "
                    "no bot process needed (any of python -m actor.bots.tankroyale.opponents --help's names)")
    ap.add_argument("--house-seed", type=int, default=0, help="their chance: round r plays rng([seed, r])")
    ap.add_argument("--log-level", default="INFO")
    return ap


async def _main_async(args: argparse.Namespace, house: tuple[str, ...]) -> GameServer:
    config = ServerConfig(host=args.host, port=args.port, bot_secrets=tuple(args.bot_secret),
                          controller_secrets=tuple(args.controller_secret), tps=args.tps, seed=args.seed,
                          game_types=tuple(t for t in args.game_types.split(",") if t),
                          house=house, house_seed=args.house_seed)
    server = GameServer(config)
    loop = asyncio.get_running_loop()
    stop = loop.create_future()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda: None if stop.done() else stop.set_result(None))

    def started(ws_server: Server) -> None:
        print(f"listening on ws://{args.host}:{_bound_port(ws_server)}", flush=True)
    await server.serve(started, stop)
    return server


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from actor.bots.tankroyale.opponents import OPPONENTS

    house = tuple(n for n in args.house.split(",") if n)
    unknown = [n for n in house if n not in OPPONENTS]
    if unknown:
        print(f"server: --house: unknown opponents {unknown}; known: {', '.join(OPPONENTS)}", file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    server = asyncio.run(_main_async(args, house))
    print(json.dumps({"stats": server.stats}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
