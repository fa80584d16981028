"""The official Tank Royale WebSocket protocol's message shapes, as plain JSON maps (camelCase keys).

One place for what goes on the wire, shared by our server (server.py) and our controller (controller.py):
reading a client's text into a checked map (anything else is a ProtocolError, never a crash), turning
engine output into the official events, and the `game-setup` map both ways. Shapes follow the official
JSON schemas (`schema/schemas/*.yaml` of the official repository) and what the official Python bot API
requires when it reads them (every required field present, results as whole numbers).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from actor.bots.tankroyale.engine import Intent, Participant, Setup, Turn

# The bot API refuses a server whose major version differs from its own (1.x here).
PROTOCOL_VERSION = "1.4.0"
SERVER_NAME = "saclstm Tank Royale server"
VARIANT = "Tank Royale"
GAME_TYPES = ("classic", "melee", "1v1", "custom")

# What each kind of client may send after its handshake.
HANDSHAKES = frozenset({"BotHandshake", "ObserverHandshake", "ControllerHandshake"})
BOT_MESSAGES = frozenset({"BotIntent", "BotReady"})
CONTROLLER_MESSAGES = frozenset({"StartGame", "StopGame", "PauseGame", "ResumeGame", "NextTurn", "ChangeTps",
                                 "BotPolicyUpdate", "EnableDebugMode", "DisableDebugMode"})
CLIENT_MESSAGES = HANDSHAKES | BOT_MESSAGES | CONTROLLER_MESSAGES

# What a bot that left the game is told to do from then on (the official server zeroes its movement).
STAND_STILL = Intent(turn_rate=0.0, gun_turn_rate=0.0, radar_turn_rate=0.0, target_speed=0.0, firepower=0.0)

RESULT_FIELDS = ("rank", "survival", "lastSurvivorBonus", "bulletDamage", "bulletKillBonus", "ramDamage",
                 "ramKillBonus", "totalScore", "firstPlaces", "secondPlaces", "thirdPlaces")
BOT_INFO_FIELDS = ("sessionId", "name", "version", "authors", "description", "homepage", "countryCodes",
                   "gameTypes", "platform", "programmingLang", "initialPosition", "teamId", "teamName",
                   "teamVersion", "isDroid")


class ProtocolError(ValueError):
    """A client's message that is not a valid message of the protocol."""


def dumps(msg: Mapping[str, Any]) -> str:
    return json.dumps(msg, separators=(",", ":"), allow_nan=False)


def new_session_id() -> str:
    """16 random bytes in base64 without padding, as the official server makes them."""
    return base64.b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def parse(raw: str | bytes) -> dict[str, Any]:
    """A client's frame -> its JSON map with a known string `type`; anything else is a ProtocolError."""
    if isinstance(raw, bytes):
        raise ProtocolError("binary frame (the protocol is JSON text)")
    try:
        msg = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise ProtocolError(f"not JSON: {e}") from None
    if not isinstance(msg, dict):
        raise ProtocolError(f"not a JSON object but {type(msg).__name__}")
    kind = msg.get("type")
    if not isinstance(kind, str):
        raise ProtocolError("no string 'type'")
    if kind not in CLIENT_MESSAGES:
        raise ProtocolError(f"unknown or server-only message type {kind[:60]!r}")
    return msg


def _text(msg: Mapping[str, Any], key: str, required: bool = True) -> str | None:
    value = msg.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise ProtocolError(f"{msg.get('type')}: '{key}' must be a non-empty string")
    return value


def check_handshake(msg: Mapping[str, Any]) -> None:
    """The fields the official schemas require of a bot, observer or controller handshake."""
    _text(msg, "sessionId")
    _text(msg, "name")
    _text(msg, "version")
    _text(msg, "secret", required=False)
    if msg["type"] == "BotHandshake":
        authors = msg.get("authors")
        if not isinstance(authors, list) or not all(isinstance(a, str) for a in authors):
            raise ProtocolError("BotHandshake: 'authors' must be a list of strings")


