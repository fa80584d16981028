"""`saclstm tank`: run the saclstm Tank Royale tank against a game server (ours or the official one).

No server at the URL is one line and exit 1, not a traceback; `--retry-s` waits for one instead, and
also reconnects when the server goes away mid-run (each new game starts new rounds, so new episodes).
`--fixed-action` plays the constant-action baseline (actor/bots/tankroyale/baseline.py) through the same
controls, with no network, no learner and no checkpoint: what the action's form wins without learning.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from actor.config import ActorConfig
from protocol.config import ConfigError, add_flags, build, load_or_exit, read_toml

if TYPE_CHECKING:
    import numpy as np

    from actor.bots.tankroyale.baseline import FixedActionClient
    from actor.bots.tankroyale.brain import TankControls, TankRewards
    from actor.bots.tankroyale.tank import SaclstmTank
    from actor.client import BotClient


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="saclstm tank", description="A Robocode Tank Royale tank that trains with "
                                "saclstm: connects to a game server and to a learner (with --fixed-action it plays the "
                                "constant-action baseline instead, and needs no learner).")
    p.add_argument("--server", default=os.environ.get("SERVER_URL", "ws://localhost:7654"), help="game server URL")
    p.add_argument("--server-secret", default=os.environ.get("SERVER_SECRET"), help="the server's bot secret, if any")
    p.add_argument("--name", default="saclstm-tank", help="the tank's name in the game")
    p.add_argument("--config", help="TOML file: [actor] for the client, [tank] for reward weights, [controls] for "
                   "the action's form (TankControls; a checkpoint plays as it was trained)")
    p.add_argument("--eval", dest="eval_flag", action="store_true", help="play the checkpoint or the learner's "
                   "weights and send nothing: deterministically (the policy's mean), or sampled with --eval-sample true")
    p.add_argument("--fixed-action", nargs="?", const="", metavar="A,B,C,D",
                   help="play this one action (speed, body turn, aim, fire power) every decision through the "
                   "action's form ([controls]), with no network: the baseline a learned tank is measured against. "
                   "Without a value, the form's own (FIXED_ACTIONS in actor/bots/tankroyale/baseline.py: 8,-5,0,2 "
                   "for the path aim). Like --eval it sends nothing; it needs no learner and plays no checkpoint. "
                   "A value that starts with '-' takes '=': --fixed-action=-4,0,0,2")
    p.add_argument("--retry-s", type=float, default=0.0, help="wait up to this long for the server, at start and "
                   "whenever it goes away (0: exit at once, with one line, when no server answers)")
    add_flags(p, ActorConfig)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.eval_flag or args.fixed_action is not None:
        args.eval_mode = "true"
    if args.flow is None:
        args.flow = "realtime"  # a game at 30 turns per second never waits for the learner
    cfg = load_or_exit(ActorConfig, args, "actor", "saclstm tank")
    if args.fixed_action is not None and cfg.checkpoint:
        print(f"saclstm tank: --fixed-action plays no checkpoint, but one is given ({cfg.checkpoint}): drop one of "
              "them", file=sys.stderr)
        return 2
    try:
        import actor.bots.tankroyale.tank  # noqa: F401 - the bot API, or the line below
        import actor.client  # noqa: F401
        from actor.bots.tankroyale.brain import TankControls, TankRewards

        rewards = build(TankRewards, read_toml(args.config, "tank"), {})
        controls = build(TankControls, read_toml(args.config, "controls"), {})
    except ImportError as exc:
        print(f"saclstm tank: needs the Tank Royale bot API (pip install 'saclstm[tankroyale]'): {exc}", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"saclstm tank: {exc}", file=sys.stderr)
        return 2
    if cfg.eval_mode and cfg.checkpoint:  # evaluating a file: one that cannot play stops us, not a log line
        from actor.bots.tankroyale.fits import checkpoint_problem

        if (problem := checkpoint_problem(cfg.checkpoint, controls)) is not None:
            print(f"saclstm tank: {problem}", file=sys.stderr)
            return 2
    try:
        fixed = None if args.fixed_action is None else constant_action(args.fixed_action, controls)
    except ValueError as exc:
        print(f"saclstm tank: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=cfg.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stop = Stop()  # from here, the first SIGINT or SIGTERM ends the tank the one way below
    try:
        code = play(args, cfg, fixed, rewards, controls, stop)
        stop.closing = True  # a signal from here on waits for the close below, which is bounded
        stop.close_client()
        return code
    except KeyboardInterrupt:
        stop.stopped(cfg.close_linger_s)
    return 1  # not reached: stopped() ends the process


class Stop:
    """How `saclstm tank` ends on a signal. The first SIGINT or SIGTERM (Ctrl-C, a launcher stopping us, our
    lifeline when the launcher died) raises KeyboardInterrupt in the main thread; every later one is counted and
    does nothing more, so the stop it started runs to its end: the handlers are told to send nothing more, the
    client flushes and says bye once, one line is logged, and os._exit ends the process (the bot API's socket
    thread never ends on its own). A watchdog bounds all of it."""

    def __init__(self) -> None:
        self.signals: list[int] = []
        self.closing = False  # a stop or the normal end is under way: signals raise nothing more
        self.tank: SaclstmTank | None = None
        self.client: BotClient | FixedActionClient | None = None
        self._closed = False
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._signal)

    def _signal(self, signum: int, frame: object) -> None:
        self.signals.append(signum)
        if self.closing:
            return
        self.closing = True
        raise KeyboardInterrupt

    def close_client(self) -> None:
        """Flush and say bye, once: never a second bye on a closed socket."""
        if self.client is not None and not self._closed:
            self._closed = True
            self.client.close()

    def stopped(self, linger_s: float) -> None:
        """The stop after the first signal; never returns."""
        self.closing = True
        watchdog = threading.Timer(linger_s + 5.0, os._exit, (0,))  # whatever hangs below, the process ends
        watchdog.daemon = True
        watchdog.start()
        try:
            if self.tank is not None:
                self.tank.detach()  # no handler touches the client after this: the main thread closes it
            self.close_client()
            log = logging.getLogger("saclstm.tank")
            why = signal.Signals(self.signals[0]).name if self.signals else "KeyboardInterrupt"
            extra = len(self.signals) - 1
            more = f" ({extra} more signal{'s' if extra > 1 else ''} while stopping)" if extra else ""
            tank, link = self.tank, getattr(self.client, "link", None)
            played = f": {tank.rounds} rounds, {tank.turns} turns" if tank is not None else " before any game"
            sent = f", sent {link.sent}, dropped {link.dropped}" if link is not None else ""
            log.info("tank stopped by %s%s%s%s", why, played, sent, more)
        except Exception as exc:  # the stop itself failed: still one line, and out
            print(f"saclstm tank: stopping failed: {exc!r}", file=sys.stderr)
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:  # noqa: S110 - a closed stream: nothing left to say
                    pass
            os._exit(0)


def play(args: argparse.Namespace, cfg: ActorConfig, fixed: np.ndarray | None, rewards: TankRewards,
         controls: TankControls, stop: Stop) -> int:
    """Connect and play game after game until the server goes away (and, with --retry-s, does not come back)."""
    from robocode_tank_royale.bot_api import BotInfo

    from actor.bots.tankroyale.tank import SaclstmTank, spec
    from actor.client import BotClient

    if fixed is None:
        stop.client = BotClient.connect(cfg, args.name, *spec(controls))
    else:
        from actor.bots.tankroyale.baseline import FixedActionClient, describe

        form = " ".join(f"{k}={v}" for k, v in dataclasses.asdict(controls).items())
        logging.getLogger("saclstm.tank").info("playing the constant action %s in the form %s: no network, nothing "
                                               "sent", describe(fixed), form)
        stop.client = FixedActionClient(fixed)  # no sockets: no learner is needed, and none hears of this tank
    client = stop.client
    info = BotInfo(name=args.name, version="0.1.0", authors=["saclstm"])
    while True:
        if not wait_for_server(args.server, args.retry_s):
            print(f"saclstm tank: no game server answers at {args.server}"
                  + (f" (waited {args.retry_s:.0f} s)" if args.retry_s else ""), file=sys.stderr)
            return 1
        stop.tank = SaclstmTank(client, rewards, info, args.server, args.server_secret, controls=controls)
        stop.tank.start()  # returns when the server closes the connection
        client.end_episode()  # a round cut by the server going away
        if args.retry_s <= 0:
            return 0
        logging.getLogger("saclstm.tank").info("the server went away; waiting up to %.0f s for it", args.retry_s)


def constant_action(text: str, controls: TankControls) -> np.ndarray:
    """The action `--fixed-action` asks for: the text's A,B,C,D, or the controls' form's own when it is empty.
    ValueError naming the flag and the reason for a bad value or a form with no constant action of its own."""
    from actor.bots.tankroyale.baseline import fixed_action, parse_action

    try:
        return parse_action(text) if text else fixed_action(controls)
    except ValueError as exc:
        raise ValueError(f"--fixed-action{' ' + text if text else ''}: {exc}") from None


def wait_for_server(url: str, patience_s: float) -> bool:
    """True once something accepts TCP connections at the WebSocket URL's host and port (within `patience_s`)."""
    u = urlparse(url)
    host, port = u.hostname or "localhost", u.port or (443 if u.scheme == "wss" else 80)
    deadline = time.monotonic() + patience_s
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.25)  # polling a port that is not open yet: nothing to wait on but time
