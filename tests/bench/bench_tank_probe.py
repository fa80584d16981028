"""What a decision's observations show of where the enemy will be: a probe, with and without memory.

    .venv/bin/python tests/bench/bench_tank_probe.py --rounds 120
    .venv/bin/python tests/bench/bench_tank_probe.py --opponents StopAndGo --rounds 60 --seeds 0,1

Reinforcement learning mixes two questions: whether the observations hold what a better shot needs, and
whether SAC finds it. This answers the first alone, by supervised learning. Rounds of the shipped body
(bench_tank_guns.py's, head-on gun) are played in process; at each decision whose shot leaves within it, the
label is the aim action of the oracle gun (bench_tank_guns.py: where the enemy really is when the bullet
arrives). Then, on rounds held apart for testing, four predictors of that label from the observations:

    memoryless, duel    an MLP on the decision's observation (observe = duel, deploy/tank.toml's)
    recurrent, duel     an LSTM over the round's observations so far, the same observations
    memoryless, trace   an MLP on observe = trace's (the duel numbers and the enemy's course over the last 28 turns)
    recurrent, trace    an LSTM over those

Each is scored by the share of test shots whose predicted aim would have hit (the aim's guess factor within a
bot's half width at the shot's distance of the oracle's), beside the head-on (aim 0) and the oracle (1.00 by
construction, less what the gun's turn rate and walls lose). Recurrent above memoryless is what memory shows;
a trace above duel is what the turns between decisions show. Last line: one JSON object, probe_<predictor>_<opponent>
(the hit share, mean over seeds), headon_<opponent>.

With --play N each probe is then played as the gun (its aim every decision, the body and power as above) in N
new rounds, beside the head-on gun in the same rounds: what a gun taught its aim directly, rather than by SAC's
reward, would hit and destroy from the same observations (played_<predictor>_<opponent>: destroyed, and
played_hit_..., mean over seeds; played_headon_<opponent>).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actor.bots.tankroyale import rules as R  # noqa: E402
from actor.bots.tankroyale.brain import DUEL, MAX_AIM, OBSERVATION, guess_factor  # noqa: E402
from actor.bots.tankroyale.env import THEM, TankRoyaleEnv  # noqa: E402
from tests.bench.bench_tank_guns import BODY, POWER, SEED, SHIPPED, History, choose_aim  # noqa: E402

DUEL_WIDTH = len(OBSERVATION) + len(DUEL)  # the trace observation's first numbers are the duel form's


def collect(opponent: str, rounds: int, first: int) -> list[dict[str, np.ndarray]]:
    """Per round: the decisions' observations (trace form), the oracle's aim where a shot left in the decision
    (NaN where none), and the hit tolerance (guess factor) at the shot's distance."""
    env = TankRoyaleEnv(opponent=opponent, max_turns=1500, **(SHIPPED | {"observe": "trace"}))
    out = []
    for k in range(first, first + rounds):
        obs, _ = env.reset(seed=int(np.random.default_rng([SEED, k]).integers(2**31 - 1)))
        seen: list[np.ndarray] = []
        label: list[float] = []
        tol: list[float] = []
        hist = History()
        while True:
            env.watch = None
            aim, shot = choose_aim(env, "oracle", hist, 30)
            seen.append(obs)
            label.append(aim if shot else math.nan)
            tol.append(tolerance(env))
            env.watch = hist
            obs, _, terminated, truncated, _ = env.step(np.array([*BODY, 0.0, POWER], np.float32))
            if terminated or truncated:
                break
        out.append({"obs": np.stack(seen), "label": np.array(label, np.float32), "tol": np.array(tol, np.float32)})
    return out


def tolerance(env: TankRoyaleEnv) -> float:
    """A bot's half width at the enemy's distance, as a share of the escape angle: how far a guess factor may
    be off and still hit."""
    b, t = env.brain, env.turn
    if b.me is None or t is None or THEM not in t.bot_states:
        return 0.0
    e = t.bot_states[THEM]
    d = math.hypot(e["x"] - b.me.x, e["y"] - b.me.y)
    esc = b.escape_angle(POWER)
    return math.degrees(math.atan2(R.BOT_BOUNDING_CIRCLE_RADIUS, d)) / esc if esc > 0 else 1.0


class Probe(nn.Module):
    """An MLP, or an LSTM of the same width under it: the policy's torso without the SAC heads."""

    def __init__(self, width: int, recurrent: bool, hidden: int = 64) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(width, hidden), nn.ReLU())
        self.lstm = nn.LSTM(hidden, hidden, batch_first=True) if recurrent else None
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1), nn.Tanh())

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> torch.Tensor:
        return self.step(x, state)[0]

    def step(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None
             ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor] | None]:
        """x [B, T, width] -> aims / MAX_AIM [B, T] and the LSTM's state after them (None for the MLP)."""
        z = self.fc(x)
        if self.lstm is not None:
            z, state = self.lstm(z, state)
        return self.head(z).squeeze(-1), state