def intent_from_msg(msg: dict[str, Any]) -> Intent:
    """A `bot-intent` map -> Intent; a wrong type or a non-finite number refuses it whole (ranges are the engine's)."""
    try:
        return Intent.from_schema(msg)
    except ValueError as e:
        raise ProtocolError(str(e)[:200]) from None


def merge_intent(old: Intent | None, new: Intent) -> Intent:
    """Two intents of one turn: the later one's set fields win (the official server merges them so)."""
    if old is None:
        return new
    changes = {k: v for k, v in vars(new).items() if v is not None}
    return replace(old, **changes)


# -- game setup ---------------------------------------------------------------------------------


_SETUP_INTS = {"arenaWidth": "arena_width", "arenaHeight": "arena_height", "numberOfRounds": "number_of_rounds",
               "maxInactivityTurns": "max_inactivity_turns", "turnTimeout": "turn_timeout_us",
               "readyTimeout": "ready_timeout_us", "minNumberOfParticipants": "min_number_of_participants",
               "maxNumberOfParticipants": "max_number_of_participants",
               "defaultTurnsPerSecond": "default_turns_per_second"}
_SETUP_LIMITS = {"turn_timeout_us": (1, 60_000_000), "ready_timeout_us": (1, 600_000_000),
                 "min_number_of_participants": (1, 1000), "max_number_of_participants": (1, 1000),
                 "default_turns_per_second": (-1, 10_000), "number_of_rounds": (1, 1_000_000)}


def setup_from_schema(gs: Any, base: Setup) -> Setup:
    """A start-game's `gameSetup` -> Setup; missing fields keep `base`'s values, bad ones are a ProtocolError."""
    if gs is None:
        return base
    if not isinstance(gs, dict):
        raise ProtocolError("StartGame: 'gameSetup' must be an object")
    fields: dict[str, Any] = {}
    for key, attr in _SETUP_INTS.items():
        value = gs.get(key)
        if value is None:
            continue
        low, high = _SETUP_LIMITS.get(attr, (0, 10_000_000))
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ProtocolError(f"StartGame: gameSetup.{key} must be an integer in [{low}, {high}], not {value!r:.40}")
        fields[attr] = value
    rate = gs.get("gunCoolingRate")
    if rate is not None:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)):
            raise ProtocolError(f"StartGame: gameSetup.gunCoolingRate must be a number, not {rate!r:.40}")
        fields["gun_cooling_rate"] = float(rate)
    game_type = gs.get("gameType")
    if game_type is not None:
        if not isinstance(game_type, str) or not game_type:
            raise ProtocolError("StartGame: gameSetup.gameType must be a string")
        fields["game_type"] = game_type
    try:
        return replace(base, **fields)  # Setup checks its own ranges
    except ValueError as e:
        raise ProtocolError(f"StartGame: {e}") from None


def bot_addresses(msg: Mapping[str, Any]) -> list[tuple[str, int]]:
    """A start-game's `botAddresses` -> [(host, port)], in the order given (the order of the bot ids)."""
    addresses = msg.get("botAddresses")
    if not isinstance(addresses, list) or not addresses:
        raise ProtocolError("StartGame: 'botAddresses' must be a non-empty list")
    out = []
    for a in addresses:
        if not (isinstance(a, dict) and isinstance(a.get("host"), str) and isinstance(a.get("port"), int)):
            raise ProtocolError("StartGame: each bot address needs a string 'host' and an integer 'port'")
        out.append((a["host"], a["port"]))
    return out


# -- server -> client ----------------------------------------------------------------------------


def server_handshake(session_id: str, game_types: Iterable[str], game_setup: dict[str, Any] | None) -> dict:
    msg: dict[str, Any] = {"type": "ServerHandshake", "sessionId": session_id, "name": SERVER_NAME,
                           "variant": VARIANT, "version": PROTOCOL_VERSION, "gameTypes": list(game_types)}
    if game_setup is not None:
        msg["gameSetup"] = game_setup
    return msg


def bot_info(handshake: Mapping[str, Any], host: str, port: int) -> dict[str, Any]:
    """A `bot-info` for bot-list-update: the handshake without its secret, plus where the bot connects from."""
    info = {k: handshake[k] for k in BOT_INFO_FIELDS if handshake.get(k) is not None}
    return {**info, "host": host, "port": port}


