"""A scripted opponent as a bot on the official Python bot API, against a real game server.

    python -m actor.bots.tankroyale.opponents SpinBot --server ws://127.0.0.1:7654

The policy decides on the view the bot API's objects give (view_from_api), as it does in TankRoyale-v0
on the engine's maps, and its Intent becomes the bot API's orders (apply_intent).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

from actor.bots.tankroyale.engine import Intent
from actor.bots.tankroyale.opponents.policy import REGISTRY, make
from actor.bots.tankroyale.opponents.view import view_from_api

# A new round's standing orders on the engine (and the official server): none given, nothing adjusted.
FRESH = Intent(target_speed=0.0, turn_rate=0.0, gun_turn_rate=0.0, radar_turn_rate=0.0, adjust_gun_for_body_turn=False,
               adjust_radar_for_body_turn=False, adjust_radar_for_gun_turn=False)


def apply_intent(bot: Any, intent: Intent) -> None:
    """Set a bot API bot's orders from an Intent (None leaves an order as it was, as on the wire)."""
    for field in ("target_speed", "turn_rate", "gun_turn_rate", "radar_turn_rate", "adjust_gun_for_body_turn",
                  "adjust_radar_for_body_turn", "adjust_radar_for_gun_turn"):
        value = getattr(intent, field)
        if value is not None:
            setattr(bot, field, value)
    if intent.firepower:  # the bot API refuses a shot while the gun is hot and clears it once fired
        bot.set_fire(intent.firepower)
    if intent.rescan:
        bot.set_rescan()


def bot(name: str, server_url: str | None = None, server_secret: str | None = None, seed: int = 0) -> Any:
    """The opponent `name` as a bot on the official API (imported here: the environment never needs it).

    A `Bot` whose run loop only calls go(): the bot API dispatches a turn's events from go(), the
    TickEvent first, and on_tick sets the orders that the next go() sends. (A BaseBot calling go() in
    its handlers would never be told of a tick: nothing dispatches its events.)
    """
    from robocode_tank_royale.bot_api import Bot, BotInfo

    from actor.bots.tankroyale.botapi import cheaper_messages, end_on_clean_close

    end_on_clean_close()  # a server shutting down cleanly ends start(), not the process's exit
    cheaper_messages()
    policy = make(name)

    class OpponentBot(Bot):
        def __init__(self) -> None:
            about = (policy.__doc__ or "").split(":")[0][:200]
            info = BotInfo(name=name, version="1.0", authors=["saclstm"], description=about,
                           game_types={"classic", "melee", "1v1"}, platform="Python", programming_lang="Python")
            super().__init__(info, server_url, server_secret)
            self.policy, self.arena, self.round = policy, (800.0, 600.0), 0
            self.policy.reset(np.random.default_rng(seed))

        def on_game_started(self, e: Any) -> None:
            self.arena, self.round = (e.game_setup.arena_width, e.game_setup.arena_height), 0

        def on_tick(self, e: Any) -> None:
            if e.round_number != self.round:
                self.new_round(e.round_number)
            if e.bot_state is not None:
                apply_intent(self, self.policy.act(view_from_api(e.bot_state, e.events, e.turn_number, self.arena)))

        def new_round(self, round_number: int) -> None:
            """On a round's first tick, not in on_round_started: the bot API may hand over the tick first. The
            orders start from the engine's fresh ones: the bot API keeps last round's until after the first
            intent of this one is sent, so a field the policy leaves unset would carry them over."""
            self.round = round_number
            self.policy.reset(np.random.default_rng([seed, round_number]))
            apply_intent(self, FRESH)

        def run(self) -> None:
            while self.running:
                self.go()

    return OpponentBot()


def main(argv: list[str] | None = None) -> int:
    """No server at the URL is one line and exit 1; `--retry-s` waits for one, and for its return."""
    from actor.bots.tankroyale.cli import wait_for_server

    p = argparse.ArgumentParser(prog="python -m actor.bots.tankroyale.opponents",
                                description="Run a scripted Tank Royale opponent against a game server.")
    p.add_argument("name", choices=sorted(REGISTRY), help="the opponent (also its bot name in the game)")
    p.add_argument("--server", default="ws://localhost:7654", help="game server URL")
    p.add_argument("--secret", default=None, help="the server's bot secret, if any")
    p.add_argument("--seed", type=int, default=0, help="seed for the opponents that use chance")
    p.add_argument("--retry-s", type=float, default=0.0, help="wait up to this long for the server, at start and "
                   "whenever it goes away (0: exit when there is none)")
    args = p.parse_args(argv)
    from protocol.lifeline import hold

    hold()  # started by tank-train or tank-eval: end when it ends
    while True:
        if not wait_for_server(args.server, args.retry_s):
            print(f"opponents: no game server answers at {args.server}", file=sys.stderr)
            return 1
        try:
            b = bot(args.name, args.server, args.secret, args.seed)
        except ImportError as exc:
            print(f"opponents: needs the Tank Royale bot API (pip install 'saclstm[tankroyale]'): {exc}",
                  file=sys.stderr)
            return 2
        b.start()  # returns when the server closes the connection
        if args.retry_s <= 0:
            return 0
