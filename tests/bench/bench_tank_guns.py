"""What each kind of gun is worth on the shipped body: is there a shot that only memory can find?

    .venv/bin/python tests/bench/bench_tank_guns.py --rounds 30
    .venv/bin/python tests/bench/bench_tank_guns.py --opponents StopAndGo,Oscillator --guns headon,pattern,oracle

In process (TankRoyale-v0, the same fixed-seed rounds as bench_tank_baselines.py), our tank in the shipped form
(deploy/tank.toml's controls: the gf aim, the surfing body held at its constant action) with its aim chosen at
each decision by a scripted gun instead of a network. Each gun names where the enemy will be when the
decision's next shot reaches it, and the aim action is the guess factor of that point, so every gun's shot is
one the form can make (one aim a decision, as the policy's):

    headon   aim 0: the constant action's gun
    linear   the enemy keeps its speed and heading from its last scan (what one observation shows)
    circular the same and its last turn rate
    pattern  this round's history of the enemy's speed and turn rate: the past moment whose last `--match`
             turns are most like the last ones, played on from where it is (Robocode's pattern matching: a
             gun with memory, and nothing but what our radar saw)
    window   the same matching within the last 32 turns only (a match of 6): what the trace observation
             (observe = trace) shows a policy without memory
    sampled  the same matching over what the policy's observations show: one look at the enemy a decision
             (every 15-30 turns, at each of its shots), held over the decision's turns
    oracle   where the enemy really is when the bullet arrives (the game played forward from a copy of it):
             the most any prediction can give in this form, a ceiling and no policy

Our own place when the shot leaves (and the turn it leaves on) is taken from the game played forward for every
gun alike: what is compared is what each knows of the enemy. Against an opponent with a habit, `pattern`
above `linear` is a shot that memory can find and one decision's observation cannot; `pattern` near `linear`
says the habit leaves memory nothing to aim with at these distances. The learned guns' hit rates
(docs/tank-experiments.md) sit between these. Last line: one JSON object, destroyed_<gun>_<opponent> and
hit_<gun>_<opponent>, and pattern_minus_linear_<opponent> (hit rate).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actor.bots.tankroyale import rules as R  # noqa: E402
from actor.bots.tankroyale.brain import aim_for  # noqa: E402
from actor.bots.tankroyale.env import THEM, TankRoyaleEnv  # noqa: E402

SEED = 10_000  # bench_tank_baselines.py's round seeds
SHIPPED = {"aim": "gf", "radar": "lock", "move": "orbit", "speed": "surf", "observe": "duel", "react": "true",
           "repeat": "30", "fixed": "speed=-4;turn=0"}
BODY = (-4.0, 0.0)  # the fixed body; the policy's speed and turn actions are overridden by `fixed` anyway
POWER = 2.0
GUNS = ("headon", "linear", "circular", "window", "pattern", "sampled", "oracle")
WINDOW, WINDOW_MATCH = 32, 6  # window: the turns the trace observation shows (brain.TRACE), and the match within them
MOVERS = ("StopAndGo", "Oscillator", "Dodger", "Orbiter", "Reverser", "Surfer", "Profiler")
Track = Callable[[int], tuple[float, float]]  # absolute turn -> the enemy's (x, y) at that turn's end


class Turns:
    """Turn-by-turn records of one play (env.watch): the enemy's place, our shots, and the frame (bearing,
    lateral, escape angle) the brain aims the next turn's gun from."""

    def __init__(self) -> None:
        self.enemy: dict[int, tuple[float, float]] = {}
        self.frame: dict[int, tuple[float, float, float]] = {}
        self.shots: list[tuple[int, float, float]] = []  # (turn, origin x, origin y)

    def __call__(self, env: TankRoyaleEnv) -> None:
        t = env.turn
        assert t is not None
        tn, b = t.turn_number, env.brain
        if THEM in t.bot_states:
            self.enemy[tn] = (t.bot_states[THEM]["x"], t.bot_states[THEM]["y"])
        target = b._target(b.me) if b.me is not None else None
        if target is not None:
            self.frame[tn] = (target, b.lateral, b.escape_angle(POWER))
        for e in t.events.get(1, []):
            if e.get("type") == "BulletFiredEvent" and (e.get("bullet") or {}).get("ownerId") == 1:
                self.shots.append((tn, e["bullet"]["x"], e["bullet"]["y"]))


