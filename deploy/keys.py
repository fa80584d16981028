"""`saclstm keys`: CURVE key pairs for a learner and its actors, and the flags that use them."""

from __future__ import annotations

import argparse


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="saclstm keys", description="Generate CURVE key pairs for a learner and its "
                                "actors.")
    sub = p.add_subparsers(dest="cmd", required=True)
    gen = sub.add_parser("generate", help="write server.key(_secret), clientN.key(_secret) and allowed/")
    gen.add_argument("dir")
    gen.add_argument("--clients", type=int, default=1, help="client key pairs to make (one per host or actor)")
    return p


def main(argv: list[str] | None = None) -> int:
    from protocol.curve import generate

    args = parser().parse_args(argv)
    for path in generate(args.dir, args.clients):
        print(path)
    print(f"learner: --curve-secret {args.dir}/server.key_secret --curve-allowed {args.dir}/allowed\n"
          f"actor:   --curve-server-key {args.dir}/server.key --curve-secret {args.dir}/client0.key_secret")
    return 0
