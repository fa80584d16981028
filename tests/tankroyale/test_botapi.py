"""Our repairs to the official bot API (actor/bots/tankroyale/botapi.py): the cached parse builds the same objects,
the compact intent is the same JSON.

The messages are our server's own (protocol_tr.py) over a real game of the rules engine: two bots that drive,
turn and fire until one dies, so ticks carry bullets and every kind of event the engine makes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("robocode_tank_royale")

from robocode_tank_royale.bot_api.internal import json_util  # noqa: E402

from actor.bots.tankroyale import protocol_tr as p  # noqa: E402
from actor.bots.tankroyale.botapi import _CHEAPER_PATCHED, cheaper_messages  # noqa: E402
from actor.bots.tankroyale.engine import Engine, Intent, Participant, Setup  # noqa: E402


def same(a: Any, b: Any, path: str = "$") -> None:
    """a and b hold the same values, object by object (the schema classes define no __eq__)."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, list):
        assert len(a) == len(b), f"{path}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    elif hasattr(a, "__dict__"):
        assert vars(a).keys() == vars(b).keys(), f"{path}: fields differ"
        for k in vars(a):
            same(vars(a)[k], vars(b)[k], f"{path}.{k}")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def game_messages() -> list[str]:
    """Every kind of message a bot gets in a game, as our server writes them."""
    setup = Setup(arena_width=400, arena_height=400, number_of_rounds=1, gun_cooling_rate=0.5)
    engine = Engine(setup, [Participant(1, "a"), Participant(2, "b")], seed=3)
    msgs: list[dict] = [p.server_handshake("s1", ["classic"], setup.to_schema()),
                        p.game_started_for_bot(1, setup.to_schema(), None, {1: "a", 2: "b"}), p.round_started(1),
                        p.skipped_turn(7)]
    turn = engine.new_round()
    orders = {1: Intent(turn_rate=5, gun_turn_rate=-10, radar_turn_rate=45, target_speed=8, firepower=3),
              2: Intent(turn_rate=-5, gun_turn_rate=20, radar_turn_rate=-45, target_speed=-6, firepower=1)}
    while not turn.round_ended and turn.turn_number < 3000:
        msgs += [p.tick_for_bot(turn, 1), p.tick_for_bot(turn, 2)]
        turn = engine.step(orders)
    results = engine.results_for_bot(1)
    msgs += [p.round_ended_for_bot(1, turn.turn_number, results), p.game_ended_for_bot(1, results)]
    return [p.dumps(m) for m in msgs]


def test_cached_parse_builds_the_objects_the_bot_api_builds() -> None:
    cheaper_messages()
    cheaper_messages()  # idempotent: the originals stay the ones kept
    original = getattr(json_util, _CHEAPER_PATCHED)[0]
    assert json_util._from_json_object is not original
    texts = game_messages()
    kinds = {json.loads(t)["type"] for t in texts}
    events = {e["type"] for t in texts for e in json.loads(t).get("events", [])}
    assert {"TickEventForBot", "GameStartedEventForBot", "RoundEndedEventForBot", "SkippedTurnEvent"} <= kinds
    assert {"ScannedBotEvent", "BulletFiredEvent", "BulletHitBotEvent", "BulletHitBulletEvent",
            "BotHitWallEvent"} <= events, events
    for text in texts:
        obj = json.loads(text)
        fast = json_util.from_json(text)
        slow = original(obj, json_util.schema.CLASS_MAP[obj["type"]])
        same(fast, slow)


def test_compact_intent_is_the_json_the_bot_api_writes() -> None:
    from robocode_tank_royale import schema
    from robocode_tank_royale.bot_api.internal import base_bot_internals

    cheaper_messages()
    original = getattr(json_util, _CHEAPER_PATCHED)[1]
    assert base_bot_internals.to_json is json_util.to_json is not original  # where the bot API sends intents from
    intents = [schema.BotIntent(type="BotIntent", turn_rate=1.5, gun_turn_rate=-2.0, radar_turn_rate=45.0,
                                target_speed=8.0, firepower=0.1, adjust_gun_for_body_turn=True, rescan=False),
               schema.BotIntent(type="BotIntent", body_color=schema.Color(value="#FF0000"), std_out="a\n\"b\""),
               schema.BotIntent(type="BotIntent")]
    for intent in intents:
        fast = json_util.to_json(intent)
        assert json.loads(fast) == json.loads(original(intent))
        assert len(fast) < len(original(intent))
