"""The `saclstm` command: one argparse tree, a subcommand per daemon or tool.

Each command's module owns its parser (`python -m learner` and `saclstm learner` share it); the tree is
built from those parsers, so `saclstm --help` and every `saclstm COMMAND --help` come from one definition.
Building it imports each command's module, none of which loads torch (~0.3 s in all).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    name: str
    module: str
    parser: str = "parser"  # the module's function that builds the command's parser
    main: str = "main"  # the module's function that runs it on its own argv

    def load(self, attr: str) -> Callable:
        return getattr(importlib.import_module(self.module), attr)


COMMANDS = (
    Command("learner", "learner.cli"),
    Command("actor", "actor.cli"),
    Command("tank", "actor.bots.tankroyale.cli"),
    Command("tank-train", "deploy.tank.train"),
    Command("tank-eval", "deploy.tank.evaluate"),
    Command("run", "deploy.launcher"),
    Command("demo", "deploy.launcher", parser="demo_parser", main="demo"),
    Command("ckpt", "deploy.ckpt"),
    Command("keys", "deploy.keys"),
    Command("monitor", "deploy.monitor"),
    Command("plot", "deploy.plot"),
)


def summary(description: str | None) -> str:
    """A command's one-line help: its description up to the first colon, full stop, semicolon or parenthesis."""
    text = " ".join((description or "").split())
    cut = min((i for i in (text.find(": "), text.find(". "), text.find("; "), text.find(" (")) if i >= 0), default=len(text))
    return text[:cut].rstrip(".")


def tree() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="saclstm", description="Train recurrent (LSTM) Soft Actor-Critic agents from "
                                  "bots that play in real time.",
                                  epilog="`saclstm COMMAND --help` shows each command's flags.")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", title="commands", required=True)
    for c in COMMANDS:
        own: argparse.ArgumentParser = c.load(c.parser)()
        sub.add_parser(c.name, parents=[own], add_help=False, help=summary(own.description),
                       description=own.description, epilog=own.epilog, formatter_class=own.formatter_class)
    return top


def main(argv: list[str] | None = None) -> int:
    from protocol.lifeline import hold

    hold()  # started by one of ours (launcher, battle, tests): end when it ends, the way SIGTERM ends us
    argv = sys.argv[1:] if argv is None else argv
    args = tree().parse_args(argv)  # usage errors and --help, at any level, from the one tree
    command = next(c for c in COMMANDS if c.name == args.command)
    return int(command.load(command.main)(argv[1:]))


if __name__ == "__main__":
    sys.exit(main())
