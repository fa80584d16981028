"""`saclstm`: one argparse tree, built from each command's own parser."""

from __future__ import annotations

import argparse

import pytest

from deploy.cli import COMMANDS, main, tree


def subparsers(top: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_has_the_same_help_in_the_tree_as_on_its_own() -> None:
    """`saclstm X --help` and `python -m <X's module> --help` print the same text: one definition."""
    subs = subparsers(tree())
    assert list(subs) == [c.name for c in COMMANDS]
    for c in COMMANDS:
        own = c.load(c.parser)()
        assert own.prog == f"saclstm {c.name}", c
        assert subs[c.name].format_help() == own.format_help(), c.name


def test_top_level_help_lists_every_command_with_its_summary(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        tree().parse_args(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for c in COMMANDS:
        assert f"    {c.name}" in out, c.name
    assert "Run the learner daemon" in out and "Generate CURVE key pairs" in out


@pytest.mark.parametrize("argv", [[], ["nope"], ["learner", "--no-such-flag"]])
def test_usage_errors_exit_2_with_the_usage(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    assert "usage: saclstm" in capsys.readouterr().err
