"""`saclstm learner` / `python -m learner`: parse config, print it, run the loop."""

from __future__ import annotations

import argparse
import gc
import logging
import sys

from learner.config import LearnerConfig
from protocol.config import add_flags, describe, load_or_exit


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="saclstm learner", description="Run the learner daemon: ingest experience, "
                                "train a recurrent SAC, publish actor weights.")
    p.add_argument("--config", help="TOML file; the [learner] table is read")
    add_flags(p, LearnerConfig)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    cfg = load_or_exit(LearnerConfig, args, "learner", "saclstm learner")
    logging.basicConfig(level=cfg.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("saclstm.learner").info("effective configuration:\n%s", describe(cfg))
    from learner.threads import prepare

    prepare(cfg.threads)  # OpenMP reads its wait policy once, when torch loads: before the next line
    from learner.service import Learner  # torch loads here, after the config is known to be good
    from learner.threads import flush_denormals
    from protocol.curve import KeyFileError

    flush_denormals()  # the daemon's training thread only: a process that embeds a Learner keeps its own mode

    try:
        learner = Learner(cfg)
    except KeyFileError as exc:
        print(f"saclstm learner: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"saclstm learner: {exc}", file=sys.stderr)
        return 1
    learner.run()
    # Stopped, saved, closed. The interpreter's last collections would walk every object torch's ~1,000
    # modules made: over a second of a 2 s stop on a busy machine. Frozen, they are skipped (0.4 s left).
    gc.freeze()
    return 0
