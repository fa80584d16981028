"""`saclstm tank`: run the saclstm Tank Royale tank against a real server."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from actor.config import ActorConfig
from protocol.config import ConfigError, add_flags, build, load_or_exit, read_toml


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="saclstm tank", description="A Robocode Tank Royale tank that trains with "
                                "saclstm: connects to a game server and to a learner.")
    p.add_argument("--server", default=os.environ.get("SERVER_URL", "ws://localhost:7654"), help="game server URL")
    p.add_argument("--server-secret", default=os.environ.get("SERVER_SECRET"), help="the server's bot secret, if any")
    p.add_argument("--name", default="saclstm-tank", help="the tank's name in the game")
    p.add_argument("--config", help="TOML file: [actor] for the client, [tank] for reward weights")
    p.add_argument("--eval", dest="eval_flag", action="store_true", help="play deterministically, send nothing")
    add_flags(p, ActorConfig)
    args = p.parse_args(argv)
    if args.eval_flag:
        args.eval_mode = "true"
    if args.flow is None:
        args.flow = "realtime"  # a game at 30 turns per second never waits for the learner
    cfg = load_or_exit(ActorConfig, args, "actor", "saclstm tank")
    try:
        from actor.bots.tankroyale.brain import TankRewards
        from actor.bots.tankroyale.tank import SaclstmTank, spec
        from actor.client import BotClient

        rewards = build(TankRewards, read_toml(args.config, "tank"), {})
    except ImportError as exc:
        print(f"saclstm tank: needs the Tank Royale bot API (pip install 'saclstm[tankroyale]'): {exc}", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"saclstm tank: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=cfg.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from robocode_tank_royale.bot_api import BotInfo

    client = BotClient.connect(cfg, args.name, *spec())
    tank = SaclstmTank(client, rewards, BotInfo(name=args.name, version="0.1.0", authors=["saclstm"]), args.server,
                       args.server_secret)
    try:
        tank.start()
    finally:
        client.close()
    return 0



