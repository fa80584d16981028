"""CURVE: only allowed keys push experience or receive weights; bad key files are refused clearly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from protocol.curve import ClientKeys, generate
from tests.procs import Procs, Watch, actor_stats, free_port

pytestmark = pytest.mark.slow

LEARNER = ("--hidden", "16", "--fc", "16", "--seq-len", "8", "--overlap", "4", "--batch-size", "8",
           "--learning-starts", "200")


def keys(tmp: Path) -> tuple[Path, Path]:
    good, bad = tmp / "keys", tmp / "intruder"
    generate(good, clients=2)  # client0: the actor, client1: the test's watcher
    generate(bad, clients=1)  # a well-formed key that is not on the allow list
    return good, bad


def test_generated_secret_files_are_private(tmp_path: Path) -> None:
    generate(tmp_path, clients=2)
    for secret in tmp_path.glob("*.key_secret"):
        assert secret.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in (tmp_path / "allowed").iterdir()) == ["client0.key", "client1.key"]


def test_only_allowed_actors_get_in(procs: Procs, eps: dict[str, str], tmp_path: Path) -> None:
    good, bad = keys(tmp_path)
    procs.learner(eps, *LEARNER, "--curve-secret", str(good / "server.key_secret"), "--curve-allowed",
                  str(good / "allowed"))
    watch = Watch(eps["metrics"], ClientKeys.load(str(good / "server.key"), str(good / "client1.key_secret")))
    actor = ("--env", "Pendulum-v1", "--max-steps", "1500", "--close-linger-s", "1")
    try:
        watch.wait(lambda h: True, 60, "the learner, over CURVE")
        runs = {
            # Paced by the learner's progress, the allowed actor lives until training publishes weights
            # (a realtime one can finish its 1500 steps before its CURVE subscription is up).
            "allowed": ("--flow", "rate-limited", "--curve-server-key", str(good / "server.key"),
                        "--curve-secret", str(good / "client0.key_secret")),
            "intruder": ("--flow", "realtime", "--curve-server-key", str(good / "server.key"),
                         "--curve-secret", str(bad / "client0.key_secret")),
            "nokeys": ("--flow", "realtime"),
        }
        procs_ = {n: procs.actor(eps, n, *actor, *extra, "--report", str(tmp_path / f"{n}.json")) for n, extra in runs.items()}
        for name, proc in procs_.items():
            assert proc.wait(timeout=120) == 0, procs.log(name)
        h = watch.wait(lambda h: (actor_stats(h, "allowed") or {}).get("bye"), 30, "the allowed actor's bye")
        allowed = json.loads((tmp_path / "allowed.json").read_text())
        assert actor_stats(h, "allowed")["received"] == allowed["sent"] > 0 and allowed["weights_received"] > 0
        for name in ("intruder", "nokeys"):
            rep = json.loads((tmp_path / f"{name}.json").read_text())
            assert actor_stats(h, name) is None, f"{name} got a message through"
            assert rep["weights_received"] == 0 and rep["sent"] == 0, rep
    finally:
        watch.close()


def test_a_secret_key_readable_by_others_is_refused(procs: Procs, eps: dict[str, str], tmp_path: Path) -> None:
    good, _ = keys(tmp_path)
    secret = good / "server.key_secret"
    os.chmod(secret, 0o644)
    proc = procs.learner(eps, *LEARNER, "--curve-secret", str(secret), "--curve-allowed", str(good / "allowed"))
    assert proc.wait(timeout=60) == 2
    assert "readable by others" in procs.log("learner") and "chmod 600" in procs.log("learner")
    client = good / "client0.key_secret"
    os.chmod(client, 0o604)
    proc = procs.actor(eps, "a", "--curve-server-key", str(good / "server.key"), "--curve-secret", str(client))
    assert proc.wait(timeout=60) == 2
    assert "readable by others" in procs.log("a")


def test_no_keys_means_loopback_only(procs: Procs, tmp_path: Path) -> None:
    port = free_port()
    proc = procs.learner({"ingest": f"tcp://0.0.0.0:{port}", "weights": f"tcp://127.0.0.1:{free_port()}",
                          "metrics": f"tcp://127.0.0.1:{free_port()}"}, *LEARNER)
    assert proc.wait(timeout=60) == 2
    assert "beyond loopback without CURVE keys" in procs.log("learner")


def _netns(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)


def test_learner_and_actors_in_separate_network_namespaces(procs: Procs, tmp_path: Path) -> None:
    """Two hosts on one machine: namespaces joined by a veth pair, learner in one, actors in the other."""
    if shutil.which("ip") is None:
        pytest.skip("iproute2's ip is not installed here")
    tag = uuid.uuid4().hex[:6]
    a, b = f"sacl-l-{tag}", f"sacl-a-{tag}"
    made = _netns("netns", "add", a)
    if made.returncode != 0:
        pytest.skip(f"ip netns does not work here: {made.stderr.strip()}")
    try:
        _netns("netns", "add", b)
        steps = [("link", "add", f"vl{tag}", "type", "veth", "peer", "name", f"va{tag}"),
                 ("link", "set", f"vl{tag}", "netns", a), ("link", "set", f"va{tag}", "netns", b),
                 ("-n", a, "addr", "add", "10.231.7.1/24", "dev", f"vl{tag}"),
                 ("-n", b, "addr", "add", "10.231.7.2/24", "dev", f"va{tag}"),
                 ("-n", a, "link", "set", f"vl{tag}", "up"), ("-n", b, "link", "set", f"va{tag}", "up"),
                 ("-n", a, "link", "set", "lo", "up"), ("-n", b, "link", "set", "lo", "up")]
        for step in steps:
            out = _netns(*step)
            if out.returncode != 0:
                pytest.skip(f"cannot build the veth pair here ({' '.join(step)}): {out.stderr.strip()}")
        good, _ = keys(tmp_path)
        eps = {k: f"tcp://10.231.7.1:{port}" for k, port in zip(("ingest", "weights", "metrics"), (6101, 6102, 6103))}
        procs.start("nslearner", "learner", "--ingest", eps["ingest"], "--weights", eps["weights"], "--metrics",
                    eps["metrics"], "--threads", "1", *LEARNER, "--curve-secret", str(good / "server.key_secret"),
                    "--curve-allowed", str(good / "allowed"), prefix=("ip", "netns", "exec", a))
        names = ("ns1", "ns2")
        for i, name in enumerate(names):
            procs.start(name, "actor", "--ingest", eps["ingest"], "--weights", eps["weights"], "--actor-id", name,
                        "--env", "Pendulum-v1", "--max-steps", "1200", "--seed", str(i), "--report",
                        str(tmp_path / f"{name}.json"), "--curve-server-key", str(good / "server.key"),
                        "--curve-secret", str(good / "client0.key_secret"), prefix=("ip", "netns", "exec", b))
        for name, proc in procs.procs[-2:]:
            assert proc.wait(timeout=240) == 0, procs.log(name)
        for name in names:
            rep = json.loads((tmp_path / f"{name}.json").read_text())
            assert rep["sent"] == 1200 and len(rep["versions_seen"]) > 2, rep
    finally:
        _netns("netns", "del", a)
        _netns("netns", "del", b)
