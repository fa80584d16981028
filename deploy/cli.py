"""The `saclstm` command: one entry point, a subcommand per daemon or tool."""

from __future__ import annotations

import sys
from collections.abc import Callable

USAGE = """usage: saclstm COMMAND [ARGS]

commands:
  learner   run the learner daemon (train from experience, publish weights)
  actor     run the actor daemon (bots over Gymnasium environments)
  tank      a Robocode Tank Royale tank that trains with saclstm
  tank-train  train the tank in battles: learner, tanks, opponents, our game server
  tank-eval   play a checkpoint deterministically against an opponent (and the baselines)
  run       start a learner and N actors locally from one TOML file
  demo      the built-in default run: Pendulum-V, one learner, two actors
  ckpt      list, inspect, verify or promote checkpoint files
  keys      generate CURVE key pairs for a learner and its actors
  monitor   watch a learner's metrics socket (dashboard, or --json)
  plot      learning curves from a metrics JSONL file

`saclstm COMMAND --help` shows each command's flags."""


def _commands() -> dict[str, Callable[[list[str]], int]]:
    def learner(argv: list[str]) -> int:
        from learner.cli import main
        return main(argv)

    def actor(argv: list[str]) -> int:
        from actor.cli import main
        return main(argv)

    def run(argv: list[str]) -> int:
        from deploy.launcher import main
        return main(argv)

    def demo(argv: list[str]) -> int:
        from deploy.launcher import demo
        return demo(argv)

    def ckpt(argv: list[str]) -> int:
        from deploy.ckpt import main
        return main(argv)

    def monitor(argv: list[str]) -> int:
        from deploy.monitor import main
        return main(argv)

    def plot(argv: list[str]) -> int:
        from deploy.plot import main
        return main(argv)

    def tank(argv: list[str]) -> int:
        from actor.bots.tankroyale.cli import main
        return main(argv)

    def tank_train(argv: list[str]) -> int:
        from actor.bots.tankroyale.train import main
        return main(argv)

    def tank_eval(argv: list[str]) -> int:
        from actor.bots.tankroyale.evaluate import main
        return main(argv)

    def keys(argv: list[str]) -> int:
        import argparse

        from protocol.curve import generate

        p = argparse.ArgumentParser(prog="saclstm keys", description="CURVE keys for a learner and its actors.")
        sub = p.add_subparsers(dest="cmd", required=True)
        gen = sub.add_parser("generate", help="write server.key(_secret), clientN.key(_secret) and allowed/")
        gen.add_argument("dir")
        gen.add_argument("--clients", type=int, default=1, help="client key pairs to make (one per host or actor)")
        args = p.parse_args(argv)
        for path in generate(args.dir, args.clients):
            print(path)
        print(f"learner: --curve-secret {args.dir}/server.key_secret --curve-allowed {args.dir}/allowed\n"
              f"actor:   --curve-server-key {args.dir}/server.key --curve-secret {args.dir}/client0.key_secret")
        return 0

    return {"learner": learner, "actor": actor, "run": run, "demo": demo, "ckpt": ckpt, "monitor": monitor,
            "plot": plot, "keys": keys, "tank": tank, "tank-train": tank_train, "tank-eval": tank_eval}


def main(argv: list[str] | None = None) -> int:
    from protocol.lifeline import hold

    hold()  # started by one of ours (launcher, battle, tests): end when it ends, the way SIGTERM ends us
    argv = sys.argv[1:] if argv is None else argv
    commands = _commands()
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] not in commands:
        print(f"saclstm: unknown command {argv[0]!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
