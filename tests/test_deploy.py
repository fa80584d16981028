"""Deployment files: what can be checked here is checked (systemd-analyze, YAML structure, key fields)."""

from __future__ import annotations

import collections
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def unit(name: str) -> dict[str, dict[str, str]]:
    sections: dict[str, dict[str, str]] = {}
    current = ""
    text = (DEPLOY / "systemd" / name).read_text().replace("\\\n", " ")
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            sections[current] = {}
        elif "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            sections[current][key.strip()] = value.strip()
    return sections


@pytest.mark.parametrize("name", ["saclstm-learner.service", "saclstm-actor@.service"])
def test_units_restart_on_failure_and_stop_gracefully(name: str) -> None:
    svc = unit(name)["Service"]
    assert svc["Restart"] == "on-failure" and svc["KillSignal"] == "SIGTERM"
    assert int(svc["TimeoutStopSec"]) >= (90 if "learner" in name else 15)  # learner: the final save (60 s) fits
    assert "saclstm learner" in svc["ExecStart"] if "learner" in name else "saclstm actor" in svc["ExecStart"]
    assert "--curve-" in svc["ExecStart"]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here")
def test_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    """The real binary path is this checkout's (the units name /opt/saclstm); everything else is as shipped."""
    exe = str(Path(sys.executable).with_name("saclstm"))
    for name, out in (("saclstm-learner.service", "saclstm-learner.service"), ("saclstm-actor@.service", "saclstm-actor@1.service")):
        text = (DEPLOY / "systemd" / name).read_text().replace("/opt/saclstm/.venv/bin/saclstm", exe)
        (tmp_path / out).write_text(text)
    run = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "saclstm-learner.service"),
                          str(tmp_path / "saclstm-actor@1.service")], capture_output=True, text=True, timeout=60)
    problems = [ln for ln in (run.stdout + run.stderr).splitlines() if "saclstm" in ln]
    assert run.returncode == 0 and not problems, run.stdout + run.stderr


def test_compose_has_a_learner_and_a_scalable_actor() -> None:
    doc = yaml.safe_load((DEPLOY / "docker" / "compose.yaml").read_text())
    learner, actor = doc["services"]["learner"], doc["services"]["actor"]
    assert learner["command"][0] == "learner" and "--weights-path" in learner["command"]
    assert learner["stop_signal"] == "SIGTERM" and learner["stop_grace_period"] == "120s"
    assert "/healthz" in " ".join(learner["healthcheck"]["test"])
    assert actor["command"][0] == "actor" and "tcp://learner:5555" in actor["command"]
    assert "container_name" not in actor and "ports" not in actor, "a fixed name or port stops --scale actor=8"
    assert "checkpoints" in doc["volumes"]
    assert (DEPLOY / "docker" / "Dockerfile").read_text().count("ENTRYPOINT") == 1


