"""The learner's health map as typed records: built once by the learner, decoded once by whoever watches it.

The map goes out every second on the metrics socket (topic `health`; SPEC.md,
"Metrics socket") and is read by `saclstm monitor`, the launchers' progress
views and summaries, and the Prometheus collector. Read as a dict with
`.get(key, 0)`, a renamed key read as zero and nobody noticed. As records, a
reader names attributes (mypy checks them); `to_wire()` writes the map the
wire has always carried, key for key; and `from_wire()` checks a map once,
where it arrives: a key every learner sends that is missing, or a value of
the wrong type, is a ValueError naming the key. Keys a learner added later
(each record's OPTIONAL) take their defaults, so a newer watcher still reads
an older learner. Numbers keep their wire type (an int stays an int where a
float is declared), so `to_wire(from_wire(m)) == m` for any map a learner sent.

Open-ended parts stay maps: `losses` (whatever the last pass reported),
`rejects` (reason -> count) and `threads` (the tuner's figures, or just the
thread count without a tuner). Every field has a default, so `Health()` is
"nothing heard yet" (all zeros), as the watchers' empty map was.

Free of torch and numpy, like the rest of the protocol package.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Union, get_args, get_origin, get_type_hints


@dataclass(frozen=True)
class ActorHealth:
    """The learner's books on one actor process (one entry of `actors`)."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"gaps", "held_s", "labels_late"})

    sender: str = ""
    age_s: float = 0.0  # silence as of the learner's last complete read of its queue
    alive: bool = False  # heard from within dead_after_s, and no bye
    received: int = 0  # experience steps the learner accepted
    rejected: int = 0  # experience steps the learner rejected
    sent: int = 0  # as the actor reported (heartbeat, bye)
    dropped: int = 0  # as the actor reported
    lost_msgs: int = 0
    late_msgs: int = 0
    gaps: int = 0
    round: int = 0
    episodes: int = 0
    bots: tuple[str, ...] = ()
    eval_bots: tuple[str, ...] = ()
    bye: bool = False
    held_s: float = 0.0  # seconds flow control held it back, as the actor reported (heartbeat)
    labels_late: int = 0  # action targets it dropped, their step already sent, as it reported (heartbeat, 1.6)

    def to_wire(self) -> dict[str, Any]:
        return _plain(self)


@dataclass(frozen=True)
class Lag:
    """Policy lag (learner version minus acting version) over recent batches."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset()

    p50: float = 0.0
    p90: float = 0.0
    max: float = 0.0


@dataclass(frozen=True)
class ReplayHealth:
    """The learner's replay: what it holds and what was dropped from it."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"with_state"})

    transitions: int = 0
    capacity: int = 0
    bytes: int = 0  # preallocated
    cleared: int = 0  # trainable steps dropped by a clear
    with_state: float = 0.0  # share of the live chunks that start from the actor's stored state (use_stored_state)


@dataclass(frozen=True)
class SaverHealth:
    """The checkpoint saver process (absent, nil on the wire, without checkpoints)."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset()

    saves: int = 0
    skipped: int = 0
    failures: int = 0
    restarts: int = 0
    busy: bool = False
    last_ms: float = 0.0
    last_path: str = ""
    pid: int = 0
    alive: bool = False


@dataclass(frozen=True)
class Health:
    """One health map. Field order is the wire's key order."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset(
        {"ingest_tps", "losses", "unread_s", "debt", "untrained_steps", "threads", "saver", "utd_window",
         "utd_window_steps"})

    time: float = 0.0  # wall clock, seconds since the epoch
    uptime_s: float = 0.0
    version: int = 0
    session: int = 0
    grad_steps: int = 0
    env_steps: int = 0
    episodes: int = 0
    utd_target: float = 0.0
    utd_achieved: float = 0.0
    updates_per_s: float = 0.0
    ingest_tps: float = 0.0
    actors: tuple[ActorHealth, ...] = ()
    losses: dict[str, float] = field(default_factory=dict)
    unread_s: float = 0.0
    debt: float = 0.0
    untrained_steps: int = 0
    threads: dict[str, float] = field(default_factory=dict)
    rejects: dict[str, int] = field(default_factory=dict)
    policy_lag: Lag = Lag()
    replay: ReplayHealth = ReplayHealth()
    recent_return: float | None = None
    saver: SaverHealth | None = None
    returns: tuple[tuple[float, float, bool], ...] = ()  # the last 20 episodes: (time, return, eval)
    utd_window: float = 0.0  # achieved UTD over the last utd_window_steps env steps past learning_starts
    utd_window_steps: int = 0  # env steps that window spans (up to 2,000 and a pass)

    @property
    def held_s(self) -> float:
        """Seconds flow control held the actors back, all together, as they reported."""
        return sum(a.held_s for a in self.actors)

    def to_wire(self) -> dict[str, Any]:
        """The map as the metrics socket carries it (plain values: lists, maps, numbers, strings, nil)."""
        return _plain(self)

    @staticmethod
    def from_wire(wire: Any) -> Health:
        """Check and decode a map once; ValueError naming the key when a required key is missing or a type is
        wrong. Keys this version does not know are ignored (a newer learner may send more)."""
        return _decode(Health, wire, "")

    def actor(self, sender: str) -> ActorHealth | None:
        """The books on one actor, or None before the learner has heard from it."""
        return next((a for a in self.actors if a.sender == sender), None)