class History:
    """The enemy as our radar saw it this round, a scan a turn under the radar lock: what `pattern` and the
    straight-line guns know."""

    def __init__(self) -> None:
        self.turn: list[int] = []
        self.x: list[float] = []
        self.y: list[float] = []
        self.heading: list[float] = []
        self.speed: list[float] = []

    def __call__(self, env: TankRoyaleEnv) -> None:
        e = env.brain.enemy
        if e.alive and e.turn >= 0 and (not self.turn or e.turn > self.turn[-1]):
            self.turn.append(e.turn)
            self.x.append(e.x)
            self.y.append(e.y)
            self.heading.append(e.direction)
            self.speed.append(e.speed)

    def moves(self) -> tuple[np.ndarray, np.ndarray]:
        """Per scan: speed, and the heading's change since the scan before (0 for the first)."""
        h = np.asarray(self.heading)
        turn = np.zeros(len(h))
        turn[1:] = (h[1:] - h[:-1] + 180.0) % 360.0 - 180.0
        return np.asarray(self.speed), turn

    def decided(self, env: TankRoyaleEnv) -> None:
        """A decision ended (the per-turn history needs nothing here)."""

    def last(self, turns: int) -> History:
        """The same history, its last `turns` scans only."""
        cut = History()
        cut.turn, cut.x, cut.y = self.turn[-turns:], self.x[-turns:], self.y[-turns:]
        cut.heading, cut.speed = self.heading[-turns:], self.speed[-turns:]
        return cut


class Sampled(History):
    """The enemy as a policy's observations show it: one look a decision (its speed and where it is; the turn
    rate the mean since the look before), each held over the decision's turns. `pattern` on this is pattern
    matching with memory of what the policy saw, not of what the radar saw."""

    def __init__(self) -> None:
        super().__init__()
        self.held_speed: list[float] = []
        self.held_turn: list[float] = []

    def __call__(self, env: TankRoyaleEnv) -> None:
        """Every turn is seen by the radar, but only the decision's last one is kept (`decided`)."""

    def decided(self, env: TankRoyaleEnv) -> None:
        e = env.brain.enemy
        if not (e.alive and e.turn >= 0) or (self.turn and e.turn <= self.turn[-1]):
            return
        n = e.turn - self.turn[-1] if self.turn else 1
        rate = R.normalize_relative_degrees(e.direction - self.heading[-1]) / n if self.turn else 0.0
        self.held_speed += [e.speed] * n
        self.held_turn += [rate] * n
        super().__call__(env)

    def moves(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.held_speed), np.asarray(self.held_turn)


def play_on(hist: History, speeds: np.ndarray, turns: np.ndarray, arena: tuple[int, int]) -> Track:
    """The enemy's course from its last scan if it moves by `speeds` and `turns`, turn by turn (the engine
    moves a bot along its heading, then turns it), held at the walls; the last move kept past their end."""
    x, y, heading, last = hist.x[-1], hist.y[-1], hist.heading[-1], hist.turn[-1]
    r = R.BOT_BOUNDING_CIRCLE_RADIUS
    path: list[tuple[float, float]] = []

    def at(t: int) -> tuple[float, float]:
        nonlocal x, y, heading
        while len(path) < t - last:
            i = min(len(path), len(speeds) - 1)
            x = R.clamp(x + math.cos(math.radians(heading)) * speeds[i], r, arena[0] - r)
            y = R.clamp(y + math.sin(math.radians(heading)) * speeds[i], r, arena[1] - r)
            heading += turns[i]
            path.append((x, y))
        return path[t - last - 1] if t > last else (hist.x[-1], hist.y[-1])

    return at


def pattern(hist: History, match: int, arena: tuple[int, int]) -> Track | None:
    """Pattern matching over this round's scans: the window of `match` moves most like the last `match`,
    and the moves that followed it."""
    speed, turn = hist.moves()
    n = len(speed)
    if n < 2 * match + 2:
        return None
    feats = np.stack([speed / R.MAX_FORWARD_SPEED, turn / R.MAX_TURN_RATE], axis=1)
    recent = feats[n - match:]
    ends = np.arange(match, n - 1)  # a window feats[end - match:end] with at least one move after it
    windows = np.stack([feats[e - match:e] for e in ends])
    best = int(ends[np.argmin(((windows - recent) ** 2).sum(axis=(1, 2)))])
    return play_on(hist, speed[best:], turn[best:], arena)


def straight(hist: History, arena: tuple[int, int], circular: bool) -> Track:
    speed, turn = hist.moves()
    return play_on(hist, speed[-1:], turn[-1:] if circular else np.zeros(1), arena)


def intercept(track: Track, fired: int, ox: float, oy: float) -> float:
    """The direction (degrees) from (ox, oy) along which a shot of POWER leaving at turn `fired` meets `track`."""
    v = R.calc_bullet_speed(POWER)
    for k in range(120):  # at the end of turn fired + k the bullet's hit line spans v * (k + 1) to v * (k + 2)
        x, y = track(fired + k)
        if math.hypot(x - ox, y - oy) <= v * (k + 1.5):
            break
    return math.degrees(math.atan2(y - oy, x - ox))