def test_kubernetes_manifests() -> None:
    learner_docs = list(yaml.safe_load_all((DEPLOY / "k8s" / "learner.yaml").read_text()))
    kinds = {d["kind"]: d for d in learner_docs}
    sts, svc = kinds["StatefulSet"], kinds["Service"]
    assert sts["spec"]["replicas"] == 1 and sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "checkpoints"
    container = sts["spec"]["template"]["spec"]["containers"][0]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {p["port"] for p in svc["spec"]["ports"]} == {5555, 5556, 5557, 9108}
    assert sts["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= 90
    actor = yaml.safe_load((DEPLOY / "k8s" / "actor.yaml").read_text())
    assert actor["kind"] == "Deployment" and actor["spec"]["replicas"] >= 2
    assert "tcp://saclstm-learner:5555" in actor["spec"]["template"]["spec"]["containers"][0]["args"]
    secret = yaml.safe_load((DEPLOY / "k8s" / "secret.yaml").read_text())
    assert secret["kind"] == "Secret" and "server.key_secret" in secret["stringData"]
    mode = sts["spec"]["template"]["spec"]["volumes"][0]["secret"]["defaultMode"]
    assert mode & 0o007 == 0, "secret keys must not be readable by others, or the learner refuses them"


K8S_VERSION = "1.33"  # the oldest Kubernetes the manifests promise to run on


def k8s_documents() -> list[tuple[str, dict]]:
    return [(f"{path.name} #{i}", doc) for path in sorted((DEPLOY / "k8s").glob("*.yaml"))
            for i, doc in enumerate(yaml.safe_load_all(path.read_text())) if doc]


def test_kubernetes_manifests_match_the_kubernetes_schemas() -> None:
    """Strict schema validation: a misspelt or misplaced field fails here, not at `kubectl apply`."""
    import kubernetes_validate as kv  # a test extra: missing means a broken install, not a skip
    docs = k8s_documents()
    assert {d["kind"] for _, d in docs} == {"StatefulSet", "Service", "Deployment", "Secret"}
    for where, doc in docs:
        try:
            kv.validate(doc, K8S_VERSION, strict=True)
        except kv.ValidationError as e:
            pytest.fail(f"{where}: {e}")
    # The check itself: a one-letter typo in a field name does not pass.
    typo = next(d for _, d in docs if d["kind"] == "Deployment")
    typo = {**typo, "spec": {**{k: v for k, v in typo["spec"].items() if k != "replicas"},
                             "replica": typo["spec"]["replicas"]}}
    with pytest.raises(kv.ValidationError):
        kv.validate(typo, K8S_VERSION, strict=True)


def test_compose_file_matches_what_compose_reads() -> None:
    """Every service names an image or a build, and only keys Compose knows are used."""
    doc = yaml.safe_load((DEPLOY / "docker" / "compose.yaml").read_text())
    known = {"image", "build", "command", "entrypoint", "environment", "volumes", "depends_on", "restart",
             "ports", "expose", "healthcheck", "stop_grace_period", "stop_signal", "deploy", "networks",
             "user", "working_dir", "init", "secrets", "env_file", "labels", "logging", "ulimits", "profiles"}
    assert set(doc) <= {"services", "volumes", "networks", "secrets", "configs", "name"}, set(doc)
    for name, service in doc["services"].items():
        assert "image" in service or "build" in service, name
        assert set(service) <= known, (name, set(service) - known)


class Reusing:
    """A stand-in socket that binds the lowest port no open stand-in holds: the worst a kernel may do."""

    bound: set[int] = set()

    def __init__(self) -> None:
        self.port = 0

    def bind(self, address: tuple[str, int]) -> None:
        self.port = min(set(range(40000, 40010)) - Reusing.bound)
        Reusing.bound.add(self.port)

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def close(self) -> None:
        Reusing.bound.discard(self.port)

    def __enter__(self) -> Reusing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def test_a_runs_endpoints_are_distinct_ports_even_where_the_kernel_reuses_a_released_one(monkeypatch) -> None:  # noqa: ANN001
    """A bind to port 0 may be handed the port just released (a learner once got one port for ingest and
    weights, and could not bind the second). Stand-in sockets that always take the lowest port no open one
    holds must still give every endpoint its own port."""
    from deploy import children

    monkeypatch.setattr(children.socket, "socket", Reusing)
    monkeypatch.setattr(children, "_RECENT", collections.deque(maxlen=4096), raising=False)
    ports = set(children.loopback("ingest", "weights", "metrics").values())
    assert len(ports) == 3, ports


def test_a_port_picked_after_a_runs_endpoints_is_none_of_them(monkeypatch) -> None:  # noqa: ANN001
    """The endpoints are released when picked and bound by a child seconds later; a port picked in between (a
    Prometheus port, a second run's) must not be one of them, though the kernel would hand it out again (seen: a
    learner's Prometheus port was its own ingest port, and it exited at start)."""
    from deploy import children

    monkeypatch.setattr(children.socket, "socket", Reusing)
    monkeypatch.setattr(children, "_RECENT", collections.deque(maxlen=4096), raising=False)
    endpoints = {int(e.rsplit(":", 1)[1]) for e in children.loopback("ingest", "weights", "metrics").values()}
    later = {children.free_port(), children.free_port()}
    assert len(later) == 2 and not later & endpoints, (endpoints, later)
