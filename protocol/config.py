"""Run configuration: frozen dataclasses filled from TOML, then environment, then CLI.

Both daemons use this loader, so every knob is set the same three ways:
a key in the daemon's TOML table, an environment variable SACLSTM_<KEY>
(the original Nim bot's SACLSTM_UTD_RATIO, SACLSTM_BATCH_SIZE, ... keep working), and a
flag --<key-with-dashes>. A bad value fails at start with the key, the value
and the reason: never a crash an hour into a run.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

T = TypeVar("T")
ENV_PREFIX = "SACLSTM_"


class ConfigError(ValueError):
    """A configuration value that cannot work; the message names the key."""

    def __init__(self, key: str, value: Any, reason: str) -> None:
        self.key = key
        super().__init__(f"config: {key} = {value!r}: {reason}")


def help_of(f: dataclasses.Field) -> str:
    return str(f.metadata.get("help", ""))


def _base_type(tp: Any) -> Any:
    """The concrete type of a field annotation (Optional[X] -> X)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else str
    return tp


def _convert(key: str, raw: Any, tp: Any) -> Any:
    base = _base_type(tp)
    if raw is None or (isinstance(raw, str) and raw.lower() in ("none", "null") and base is not str):
        if base is not tp:  # Optional
            return None
        raise ConfigError(key, raw, "a value is required")
    try:
        if base is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off", ""):
                return False
            raise ValueError("expected true or false")
        if base is int:
            if isinstance(raw, float) and not raw.is_integer():
                raise ValueError("expected an integer")
            return int(raw)
        if base is float:
            return float(raw)
        if typing.get_origin(base) is tuple:
            items = raw if isinstance(raw, (list, tuple)) else [x for x in str(raw).split(",") if x.strip()]
            inner = typing.get_args(base)[0]
            return tuple(_convert(key, x, inner) for x in items)
        return str(raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(key, raw, str(exc)) from None


def retired(cls: type) -> dict[str, str]:
    """A config class's retired keys (its RETIRED map, key -> why): still named, so a config that sets one fails
    with the reason rather than as an unknown key."""
    return dict(getattr(cls, "RETIRED", {}))


def build(cls: type[T], *layers: Mapping[str, Any]) -> T:
    """Instantiate `cls` from layered mappings (later wins); unknown and retired keys are errors."""
    names = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for layer in layers:
        for key, raw in layer.items():
            name = key.replace("-", "_")
            if name in retired(cls):
                raise ConfigError(key, raw, retired(cls)[name])
            if name not in names:
                close = [n for n in names if n.split("_")[0] == name.split("_")[0]]
                raise ConfigError(key, raw, f"unknown key{'; did you mean ' + ', '.join(close) if close else ''}")
            values[name] = _convert(name, raw, hints[name])
    try:
        return cls(**values)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(cls.__name__, None, str(exc)) from None


def from_env(cls: type, env: Mapping[str, str]) -> dict[str, str]:
    """The SACLSTM_<KEY> variables that name fields of `cls`."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k[len(ENV_PREFIX):].lower(): v for k, v in env.items()
            if k.startswith(ENV_PREFIX) and k[len(ENV_PREFIX):].lower() in names}


def read_toml(path: str | Path | None, table: str) -> dict[str, Any]:
    """One table of a run's TOML file ({} when no file is given)."""
    if path is None:
        return {}
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError("--config", str(path), "no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("--config", str(path), f"not valid TOML: {exc}") from None
    section = doc.get(table, {})
    if not isinstance(section, dict):
        raise ConfigError(table, section, "expected a table")
    return section


def add_flags(parser: argparse.ArgumentParser, cls: type, file_values: Mapping[str, Any] | None = None,
              file_name: str = "") -> None:
    """One --flag per field, every flag optional (None = not given), help from the field's doc; a retired key's
    flag is accepted but hidden, so that `build` can say why it went. `file_values`: the values a command's
    default config file (`file_name`) sets, which apply when no --config is given: the help shows those beside
    the code's own."""
    for f in dataclasses.fields(cls):
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not dataclasses.MISSING else None
        shown = f"default: {default!r}"
        if file_values and f.name in file_values and file_values[f.name] != default:
            shown = f"default: {file_values[f.name]!r}, {file_name}'s; {default!r} in a --config without the key"
        parser.add_argument(flag, dest=f.name, default=None, metavar=f.name.upper(), help=f"{help_of(f)} ({shown})")
    for name in retired(cls):
        parser.add_argument("--" + name.replace("_", "-"), dest=name, default=None, help=argparse.SUPPRESS)


def given_flags(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    names = [f.name for f in dataclasses.fields(cls)] + list(retired(cls))
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def load(cls: type[T], args: argparse.Namespace, env: Mapping[str, str], table: str) -> T:
    """TOML (from args.config), then environment, then flags."""
    return build(cls, read_toml(getattr(args, "config", None), table), from_env(cls, env), given_flags(args, cls))


def load_or_exit(cls: type[T], args: argparse.Namespace, table: str, prog: str) -> T:
    """`load` for a daemon's main(): a bad value prints the key and the reason and exits with status 2."""
    import os

    try:
        return load(cls, args, os.environ, table)
    except ConfigError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def describe(cfg: Any) -> str:
    """The effective configuration, one key per line, for the start-up log."""
    return "\n".join(f"  {f.name} = {getattr(cfg, f.name)!r}" for f in dataclasses.fields(cfg))


def check(condition: bool, key: str, value: Any, reason: str) -> None:
    """Validation helper for __post_init__: the reason says what the bad value would cause."""
    if not condition:
        raise ConfigError(key, value, reason)
