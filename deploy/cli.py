"""The `saclstm` command: one entry point, a subcommand per daemon or tool."""
import sys


def main(argv: list[str] | None = None) -> int:
    print("saclstm: not yet", file=sys.stderr)
    return 2