class HealthReader:
    """The newest record of a learner's health, for whoever watches it: `saclstm monitor` and the launchers
    (deploy/watch.py, from the metrics socket) and the learner's Prometheus endpoint (learner/prometheus.py,
    in process). A map that does not decode is counted and skipped, the last good record stays, and each
    distinct reason is reported once rather than once a second; `age_s` says how old the newest record is."""

    def __init__(self, report: Callable[[str], None]) -> None:
        self.latest = Health()
        self.skipped = 0
        self.updated: float | None = None  # time.monotonic() of the newest record; None before the first
        self._report, self._reported = report, set[str]()

    def take(self, wire: Any) -> bool:
        """Decode `wire` into `latest`; False (and `latest` unchanged) when it does not decode."""
        try:
            self.put(Health.from_wire(wire))
        except ValueError as exc:
            self.skipped += 1
            if str(exc) not in self._reported:
                self._reported.add(str(exc))
                self._report(f"skipped a health map that does not decode: {exc}")
            return False
        return True

    def put(self, health: Health) -> None:
        """A record already decoded (the learner's own)."""
        self.latest, self.updated = health, time.monotonic()

    def age_s(self) -> float:
        """Seconds since the newest record came (infinite before the first)."""
        return math.inf if self.updated is None else time.monotonic() - self.updated


def _plain(record: Any) -> dict[str, Any]:
    return {f.name: _plain_value(getattr(record, f.name)) for f in fields(record)}


def _plain_value(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(value)
    if isinstance(value, (tuple, list)):
        return [_plain_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain_value(v) for k, v in value.items()}
    return value


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _decode(cls: Any, wire: Any, path: str) -> Any:
    if not isinstance(wire, dict):
        raise ValueError(f"health: {path or 'the health map'} must be a map, not {type(wire).__name__}")
    hints, values = _hints(cls), {}
    for f in fields(cls):
        where = f"{path}.{f.name}" if path else f.name
        if f.name in wire:
            values[f.name] = _value(hints[f.name], wire[f.name], where)
        elif f.name not in cls.OPTIONAL:
            raise ValueError(f"health: {where} is missing")
    return cls(**values)


_SCALARS: dict[Any, tuple[tuple[type, ...], str]] = {
    bool: ((bool,), "a bool"), int: ((int,), "an int"), float: ((int, float), "a number"), str: ((str,), "a string")}


def _value(tp: Any, value: Any, where: str) -> Any:  # noqa: C901 - one branch per kind of annotation
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):  # X | None
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _value(inner, value, where)
    if dataclasses.is_dataclass(tp):
        return _decode(tp, value, where)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"health: {where} must be a list, not {type(value).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise ValueError(f"health: {where} must have {len(args)} entries, not {len(value)}")
        return tuple(_value(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
    if origin is dict:
        if not isinstance(value, dict):
            raise ValueError(f"health: {where} must be a map, not {type(value).__name__}")
        return {_value(args[0], k, f"{where} key"): _value(args[1], v, f"{where}.{k}") for k, v in value.items()}
    accepted, name = _SCALARS[tp]
    if not isinstance(value, accepted) or (isinstance(value, bool) and tp is not bool):
        raise ValueError(f"health: {where} must be {name}, not {type(value).__name__}")
    return value
