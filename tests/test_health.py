"""The health record (protocol/health.py): the wire map it writes, how it decodes one, and its readers.

The learner's real map is checked end to end in tests/test_monitoring.py (it decodes, and writes back equal).
"""

from __future__ import annotations

import copy
import io
import re
from pathlib import Path
from typing import Any

import msgpack
import pytest

from protocol.health import ActorHealth, Health, HealthReader

SPEC = Path(__file__).resolve().parent.parent / "protocol" / "SPEC.md"

# The documented keys (SPEC.md, "Metrics socket"), written out here on purpose: renaming a field of the
# record renames its wire key, and every reader of the map would then read a default without a word.
KEYS = {"time", "uptime_s", "version", "session", "grad_steps", "env_steps", "episodes", "utd_target",
        "utd_achieved", "updates_per_s", "ingest_tps", "actors", "losses", "unread_s", "debt", "untrained_steps",
        "threads", "rejects", "policy_lag", "replay", "recent_return", "saver", "returns", "utd_window", "utd_window_steps"}
ACTOR_KEYS = {"sender", "age_s", "alive", "received", "rejected", "sent", "dropped", "lost_msgs", "late_msgs", "gaps",
              "round", "episodes", "bots", "eval_bots", "bye", "held_s", "labels_late"}
NESTED_KEYS = {"policy_lag": {"p50", "p90", "max"}, "replay": {"transitions", "capacity", "bytes", "cleared",
                                                                          "with_state"},
               "saver": {"saves", "skipped", "failures", "restarts", "busy", "last_ms", "last_path", "pid", "alive"}}

# A map as a learner with a checkpoint saver, a thread tuner and two actors sends it (msgpack: lists, not tuples).
WIRE: dict[str, Any] = {
    "time": 1764770000.25, "uptime_s": 42.5, "version": 7, "session": 2**53 - 1, "grad_steps": 900, "env_steps": 1200,
    "episodes": 5, "utd_target": 1.0, "utd_achieved": 0.9, "updates_per_s": 21.5, "ingest_tps": 30.0,
    "actors": [
        {"sender": "a0", "age_s": 0.25, "alive": True, "received": 600, "rejected": 16, "sent": 616, "dropped": 0,
         "lost_msgs": 0, "late_msgs": 1, "gaps": 0, "round": 2, "episodes": 3, "bots": ["0", "1"], "eval_bots": [],
         "bye": False, "held_s": 12.5, "labels_late": 3},
        {"sender": "ev", "age_s": 12.0, "alive": False, "received": 600, "rejected": 0, "sent": 600, "dropped": 4,
         "lost_msgs": 2, "late_msgs": 0, "gaps": 1, "round": 0, "episodes": 2, "bots": [], "eval_bots": ["0"],
         "bye": True, "held_s": 0.0, "labels_late": 0}],
    "losses": {"critic_loss": 0.5, "actor_loss": -1.25, "alpha": 0.1}, "unread_s": 0.01, "debt": 3.5,
    "untrained_steps": 0, "threads": {"threads": 2, "switches": 1, "probes": 4, "median_ms": 3.25},
    "rejects": {"undecodable": 2}, "policy_lag": {"p50": 1.0, "p90": 2.0, "max": 3.0},
    "replay": {"transitions": 1100, "capacity": 5000, "bytes": 123456, "cleared": 0, "with_state": 0.5},
    "recent_return": -812.5,
    "saver": {"saves": 3, "skipped": 0, "failures": 0, "restarts": 0, "busy": False, "last_ms": 12.5,
              "last_path": "/tmp/x.sacl", "pid": 4242, "alive": True},
    "returns": [[1764769990.0, -900.0, False], [1764769995.5, -800.0, True]], "utd_window": 0.98,
    "utd_window_steps": 2016,
}


def test_round_trip_through_msgpack_is_exact() -> None:
    health = Health.from_wire(WIRE)
    assert health.actors[1] == ActorHealth("ev", 12.0, False, 600, 0, 600, 4, 2, 0, 1, 0, 2, (), ("0",), True)
    assert health.held_s == 12.5 and health.utd_window == 0.98
    assert health.saver is not None and health.saver.last_ms == 12.5 and health.policy_lag.max == 3.0
    assert health.returns[1] == (1764769995.5, -800.0, True)
    wire = msgpack.unpackb(msgpack.packb(health.to_wire()), strict_map_key=False)
    assert wire == WIRE and Health.from_wire(wire) == health
    assert isinstance(wire["threads"]["threads"], int)  # numbers keep their wire type
    assert Health.from_wire({**WIRE, "saver": None, "recent_return": None}).to_wire()["saver"] is None


