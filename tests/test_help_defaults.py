"""A command's --help prints the defaults that apply: `saclstm tank-train` reads deploy/tank.toml when no --config
is given, so its help shows that file's [battle] values, not only the code's (issue 37: it printed rounds 200,
minutes 0 and max_tps 30 while every run without --config played 0, 60 and 300)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from deploy.run import front_end
from deploy.tank.train import TANK_TOML, BattleConfig, parser, resolve


def helps(p: argparse.ArgumentParser) -> dict[str, str]:
    return {a.dest: a.help or "" for a in p._actions if a.help != argparse.SUPPRESS}


def test_tank_train_help_prints_the_values_a_run_without_config_uses() -> None:
    cfg, config = resolve(parser().parse_args([]))
    assert cfg is not None and Path(config) == TANK_TOML
    text = helps(parser())
    for f in dataclasses.fields(BattleConfig):
        assert f"(default: {getattr(cfg, f.name)!r}" in " ".join(text[f.name].split()), (f.name, text[f.name])
    assert "deploy/tank.toml" in (parser().description or "")


def test_a_value_the_file_changes_shows_the_codes_beside_it(tmp_path: Path) -> None:
    """Where the default file sets a key to something other than the code's default, both are shown; a key it
    leaves out, or sets to the code's value, shows one; a file that cannot be read leaves the code's."""
    toml = tmp_path / "kind.toml"
    toml.write_text("[battle]\nminutes = 5\ntanks = 2\n")
    text = helps(front_end("x", "", "", "tank", BattleConfig, default_config=toml, table_name="battle"))
    assert text["minutes"].endswith("(default: 5.0, " + f"{tmp_path.name}/kind.toml's; 0.0 in a --config without "
                                    "the key)"), text["minutes"]
    assert text["tanks"].endswith("(default: 2)") and text["rounds"].endswith("(default: 200)")
    toml.write_text("[battle]\nminutes = -1\n")  # not a value that can work: the command says so at start
    text = helps(front_end("x", "", "", "tank", BattleConfig, default_config=toml, table_name="battle"))
    assert text["minutes"].endswith("(default: 0.0)"), text["minutes"]
