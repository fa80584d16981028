"""Time per turn of the Tank Royale tank's handlers at h=256, driven by the bot API's own classes.

Each turn: a scan event, then the tick (observation, the step call, act with an
h=256 LSTM policy, commands). Sends go to a PULL socket in this process. Beside
it, the game's default turn timeout: the engine's (`Setup.turn_timeout_us`, the
official "classic" game's), how long a server waits for a bot's intent before it
skips the bot's turn. Last line: one JSON object.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import zmq

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from robocode_tank_royale.bot_api.events import RoundStartedEvent, ScannedBotEvent  # noqa: E402

from actor.bots.tankroyale.brain import OBS_DIM  # noqa: E402
from actor.bots.tankroyale.engine import Setup  # noqa: E402
from actor.bots.tankroyale.tank import SaclstmTank, spec  # noqa: E402
from actor.client import BotClient  # noqa: E402
from actor.config import ActorConfig  # noqa: E402
from actor.policy import LocalPolicy  # noqa: E402
from learner.networks import Actor, Arch, actor_to_blob, blob_rev  # noqa: E402
from protocol import Weights  # noqa: E402
from tests.test_tankroyale import deliver, state, tick  # noqa: E402

TURN_TIMEOUT_MS = Setup().turn_timeout_us / 1000  # the engine's default: one place says it


def main() -> None:
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    cfg = ActorConfig(ingest=f"tcp://127.0.0.1:{port}", weights="tcp://127.0.0.1:1", actor_id="bench", queue=100000,
                      close_linger_s=1)
    client = BotClient.connect(cfg, "tank", *spec())
    low, high = spec()[2:]
    arch = Arch(OBS_DIM, 4, hidden=256, act_low=tuple(map(float, low)), act_high=tuple(map(float, high)))
    params = actor_to_blob(Actor(arch))
    client.link.weights._policy = LocalPolicy(Weights("l", 0, 1, blob_rev(params), arch.to_wire(), params, 0))
    tank = SaclstmTank(client, live=False)
    tank.on_round_started(RoundStartedEvent(round_number=1))
    rng = np.random.default_rng(0)
    times = []
    for turn in range(1, 3001):
        s = state(x=rng.uniform(20, 780), y=rng.uniform(20, 580), direction=rng.uniform(0, 360))
        start = time.perf_counter()
        tank.on_scanned_bot(ScannedBotEvent(turn_number=turn, scanned_by_bot_id=1, scanned_bot_id=2, energy=80,
                                            x=rng.uniform(0, 800), y=rng.uniform(0, 600), direction=90, speed=8))
        deliver(tank, tick(turn, s))
        times.append((time.perf_counter() - start) * 1000)
        while pull.poll(0):
            pull.recv()
    client.close()
    pull.close(0)
    ctx.term()
    t = np.array(times[100:])
    figures = {"turn_ms_h256": float(t.mean()), "turn_p99_ms_h256": float(np.percentile(t, 99)),
               "turn_timeout_ms": TURN_TIMEOUT_MS}
    print(f"tank turn at h=256: mean {figures['turn_ms_h256']:.3f} ms, p99 {figures['turn_p99_ms_h256']:.3f} ms "
          f"(target <= 1 ms; the game's default turn timeout: {TURN_TIMEOUT_MS} ms)")
    print(json.dumps({k: round(v, 4) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
