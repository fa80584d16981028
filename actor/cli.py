"""`saclstm actor` / `python -m actor`: run bots over a Gymnasium environment."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from actor.config import ActorConfig
from protocol.config import add_flags, describe, load_or_exit


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="saclstm actor", description="Run the actor daemon: K bots over a Gymnasium "
                                "environment, experience to the learner, weights from it.")
    p.add_argument("--config", help="TOML file; the [actor] table is read")
    p.add_argument("--eval", dest="eval_flag", action="store_true", help="eval mode (same as --eval-mode true)")
    p.add_argument("--report", help="write a JSON summary (returns, counts) here at exit")
    add_flags(p, ActorConfig)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.eval_flag:
        args.eval_mode = "true"
    cfg = load_or_exit(ActorConfig, args, "actor", "saclstm actor")
    logging.basicConfig(level=cfg.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("saclstm.actor")
    log.info("effective configuration:\n%s", describe(cfg))
    if cfg.eval_mode:
        log.info("EVAL MODE: deterministic actions; no experience and no episode starts are sent")
    from actor.daemon import ActorDaemon

    try:
        daemon = ActorDaemon(cfg)
    except ValueError as exc:  # bad env, bad obs mask, unusable key file
        print(f"saclstm actor: {exc}", file=sys.stderr)
        return 2
    daemon.run()
    if args.report:
        returns = [r for c in daemon.clients for r in c.returns]
        with open(args.report, "w") as fh:
            json.dump({"sender": daemon.link.sender, "steps": daemon.steps, "returns": returns,
                       "sent": daemon.link.sent, "dropped": daemon.link.dropped,
                       "version": daemon.link.version(), "weights_received": daemon.link.weights.received,
                       "first_weights_s": daemon.link.first_weights_s(),
                       "versions_seen": list(daemon.link.weights.arrivals),  # as they arrived, not sorted
                       "flow_waits": daemon.link.flow_waits, "flow_wait_s": daemon.link.flow_wait_s}, fh)
    return 0