def batch(data: list[dict[str, np.ndarray]], width: int) -> tuple[torch.Tensor, ...]:
    """Rounds padded to one length: observations, labels (aim / 30), mask, tolerances."""
    n = max(len(d["label"]) for d in data)
    x = np.zeros((len(data), n, width), np.float32)
    y = np.zeros((len(data), n), np.float32)
    m = np.zeros((len(data), n), np.float32)
    tol = np.zeros((len(data), n), np.float32)
    for i, d in enumerate(data):
        t = len(d["label"])
        x[i, :t] = d["obs"][:, :width]
        ok = ~np.isnan(d["label"])
        y[i, :t] = np.where(ok, d["label"] / MAX_AIM, 0.0)
        m[i, :t] = ok
        tol[i, :t] = d["tol"]
    return torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(m), torch.from_numpy(tol)


def hits(pred: torch.Tensor, y: torch.Tensor, m: torch.Tensor, tol: torch.Tensor) -> float:
    """The share of labelled shots whose predicted guess factor is within the tolerance of the oracle's."""
    gf = lambda a: torch.tensor(np.vectorize(guess_factor)(a.numpy() * MAX_AIM))  # noqa: E731
    ok = (gf(pred) - gf(y)).abs() <= tol
    return float((ok.float() * m).sum() / m.sum())


def fit(train: list[dict[str, np.ndarray]], test: list[dict[str, np.ndarray]], width: int, recurrent: bool,
        seed: int, epochs: int) -> tuple[float, Probe]:
    torch.manual_seed(seed)
    net = Probe(width, recurrent)
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    x, y, m, _ = batch(train, width)
    for _ in range(epochs):
        loss = (((net(x) - y) ** 2) * m).sum() / m.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    xt, yt, mt, tt = batch(test, width)
    with torch.no_grad():
        return hits(net(xt), yt, mt, tt), net


def play(net: Probe | None, opponent: str, width: int, rounds: int, first: int) -> tuple[float, float]:
    """`rounds` rounds from round number `first` with the probe's aim every decision (None: head-on), the
    decision's observations fed as they come (the LSTM's state carried through the round): destroyed, hit rate."""
    env = TankRoyaleEnv(opponent=opponent, max_turns=1500, **(SHIPPED | {"observe": "trace"}))
    destroyed = shots = hit = 0
    for k in range(first, first + rounds):
        obs, _ = env.reset(seed=int(np.random.default_rng([SEED, k]).integers(2**31 - 1)))
        state = None
        while True:
            aim = 0.0
            if net is not None:
                with torch.no_grad():
                    out, state = net.step(torch.from_numpy(obs[None, None, :width]), state)
                aim = float(out[0, 0]) * MAX_AIM
            obs, _, terminated, truncated, info = env.step(np.array([*BODY, aim, POWER], np.float32))
            if terminated or truncated:
                break
        destroyed += info["won"] and info["tally"]["destroyed"] > 0
        shots += info["tally"]["shots"]
        hit += info["tally"]["hits"]
    return destroyed / rounds, hit / shots if shots else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--opponents", default="StopAndGo,Oscillator,Dodger")
    ap.add_argument("--rounds", type=int, default=120, help="rounds played per opponent; a quarter held for testing")
    ap.add_argument("--seeds", default="0,1", help="the probes' initial weights (the rounds are the same)")
    ap.add_argument("--epochs", type=int, default=400)
    ap.add_argument("--play", type=int, default=0, metavar="N",
                    help="then play each probe as the gun in N new rounds, beside head-on (default 0: not played)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    seeds = [int(s) for s in args.seeds.split(",")]
    out: dict[str, Any] = {"rounds": args.rounds, "seeds": seeds, "epochs": args.epochs}
    for o in args.opponents.split(","):
        t0 = time.perf_counter()
        data = collect(o, args.rounds, 0)
        cut = args.rounds * 3 // 4
        train, test = data[:cut], data[cut:]
        _, yt, mt, tt = batch(test, DUEL_WIDTH)
        row = [f"{o:11s} shots {int(mt.sum())}", f"headon {hits(torch.zeros_like(yt), yt, mt, tt):.2f}"]
        out[f"headon_{o.lower()}"] = round(hits(torch.zeros_like(yt), yt, mt, tt), 3)
        if args.play:
            d, h = play(None, o, DUEL_WIDTH, args.play, args.rounds)
            out[f"played_headon_{o.lower()}"], out[f"played_hit_headon_{o.lower()}"] = d, round(h, 3)
            row.append(f"played headon {d:.2f} (hit {h:.2f})")
        for form, width in (("duel", DUEL_WIDTH), ("trace", data[0]["obs"].shape[1])):
            for recurrent in (False, True):
                name = f"{'recurrent' if recurrent else 'memoryless'}_{form}"
                fitted = [fit(train, test, width, recurrent, s, args.epochs) for s in seeds]
                got = [f[0] for f in fitted]
                out[f"probe_{name}_{o.lower()}"] = round(float(np.mean(got)), 3)
                row.append(f"{name} {np.mean(got):.2f} ({', '.join(f'{g:.2f}' for g in got)})")
                if args.play:
                    played = [play(f[1], o, width, args.play, args.rounds) for f in fitted]
                    out[f"played_{name}_{o.lower()}"] = round(float(np.mean([p[0] for p in played])), 3)
                    out[f"played_hit_{name}_{o.lower()}"] = round(float(np.mean([p[1] for p in played])), 3)
                    row.append(f"played {', '.join(f'{p[0]:.2f} (hit {p[1]:.2f})' for p in played)}")
        row.append(f"[{time.perf_counter() - t0:.0f} s]")
        print("  ".join(row), flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
