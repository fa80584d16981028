"""The actor's costs: one tick (act + step) of one bot, and weight broadcast latency.

Tick: BotClient.act + BotClient.step at h=64 and h=256 on the Tank Royale
shapes (35-dim observation, 4-dim action), with real sockets (no learner:
sends go to a PULL socket in this process). Beside it: the forward step of
the same network as a torch module, the way a bot would do it without our
numpy policy.

Broadcast: a PUB in this process publishes 60 h=256 weights blobs (2.3 MB
each), 0.1 s apart (about the learner's rate), to 1 and then 8 subscriber
processes. Each subscriber starts the way a bot starts: a fresh interpreter
(`python -m tests.bench.bench_actor --subscriber ...`) that never imports
torch, running the real WeightsSubscriber, which notes (wall clock) when each
version is ready to swap in: received, decoded, validated and sliced into a
policy. Latency = ready - published, p50 and p99 over every delivery. The
subscriber keeps only the newest blob, so a version it never saw (a later one
arrived first) is a miss: `missed_deliveries_N` counts them, and any miss
fails the run (exit 1) rather than flattering the percentiles. The figure is
the time from publish to ready across N + 1 processes, so on a machine with
fewer cores than that (or busy with other work) it measures the scheduler as
much as our code: `subscriber_cpu_ms_per_version_N` (the subscriber's own CPU
per version), its time runnable but waiting for a CPU
(`subscriber_runqueue_wait_ms_per_version_N`, from /proc schedstat) and the
load average are printed beside it.
Last line: one JSON object.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import zmq

ROOT = Path(__file__).resolve().parents[2]

OBS, ACT = 35, 4
VERSIONS = 60


def weights_msg(h: int, version: int):
    from learner.networks import Actor, Arch, actor_to_blob, blob_rev
    from protocol import Weights

    arch = Arch(OBS, ACT, hidden=h, act_low=(-1.0,) * ACT, act_high=(1.0,) * ACT)
    params = actor_to_blob(Actor(arch))
    return Weights("learner", version, version, blob_rev(params), arch.to_wire(), params, 0)


def tick_ms(h: int, seconds: float = 3.0) -> tuple[float, float]:
    from actor.client import BotClient
    from actor.config import ActorConfig
    from actor.link import ActorLink, BotSpec
    from actor.policy import LocalPolicy

    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    cfg = ActorConfig(ingest=f"tcp://127.0.0.1:{port}", weights="tcp://127.0.0.1:1", actor_id="bench", queue=100000)
    link = ActorLink(cfg)
    one = np.ones(ACT, np.float32)
    client = BotClient(link, BotSpec("tank", -np.ones(OBS, np.float32), np.ones(OBS, np.float32), -one, one))
    policy = LocalPolicy(weights_msg(h, 1))
    link.weights._policy = policy  # as if the subscriber had received it
    client.new_episode("bench")
    obs = np.zeros(OBS, np.float32)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        action = client.act(obs)
        client.step(obs, action, 0.1, obs, False, False)
        n += 1
        while pull.poll(0):
            pull.recv()
    ours = (time.perf_counter() - start) / n * 1000
    # Beside it: the same one-step forward through the learner's torch module (what a bot would
    # do without the numpy policy).
    import torch

    from learner.networks import Actor, Arch

    net = Actor(Arch.from_wire(weights_msg(h, 1).arch)).eval()
    x, state_t = torch.zeros(1, 1, policy.arch.in_dim), None
    m, start = 0, time.perf_counter()
    with torch.inference_mode():
        while time.perf_counter() - start < seconds / 2:
            y, state_t = net.features(x, state_t)
            net.sample(y)
            m += 1
    bare = (time.perf_counter() - start) / m * 1000
    link.close()
    pull.close(0)
    ctx.term()
    return ours, bare


def runqueue_wait_s() -> float:
    """Seconds this process's threads have spent runnable but waiting for a CPU (Linux schedstat)."""
    total = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/schedstat") as fh:
                total += int(fh.read().split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return total / 1e9


def subscriber_main(endpoint: str, out: str, done: str) -> None:
    """One subscriber, in a fresh interpreter started like a bot (never imported torch, not forked from a
    process that did): the real WeightsSubscriber, which stamps (wall clock) when each version is ready."""
    from actor.weights import WeightsSubscriber

    ctx = zmq.Context()
    sub = WeightsSubscriber(ctx, endpoint).start()
    deadline = time.time() + 300
    while 0 not in sub.ready_wall and time.time() < deadline:  # version 0: the publisher's "are you there"
        time.sleep(0.01)
    open(out + ".joined", "w").close()
    cpu0, wait0 = time.process_time(), runqueue_wait_s()
    while not all(v in sub.ready_wall for v in range(1, VERSIONS + 1)) and time.time() < deadline:
        if os.path.exists(done):  # all sent: what has not arrived half a second later never will
            time.sleep(0.5)
            break
        time.sleep(0.05)  # the bot's own loop would run here; readiness is stamped by the subscriber thread
    seen = {v: t for v, t in sub.ready_wall.items() if v > 0}
    cpu, wait = time.process_time() - cpu0, runqueue_wait_s() - wait0
    sub.stop()
    ctx.term()
    with open(out, "w") as fh:
        json.dump({"ready": seen, "cpu_s": cpu, "wait_s": wait, "torch_imported": "torch" in sys.modules}, fh)


def broadcast(n_subs: int, tmp: str) -> dict[str, float]:
    """Publish VERSIONS h=256 blobs 0.1 s apart to `n_subs` subscriber processes; latency = ready - published."""
    from protocol import encode
    from protocol.lifeline import child_env

    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    endpoint = f"tcp://127.0.0.1:{port}"
    blobs = [encode(weights_msg(256, v)) for v in range(0, VERSIONS + 1)]
    outs = [os.path.join(tmp, f"sub{n_subs}_{i}.json") for i in range(n_subs)]
    done = os.path.join(tmp, f"done{n_subs}")
    procs = [subprocess.Popen([sys.executable, "-m", "tests.bench.bench_actor", "--subscriber", endpoint, o, done],
                              cwd=ROOT, env=child_env()) for o in outs]
    try:
        deadline = time.monotonic() + 300
        while not all(os.path.exists(o + ".joined") for o in outs):  # every subscription is through
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a subscriber did not start"
            pub.send_multipart([b"weights", blobs[0]])
            time.sleep(0.05)
        sent: dict[int, float] = {}
        for v in range(1, VERSIONS + 1):
            sent[v] = time.time()
            pub.send_multipart([b"weights", blobs[v]])
            time.sleep(0.1)  # about the learner's publish rate
        open(done, "w").close()
        for p in procs:
            p.wait(60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        pub.close(0)
        ctx.term()
    lat, missed, cpu, wait, torch_seen = [], 0, [], [], False
    for o in outs:
        rep = json.load(open(o))
        seen = {int(k): t for k, t in rep["ready"].items()}
        lat += [(seen[v] - sent[v]) * 1000 for v in sent if v in seen]
        missed += sum(1 for v in sent if v not in seen)
        cpu.append(rep["cpu_s"] * 1000 / VERSIONS)
        wait.append(rep["wait_s"] * 1000 / VERSIONS)
        torch_seen |= rep["torch_imported"]
    assert not torch_seen, "a subscriber imported torch: it does not start the way a bot starts"
    return {f"broadcast_p50_ms_{n_subs}": float(np.percentile(lat, 50)) if lat else float("nan"),
            f"broadcast_p99_ms_{n_subs}": float(np.percentile(lat, 99)) if lat else float("nan"),
            f"broadcast_max_ms_{n_subs}": max(lat, default=float("nan")),
            f"missed_deliveries_{n_subs}": missed,
            f"subscriber_cpu_ms_per_version_{n_subs}": float(np.mean(cpu)),
            f"subscriber_runqueue_wait_ms_per_version_{n_subs}": float(np.mean(wait))}


def main() -> None:
    import tempfile

    if len(sys.argv) == 5 and sys.argv[1] == "--subscriber":
        subscriber_main(*sys.argv[2:])
        return
    import torch

    torch.set_num_threads(1)
    figures: dict[str, float] = {"loadavg_1m_start": os.getloadavg()[0]}
    for h in (64, 256):
        ours, bare = tick_ms(h)
        figures[f"tick_ms_h{h}"] = ours
        figures[f"torch_forward_ms_h{h}"] = bare
        print(f"tick (act + step) h={h}: {ours:.3f} ms; the same forward step as a torch module alone: {bare:.3f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 8):
            figures |= broadcast(n, tmp)
            print(f"broadcast to {n} subscriber(s), h=256: p50 {figures[f'broadcast_p50_ms_{n}']:.1f} ms, "
                  f"p99 {figures[f'broadcast_p99_ms_{n}']:.1f} ms, max {figures[f'broadcast_max_ms_{n}']:.1f} ms; "
                  f"missed {figures[f'missed_deliveries_{n}']} of {n * VERSIONS} deliveries; subscriber CPU "
                  f"{figures[f'subscriber_cpu_ms_per_version_{n}']:.2f} ms and waiting for a CPU "
                  f"{figures[f'subscriber_runqueue_wait_ms_per_version_{n}']:.2f} ms per version", flush=True)
    figures["loadavg_1m_end"] = os.getloadavg()[0]
    print(f"load average (1 min) {figures['loadavg_1m_start']:.1f} at start, {figures['loadavg_1m_end']:.1f} at end "
          f"on {os.cpu_count()} CPUs")
    print("targets: tick_ms_h256 <= 0.5, broadcast_p99_ms_8 <= 25, missed_deliveries_8 == 0 (a miss is a failure)")
    print(json.dumps({k: round(v, 4) for k, v in figures.items()}))
    if figures["missed_deliveries_1"] or figures["missed_deliveries_8"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
