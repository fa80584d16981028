"""Watching a run: monitor --json, Prometheus /metrics and probes, dead actors, TensorBoard, plot."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from protocol.health import Health
from tests.procs import ROOT, Procs, Watch, actor_stats, free_port

pytestmark = pytest.mark.slow

LEARNER = ("--hidden", "16", "--fc", "16", "--seq-len", "8", "--overlap", "4", "--batch-size", "8",
           "--learning-starts", "200", "--dead-after-s", "3")
ACTOR = ("--env", "Pendulum-v1", "--flush-steps", "16", "--flow", "realtime")


def scrape(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def value(text: str, series: str) -> float:
    for line in text.splitlines():
        name, _, number = line.rpartition(" ")
        if name == series:
            return float(number)
    raise AssertionError(f"{series} not in /metrics")


def test_monitor_prometheus_dead_actor_tensorboard_plot(procs: Procs, eps: dict[str, str], tmp_path: Path) -> None:
    port = free_port()
    metrics = tmp_path / "m.jsonl"
    procs.learner(eps, *LEARNER, "--prometheus-port", str(port), "--tensorboard", str(tmp_path / "tb"),
                  "--metrics-path", str(metrics))
    watch = Watch(eps["metrics"])
    try:
        watch.wait(lambda h: True, 60, "the learner")
        assert scrape(port, "/healthz")[0] == 200
        assert scrape(port, "/readyz")[0] == 503  # no weights yet: dims come with the first hello
        actors = [procs.actor(eps, name, *ACTOR) for name in ("m1", "m2")]
        watch.wait(lambda h: h["grad_steps"] > 50 and all((actor_stats(h, n) or {}).get("received", 0) > 0
                                                         for n in ("m1", "m2")), 90, "training on both actors")

        out = subprocess.run([sys.executable, "-m", "deploy.cli", "monitor", eps["metrics"], "--json", "--count", "2",
                              "--timeout", "20"], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        lines = [json.loads(line) for line in out.stdout.splitlines()]
        assert len(lines) == 2 and all(line["topic"] == "health" for line in lines)
        for line in lines:  # the real learner's map decodes, and the record writes it back key for key
            wire = {k: v for k, v in line.items() if k != "topic"}
            assert Health.from_wire(wire).to_wire() == wire
        seen = {a["sender"]: a for a in lines[-1]["actors"]}
        assert {"m1", "m2"} <= set(seen) and all(seen[n]["alive"] and seen[n]["sent"] > 0 for n in ("m1", "m2"))

        assert scrape(port, "/readyz")[0] == 200
        code, first = scrape(port, "/metrics")
        assert code == 200
        for series in ("saclstm_env_steps_total", "saclstm_grad_steps_total", "saclstm_weights_version",
                       "saclstm_utd_achieved", 'saclstm_actor_received_steps_total{actor="m1"}',
                       'saclstm_actor_alive{actor="m2"}', "saclstm_uptime_seconds", "saclstm_replay_with_state"):
            assert series in first, series
        before = value(first, "saclstm_grad_steps_total")
        watch.wait(lambda h: h["grad_steps"] > before + 50, 60, "more training")
        _, second = scrape(port, "/metrics")
        assert value(second, "saclstm_grad_steps_total") > value(first, "saclstm_grad_steps_total")
        assert value(second, "saclstm_env_steps_total") > value(first, "saclstm_env_steps_total")

        actors[0].send_signal(signal.SIGKILL)
        killed = time.monotonic()
        h = watch.wait(lambda h: not actor_stats(h, "m1")["alive"], 15, "m1 marked dead")
        assert time.monotonic() - killed < 3 + 3, "dead later than the timeout allows"
        assert actor_stats(h, "m2")["alive"]
        _, third = scrape(port, "/metrics")
        assert 'saclstm_actor_alive{actor="m1"} 0.0' in third and 'saclstm_actor_alive{actor="m2"} 1.0' in third
        assert "marked dead" in procs.log("learner")
    finally:
        watch.close()
    assert list((tmp_path / "tb").glob("events.out.tfevents.*")), "no TensorBoard event file"
    png = tmp_path / "curves.png"
    out = subprocess.run([sys.executable, "-m", "deploy.cli", "plot", str(metrics), "-o", str(png)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    import matplotlib.image

    assert matplotlib.image.imread(png).shape[0] > 100  # it opens, and it is a picture
