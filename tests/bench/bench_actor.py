"""The actor's costs: one tick (act + step) of one bot, and weight broadcast latency.

Tick: BotClient.act + BotClient.step at h=64 and h=256 on the Tank Royale
shapes (35-dim observation, 4-dim action), with real sockets (no learner:
sends go to a PULL socket in this process). Beside it: the forward step of
the same network as a torch module, the way a bot would do it without our
numpy policy. Broadcast: a PUB in this process
publishes h=256 weights blobs; 1 and 8 subscriber processes run the real
WeightsSubscriber, which notes (wall clock) when each version is ready to
swap in: decoded, validated and sliced into a policy. A bot swaps it at its
next tick. Latency = ready - published, p50 and p99. Beside the
tick figure: a bare torch LSTM forward of the same network, same run.
Last line: one JSON object.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time

import numpy as np
import torch
import zmq

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


def subscriber(endpoint: str, out: str, ready) -> None:
    torch.set_num_threads(1)
    from actor.weights import WeightsSubscriber

    ctx = zmq.Context()
    sub = WeightsSubscriber(ctx, endpoint).start()
    ready.set()
    deadline = time.time() + 120
    while len(sub.ready_wall) < VERSIONS and time.time() < deadline:
        time.sleep(0.05)  # the bot's own loop would run here; readiness is stamped by the subscriber thread
    seen = dict(sub.ready_wall)
    sub.stop()
    ctx.term()
    with open(out, "w") as fh:
        json.dump(seen, fh)


def broadcast(n_subs: int, tmp: str) -> list[float]:
    from protocol import encode

    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    endpoint = f"tcp://127.0.0.1:{port}"
    outs = [os.path.join(tmp, f"sub{n_subs}_{i}.json") for i in range(n_subs)]
    events = [mp.Event() for _ in outs]
    procs = [mp.Process(target=subscriber, args=(endpoint, o, e)) for o, e in zip(outs, events)]
    for p in procs:
        p.start()
    for e in events:
        e.wait(60)
    time.sleep(1.0)  # subscriptions propagate
    blobs = [encode(weights_msg(256, v)) for v in range(1, VERSIONS + 1)]
    sent: dict[int, float] = {}
    for v, blob in enumerate(blobs, start=1):
        sent[v] = time.time()
        pub.send_multipart([b"weights", blob])
        time.sleep(0.1)  # about the learner's publish rate
    for p in procs:
        p.join(150)
    pub.close(0)
    ctx.term()
    lat = []
    for o in outs:
        seen = {int(k): t for k, t in json.load(open(o)).items()}
        lat += [(seen[v] - sent[v]) * 1000 for v in sent if v in seen]
    return lat


def main() -> None:
    import tempfile

    torch.set_num_threads(1)
    figures: dict[str, float] = {}
    for h in (64, 256):
        ours, bare = tick_ms(h)
        figures[f"tick_ms_h{h}"] = ours
        figures[f"torch_forward_ms_h{h}"] = bare
        print(f"tick (act + step) h={h}: {ours:.3f} ms; the same forward step as a torch module alone: {bare:.3f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 8):
            lat = broadcast(n, tmp)
            figures[f"broadcast_p50_ms_{n}"] = float(np.percentile(lat, 50))
            figures[f"broadcast_p99_ms_{n}"] = float(np.percentile(lat, 99))
            print(f"broadcast to {n} subscriber(s), h=256: p50 {figures[f'broadcast_p50_ms_{n}']:.1f} ms, "
                  f"p99 {figures[f'broadcast_p99_ms_{n}']:.1f} ms over {len(lat)} deliveries")
    print("targets: tick_ms_h256 <= 0.5, broadcast_p99_ms_8 <= 25")
    print(json.dumps({k: round(v, 4) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