def choose_aim(env: TankRoyaleEnv, gun: str, hist: History, match: int) -> tuple[float, bool]:
    """The aim for this decision (and whether a shot leaves in it): the game played forward on a copy, the
    decision's first shot found, its point named by `gun`."""
    ahead = copy.deepcopy(env)
    seen = Turns()
    ahead.watch = seen
    action = np.array([*BODY, 0.0, POWER], np.float32)
    _, _, terminated, truncated, _ = ahead.step(action)
    if not seen.shots:
        return 0.0, False
    fired, ox, oy = seen.shots[0]
    frame = seen.frame.get(fired - 2) or seen.frame.get(fired - 1)
    if gun == "headon" or frame is None or not hist.turn:
        return 0.0, True
    track: Track | None
    if gun == "oracle":
        for _ in range(8):  # play on until the enemy's course covers any bullet's flight
            if terminated or truncated or max(seen.enemy, default=0) >= fired + 120:
                break
            _, _, terminated, truncated, _ = ahead.step(action)
        last = max(seen.enemy)
        track = lambda t: seen.enemy[min(t, last)] if min(t, last) in seen.enemy else seen.enemy[last]  # noqa: E731
    elif gun in ("pattern", "sampled"):
        track = pattern(hist, match, env.arena) or straight(hist, env.arena, circular=False)
    elif gun == "window":
        track = pattern(hist.last(WINDOW), WINDOW_MATCH, env.arena) or straight(hist, env.arena, circular=False)
    else:
        track = straight(hist, env.arena, circular=gun == "circular")
    return aim_for(intercept(track, fired, ox, oy), frame), True


def play(gun: str, opponent: str, rounds: int, match: int) -> dict[str, float]:
    """`rounds` rounds of our tank with `gun` against `opponent`: destroyed, hit rate, taken a round, and the share
    of decisions with a shot that had a second shot in them (which keeps the first one's aim)."""
    env = TankRoyaleEnv(opponent=opponent, max_turns=1500, **SHIPPED)
    destroyed = shots = hits = 0
    taken, with_shot, doubled = 0.0, 0, 0
    for k in range(rounds):
        env.reset(seed=int(np.random.default_rng([SEED, k]).integers(2**31 - 1)))
        hist = Sampled() if gun == "sampled" else History()
        while True:
            env.watch = None
            aim, shot = choose_aim(env, gun, hist, match)
            env.watch = hist
            before = env.brain.tally.shots
            _, _, terminated, truncated, info = env.step(np.array([*BODY, aim, POWER], np.float32))
            hist.decided(env)
            with_shot += shot
            doubled += shot and env.brain.tally.shots - before > 1
            if terminated or truncated:
                break
        destroyed += info["won"] and info["tally"]["destroyed"] > 0
        shots += info["tally"]["shots"]
        hits += info["tally"]["hits"]
        taken += info["tally"]["taken"]
    return {"destroyed": destroyed / rounds, "hit_rate": hits / shots if shots else 0.0, "taken": taken / rounds,
            "second_shots": doubled / with_shot if with_shot else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--opponents", default=",".join(MOVERS), help="comma-separated (default: the seven movers)")
    ap.add_argument("--guns", default=",".join(GUNS), help=f"comma-separated, of {', '.join(GUNS)}")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--match", type=int, default=30, help="pattern: the turns of history matched (default 30)")
    args = ap.parse_args()
    guns = args.guns.split(",")
    unknown = [g for g in guns if g not in GUNS]
    if unknown:
        ap.error(f"--guns: unknown {unknown[0]!r}; known: {', '.join(GUNS)}")
    if args.rounds < 1 or args.match < 2:
        ap.error("--rounds must be at least 1 and --match at least 2")
    out: dict[str, Any] = {"rounds": args.rounds, "match": args.match}
    for o in args.opponents.split(","):
        row, t0 = [f"{o:11s}"], time.perf_counter()
        for g in guns:
            got = play(g, o, args.rounds, args.match)
            out[f"destroyed_{g}_{o.lower()}"] = got["destroyed"]
            out[f"hit_{g}_{o.lower()}"] = round(got["hit_rate"], 3)
            row.append(f"{g} {got['destroyed']:.2f} (hit {got['hit_rate']:.2f}, taken {got['taken']:.0f})")
            if g == guns[-1]:
                row.append(f"[second shots {got['second_shots']:.2f}, {time.perf_counter() - t0:.0f} s]")
        if "pattern" in guns and "linear" in guns:
            out[f"pattern_minus_linear_{o.lower()}"] = round(out[f"hit_pattern_{o.lower()}"]
                                                             - out[f"hit_linear_{o.lower()}"], 3)
        print("  ".join(row), flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
