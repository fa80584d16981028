"""Scripted opponents the game server plays itself: no bot process, no WebSocket, the same rules.

A bot process on the official bot API costs a game more than the opponent's decision: the server
writes a TickEventForBot for it every turn, the bot API parses it on its threads and sends a BotIntent
back that the server parses again. A house bot skips all of that: the server hands it the engine's turn,
the policy decides on the same view (`act_on_turn`, as TankRoyale-v0 plays it in process), and its
Intent goes into the turn as a wire intent would. It joins the bot list like any bot (its address is
`HOST`, port 1, 2, ...), so a controller chooses it by name as it would a connected one; it is ready at
once, never skipped, and never leaves. Chance comes from the seed and the round number only, as the
bot-process twin seeds it (opponents/bot.py), so a house bot plays the rounds its twin plays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actor.bots.tankroyale.engine import Intent, Turn
from actor.bots.tankroyale.opponents import act_on_turn, make

HOST = "in-process"  # the address a house bot joins the bot list with (a port per bot: 1, 2, ...)


class HouseBot:
    """One scripted opponent played by the server: `game_started`, then `round` and `act` on each turn of a round
    (`round` resets the policy before its first `act`)."""

    def __init__(self, name: str, seed: int = 0) -> None:
        self.policy = make(name)  # ValueError for an unknown name, before the server starts
        self.name, self.seed = name, seed
        self.playing = 0  # the round being played (0: none yet in this game)

    def handshake(self, session_id: str) -> dict[str, Any]:
        """What the bot-process twin's bot API says of it (name, version, platform...)."""
        about = (self.policy.__doc__ or "").split(":")[0][:200]
        return {"type": "BotHandshake", "sessionId": session_id, "name": self.name, "version": "1.0",
                "authors": ["saclstm"], "description": about, "gameTypes": ["classic", "melee", "1v1"],
                "platform": "Python (in the server)", "programmingLang": "Python"}

    def game_started(self) -> None:
        self.playing = 0

    def round(self, round_number: int) -> None:
        """Called before each act: a round's first turn starts the policy afresh, as its twin's first tick does."""
        if round_number != self.playing:
            self.playing = round_number
            self.policy.reset(np.random.default_rng([self.seed, round_number]))

    def act(self, bot_id: int, turn: Turn, arena: tuple[float, float]) -> Intent:
        return act_on_turn(self.policy, bot_id, turn, arena)