def test_wire_keys_are_the_documented_ones() -> None:
    wire = Health.from_wire(WIRE).to_wire()
    assert set(wire) == KEYS
    assert all(set(a) == ACTOR_KEYS for a in wire["actors"])
    assert {k: set(wire[k]) for k in NESTED_KEYS} == NESTED_KEYS
    section = SPEC.read_text().split("## Metrics socket", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`([a-z_0-9]+)`", section))
    assert KEYS | ACTOR_KEYS | set().union(*NESTED_KEYS.values()) <= documented, "a wire key SPEC.md does not name"
    assert "protocol.health.Health" in section


def _without(path: tuple[str | int, ...]) -> dict[str, Any]:
    wire = copy.deepcopy(WIRE)
    *parents, key = path
    node: Any = wire
    for p in parents:
        node = node[p]
    del node[key]
    return wire


@pytest.mark.parametrize("path, default", [
    (("ingest_tps",), 0.0), (("losses",), {}), (("unread_s",), 0.0), (("debt",), 0.0), (("untrained_steps",), 0),
    (("threads",), {}), (("saver",), None), (("actors", 0, "gaps"), 0), (("replay", "with_state"), 0.0),
    (("utd_window",), 0.0), (("utd_window_steps",), 0), (("actors", 0, "held_s"), 0.0),
    (("actors", 0, "labels_late"), 0)])
def test_a_key_an_older_learner_does_not_send_takes_its_default(path: tuple[str | int, ...], default: Any) -> None:
    wire = Health.from_wire(_without(path)).to_wire()
    node: Any = wire
    for p in path:
        node = node[p]
    assert node == default


@pytest.mark.parametrize("path, named", [
    (("utd_achieved",), "utd_achieved is missing"), (("actors", 1, "received"), "actors[1].received is missing"),
    (("replay", "bytes"), "replay.bytes is missing")])
def test_a_missing_key_every_learner_sends_is_an_error_naming_it(path: tuple[str | int, ...], named: str) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        Health.from_wire(_without(path))


@pytest.mark.parametrize("change, named", [
    ({"grad_steps": 1.5}, "grad_steps must be an int, not float"),
    ({"utd_achieved": "0.9"}, "utd_achieved must be a number, not str"),
    ({"version": True}, "version must be an int, not bool"),
    ({"recent_return": [1.0]}, "recent_return must be a number, not list"),
    ({"actors": [{**WIRE["actors"][0], "alive": 1}]}, "actors[0].alive must be a bool, not int"),
    ({"actors": {"a0": {}}}, "actors must be a list, not dict"),
    ({"losses": {"critic_loss": None}}, "losses.critic_loss must be a number, not NoneType"),
    ({"rejects": {1: 2}}, "rejects key must be a string, not int"),
    ({"saver": {**WIRE["saver"], "pid": "4242"}}, "saver.pid must be an int, not str"),
    ({"returns": [[1.0, 2.0]]}, "returns[0] must have 3 entries, not 2"),
    ({"policy_lag": [1, 2, 3]}, "policy_lag must be a map, not list")])
def test_a_wrong_type_is_an_error_naming_the_key(change: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        Health.from_wire({**WIRE, **change})


def test_a_map_that_is_not_a_map_and_keys_from_a_newer_learner() -> None:
    with pytest.raises(ValueError, match="the health map must be a map, not list"):
        Health.from_wire([WIRE])
    assert Health.from_wire({**WIRE, "added_later": 1}) == Health.from_wire(WIRE)


def test_reader_keeps_the_last_good_record_and_reports_each_reason_once() -> None:
    said: list[str] = []
    reader = HealthReader(said.append)
    assert reader.latest == Health() and reader.take(WIRE)
    assert not reader.take({**WIRE, "grad_steps": "x"}) and not reader.take({**WIRE, "grad_steps": "y"})
    assert reader.latest == Health.from_wire(WIRE) and reader.skipped == 2
    assert len(said) == 1 and "grad_steps must be an int" in said[0]


def test_readers_render_a_decoded_record() -> None:
    from rich.console import Console

    from deploy.monitor import _table
    from deploy.progress import ProgressView

    out = io.StringIO()
    Console(file=out, width=200).print(_table(Health.from_wire(WIRE)))
    text = out.getvalue()
    assert "UTD 0.90 / 1" in text and "return -812.5" in text and "saves 3 failed 0" in text and "bye" in text
    view = ProgressView(2000, enabled=False)
    view.console = Console(file=(out := io.StringIO()), width=200)
    view.update(Health.from_wire(WIRE))
    assert "env steps 1,200/2,000" in out.getvalue() and "return -812" in out.getvalue() and "drops 4" in out.getvalue()


def test_prometheus_series_come_from_the_record() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from learner.prometheus import HealthCollector

    collector = HealthCollector()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    assert generate_latest(registry) == b""  # nothing before the first record
    collector.update(Health.from_wire(WIRE))
    text = generate_latest(registry).decode()
    for series in ("saclstm_grad_steps_total 900.0", "saclstm_updates_per_second 21.5",
                   'saclstm_policy_lag{quantile="0.9"} 2.0', 'saclstm_rejects_total{reason="undecodable"} 2.0',
                   'saclstm_actor_dropped_steps_total{actor="ev"} 4.0', 'saclstm_actor_alive{actor="ev"} 0.0',
                   "saclstm_checkpoint_saves_total 3.0", "saclstm_checkpoint_last_save_seconds 0.0125",
                   "saclstm_critic_loss 0.5", "saclstm_episode_return_recent -812.5"):
        assert series in text, series


def test_every_watcher_keeps_the_newest_record_and_its_age() -> None:
    """One reader for every watcher: the launchers and the monitor feed it maps, the Prometheus endpoint the
    learner's records; /healthz is 503 until a record came, 200 while the newest is fresh."""
    import math
    import urllib.error
    import urllib.request

    from learner.prometheus import HealthServer

    reader = HealthReader(lambda _: None)
    assert reader.updated is None and reader.age_s() == math.inf
    assert not reader.take({**WIRE, "grad_steps": "x"}) and reader.age_s() == math.inf  # a bad map is no news
    assert reader.take(WIRE) and 0 <= reader.age_s() < 5
    server = HealthServer("127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{server.port}/healthz"
    try:
        with pytest.raises(urllib.error.HTTPError, match="503"):
            urllib.request.urlopen(url, timeout=10)
        server.collector.update(Health.from_wire(WIRE))
        assert server.collector.reader.latest == reader.latest
        with urllib.request.urlopen(url, timeout=10) as reply:
            assert reply.status == 200
    finally:
        server.stop()
