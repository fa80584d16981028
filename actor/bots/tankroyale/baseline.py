"""The constant-action baseline: what the tank's controls win with no network at all.

Much of a trained tank's win rate comes from its controls (the action's form, TankControls), not from
learning: with the path aim, the radar locked and the body's turn read against the enemy's bearing, one
constant action destroys most scripted opponents. So a win rate is shown beside the constant action of the
same form (`saclstm tank-eval`'s "constant-action" side, `saclstm tank --fixed-action`): what learning
added is the difference.

FIXED_ACTIONS holds, per aim form (TankControls.aim), the best of a small grid of constant actions measured on
the training opponents (docs/tank-experiments.md, TankRoyale-v0, 10-20 rounds each), as (speed, body turn, aim,
fire power), with the default move and speed forms (`move = "bearing"`, `speed = "ahead"`):

    path     (8, -5, 0, 2): full ahead, 45 degrees toward the enemy from broadside, half way along its course,
             power 2. The grid's aim values -30, 0 and +30 gave the same results against all six (SittingDuck
             1.00, SpinBot 0.90, Walls 1.00, RamFire 0.90, Tracker 0.90, TrackFire 0.80 destroyed). The body
             turn of -5 is what beat SpinBot in the bearing form's grid, where (8, 0, 0, 3) won 0.10; standing
             still in the path form, (0, 0, 0, 1.5), won 0.17.
    lead     (8, -5, 0, 2): no offset from where the bullet meets it, the same orders as path's +30 above.
    bearing  (8, -5, 0, 3): straight at the bearing, the grid's best for that form (SpinBot 0.85, where
             (8, 0, 0, 3) won 0.10 and destroyed the other five in 0.85-1.00 of rounds).

    gf       (-8, 0, 0, 2), with move orbit, speed flip, observe duel, react, repeat 30 (deploy/tank.toml's
             form until 2026-12-06): turn back at every decision (each shot the enemy is seen to fire, or 30
             turns), broadside, head-on, power 2. The best mean destroyed (0.87) of the 36-action grid of
             tests/bench/bench_tank_baselines.py --grid on the nine training opponents, 20 rounds each:
             SittingDuck 1.00, SpinBot 0.85, Walls 0.45, RamFire 1.00, Tracker 1.00, TrackFire 0.95, Oscillator
             0.95, Dodger 0.80, Orbiter 0.85 (2026-12-05, after the fix of flip's wall trap; before it, 0.59).
             (-8, -5, 0, 2), closing in, 0.86 (Walls 0.05).

    gf with speed = surf   (-4, 0, 0, 2), deploy/tank.toml's form (its body held there by `fixed`): turn back on a
             shot unless going on has been the less dangerous way by half the two ways' danger (the surf form's bias
             -0.5), broadside, head-on, power 2. The best mean destroyed (0.88) of the same grid on the nine, 20
             rounds each (2026-12-06): SittingDuck 1.00, SpinBot 1.00, Walls 0.25, RamFire 1.00, Tracker 1.00,
             TrackFire 1.00, Oscillator 0.95, Dodger 0.95, Orbiter 0.80; (-8, 0, 0, 2), the reflex, 0.87. The grid
             holds no speed of 0 (the safer way, unbiased).

The first form ("rate": a gun turn rate riding on the body) has no entry: a constant gun rate spins the gun
and was never measured as a baseline; give an action for it explicitly. Under other move or speed forms the
same four numbers are read that form's way (a body turn rate of -5 circles), which was not measured either.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actor.bots.tankroyale.brain import ACT_HIGH, ACT_LOW, TankControls

FIXED_ACTIONS: dict[str, tuple[float, float, float, float]] = {
    "path": (8.0, -5.0, 0.0, 2.0),
    "lead": (8.0, -5.0, 0.0, 2.0),
    "bearing": (8.0, -5.0, 0.0, 3.0),
    "gf": (-8.0, 0.0, 0.0, 2.0),
}
# Forms whose speed form changes what the best constant action is: (aim, speed) -> action, before FIXED_ACTIONS.
FIXED_BY_SPEED: dict[tuple[str, str], tuple[float, float, float, float]] = {
    ("gf", "surf"): (-4.0, 0.0, 0.0, 2.0),
}
ACTION_NAMES = ("speed", "body turn", "aim", "fire power")


def fixed_action(controls: TankControls) -> np.ndarray:
    """The constant action of `controls`' form (FIXED_BY_SPEED, else FIXED_ACTIONS by aim), as the tank's action array.

    Raises ValueError naming the form when it has none: a baseline made up on the spot would be no baseline."""
    try:
        action = FIXED_BY_SPEED.get((controls.aim, controls.speed)) or FIXED_ACTIONS[controls.aim]
    except KeyError:
        raise ValueError(f"no constant action for the aim form {controls.aim!r} (FIXED_ACTIONS has "
                         f"{', '.join(sorted(FIXED_ACTIONS))}); give one as A,B,C,D") from None
    return np.array(action, np.float32)


def parse_action(text: str) -> np.ndarray:
    """'A,B,C,D' (speed, body turn, aim, fire power) as the tank's action; ValueError with the reason when the
    text is not four finite numbers within the action's bounds (brain.ACT_LOW..ACT_HIGH), which the tank
    would otherwise clip without a word."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != len(ACTION_NAMES):
        raise ValueError(f"give {len(ACTION_NAMES)} numbers A,B,C,D ({', '.join(ACTION_NAMES)}), not {len(parts)}")
    values = []
    for name, part, low, high in zip(ACTION_NAMES, parts, ACT_LOW, ACT_HIGH):
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"the {name} {part!r} is not a number") from None
        if not math.isfinite(value) or not float(low) <= value <= float(high):
            raise ValueError(f"the {name} {part} is outside [{float(low):g}, {float(high):g}]")
        values.append(value)
    return np.array(values, np.float32)


def describe(action: np.ndarray) -> str:
    """'(8, -5, 0, 2)': an action as a reader writes it."""
    return "(" + ", ".join(f"{float(v):g}" for v in action) + ")"


class FixedActionClient:
    """The client a tank playing the constant action embeds in place of BotClient: `act` returns the action,
    the rest keeps the episode's return and sends nothing.

    Nothing goes to a learner, not even the hello, heartbeats and evaluation returns an eval-mode BotClient
    sends: a learner listening at the default address (a training run on the same machine) would book the
    constant action's returns as its policy's evaluation. No sockets, no weights, no torch: no learner needed.
    """

    eval_mode = True

    def __init__(self, action: np.ndarray) -> None:
        self.action = np.asarray(action, np.float32).copy()
        self.ret, self.playing = 0.0, False
        self.returns: list[float] = []  # per finished episode, for whoever reports on the tank
        self.skipped = 0

    def act(self, obs: np.ndarray) -> np.ndarray:
        return self.action.copy()  # a copy: the tank holds it as its previous action

    def step(self, obs: Any, action: Any, reward: float, next_obs: Any, terminated: bool, truncated: bool,
             targets: Any = None) -> None:
        self.ret, self.playing = self.ret + float(reward), True
        if terminated or truncated:
            self.end_episode()

    def skip(self, reward: float) -> None:
        self.ret += float(reward)
        self.skipped += 1

    def new_episode(self, opponent: str | int | None = None) -> None:
        self.ret, self.playing = 0.0, True

    def end_episode(self) -> None:
        """Close the episode; safe to call twice (the tank closes a round the server cut short again)."""
        if self.playing:
            self.returns.append(self.ret)
        self.ret, self.playing = 0.0, False

    def close(self) -> None:
        """Nothing to flush or close."""