def game_started_for_bot(bot_id: int, setup_schema: dict, start: Mapping[str, Any] | None,
                         names: Mapping[int, str]) -> dict[str, Any]:
    msg: dict[str, Any] = {"type": "GameStartedEventForBot", "myId": bot_id, "gameSetup": setup_schema,
                           "teammateIds": [],
                           "botNames": [{"botId": i, "name": n} for i, n in sorted(names.items())]}
    if start is not None:
        msg.update(startX=start["x"], startY=start["y"], startDirection=start["direction"])
    return msg


def participant(bot_id: int, handshake: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("sessionId", "name", "version", "authors", "description", "homepage", "countryCodes", "gameTypes",
            "platform", "programmingLang", "initialPosition", "isDroid")
    return {"id": bot_id, **{k: handshake[k] for k in keys if handshake.get(k) is not None}}


def round_started(round_number: int) -> dict[str, Any]:
    return {"type": "RoundStartedEvent", "roundNumber": round_number}


def skipped_turn(turn_number: int) -> dict[str, Any]:
    return {"type": "SkippedTurnEvent", "turnNumber": turn_number}


def tick_for_bot(turn: Turn, bot_id: int) -> dict[str, Any]:
    """What one bot sees: its own state, its own bullets, its own events."""
    return {"type": "TickEventForBot", "roundNumber": turn.round_number, "turnNumber": turn.turn_number,
            "botState": turn.bot_states[bot_id],
            "bulletStates": [b for b in turn.bullets if b.get("ownerId") == bot_id],
            "events": turn.events.get(bot_id, [])}


def tick_for_observer(turn: Turn, handshakes: Mapping[int, Mapping[str, Any]]) -> dict[str, Any]:
    states = []
    for bot_id, state in turn.bot_states.items():
        hs = handshakes.get(bot_id, {})
        states.append({**state, "id": bot_id, "sessionId": hs.get("sessionId", ""), "name": hs.get("name"),
                       "version": hs.get("version")})
    return {"type": "TickEventForObserver", "roundNumber": turn.round_number, "turnNumber": turn.turn_number,
            "botStates": states, "bulletStates": turn.bullets, "events": turn.observer_events}


def results_for_bot(entry: Mapping[str, Any]) -> dict[str, int]:
    """One bot's scores with every field the schema requires, as whole numbers (the official server rounds)."""
    return {k: int(round(float(entry.get(k) or 0))) for k in RESULT_FIELDS}


def results_for_observer(entry: Mapping[str, Any], parts: Mapping[int, Participant]) -> dict[str, Any]:
    bot_id = int(entry["id"])
    p = parts.get(bot_id)
    return {"id": bot_id, "name": entry.get("name") or (p.name if p else "?"),
            "version": entry.get("version") or (p.version if p else "?"), **results_for_bot(entry)}


def ranked(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ranks 1..n in the given order where the engine left them out."""
    return [e if e.get("rank") is not None else {**e, "rank": i} for i, e in enumerate(entries, 1)]


def round_ended_for_bot(round_number: int, turn_number: int, results: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "RoundEndedEventForBot", "roundNumber": round_number, "turnNumber": turn_number,
            "results": results_for_bot(results)}


def round_ended_for_observer(round_number: int, turn_number: int, results: list[dict]) -> dict[str, Any]:
    return {"type": "RoundEndedEventForObserver", "roundNumber": round_number, "turnNumber": turn_number,
            "results": results}


def game_ended_for_bot(rounds: int, results: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "GameEndedEventForBot", "numberOfRounds": rounds, "results": results_for_bot(results)}


def game_ended_for_observer(rounds: int, results: list[dict]) -> dict[str, Any]:
    return {"type": "GameEndedEventForObserver", "numberOfRounds": rounds, "results": results}


def simple(kind: str, **fields: Any) -> dict[str, Any]:
    """A message that is its type and a few fields (GameAbortedEvent, TpsChangedEvent, ...)."""
    return {"type": kind, **fields}
