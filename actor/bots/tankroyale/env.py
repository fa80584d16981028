"""Tank Royale as a Gymnasium environment: our tank against one scripted opponent, in process.

    gymnasium.make("TankRoyale-v0", opponent="SpinBot", arena=(800, 600), max_turns=2000, seed=0)
    opponent="SpinBot+Walls+RamFire" or "all": each episode draws one of them (info["opponent"] names it)
    aim="path"|"bearing"|"lead"|"rate", radar="lock"|"spin", move="bearing"|"rate", speed="ahead"|"target",
    repeat=N: the action's form
    (TankControls); still=True: our tank cannot move or turn its body (the aiming rung of the ladder);
    fixed="aim=0;power=2": those parts of every action held by the controls (TankControls.fixed: a rung, or a
    run, that learns the others alone)

One round is one episode, played by the rules engine (engine.py) with no server and no sockets.
What the tank sees and is rewarded for is the bot's own code: the same TankBrain reads the same
schema-shaped events (`apply`) and the same state (`observe`) as `tank.py` in a networked game, and
its action becomes the same orders (`commands`, radar spinning at its maximum), so experience from
here and from a real battle are alike. The opponent is a policy from opponents.py, fed the engine's
dicts for its own bot.

    reset -> a fresh one-round game (our tank id 1, the opponent id 2), seeded from the env's rng
    step  -> our intent from the action, the opponent's from its policy, one engine turn, the turn's
             events for id 1 into the brain; reward = take_reward()
    terminated when the round ended for us (we died or won), truncated after max_turns steps
`--env TankRoyale-v0` on the actor daemon works because actor/envs/tankroyale.py registers the id by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np

from actor.bots.tankroyale.brain import ACT_HIGH, ACT_LOW, Orders, TankBrain, TankControls, TankRewards, obs_dim
from actor.bots.tankroyale.engine import Engine, Intent, Participant, Setup, Turn
from actor.bots.tankroyale.opponents import OPPONENTS, Me, act_on_turn, make
from actor.envs.tankroyale import TANK_ROYALE as ENV_ID  # noqa: F401 - registered there, by name; importers read it here

ME, THEM = 1, 2


def parse_opponents(opponent: str) -> tuple[str, ...]:
    """"SpinBot", "SpinBot+Walls" (one drawn per episode) or "all"; `+` because --env-kwargs splits on commas."""
    names = tuple(OPPONENTS) if opponent == "all" else tuple(n.strip() for n in str(opponent).split("+"))
    unknown = [n for n in names if n not in OPPONENTS]
    if unknown or not names:
        raise ValueError(f"unknown opponent {unknown[0] if unknown else opponent!r}; known: {', '.join(OPPONENTS)}"
                         " (several: A+B, or all)")
    return names


def parse_arena(arena: Any) -> tuple[int, int]:
    """(w, h), or "800x600" (what `--env-kwargs arena=800x600` hands over)."""
    if isinstance(arena, str):
        text_w, sep, text_h = arena.lower().partition("x")
        if not sep:
            raise ValueError(f"arena {arena!r}: expected WIDTHxHEIGHT, e.g. 800x600")
        arena = (text_w, text_h)
    try:
        w, h = (int(v) for v in arena)
    except (TypeError, ValueError):
        raise ValueError(f"arena {arena!r}: expected (width, height)") from None
    if not (400 <= w <= 5000 and 400 <= h <= 5000):  # the official server's limits
        raise ValueError(f"arena {w}x{h}: width and height must be within 400..5000")
    return w, h


class TankRoyaleEnv(gym.Env):
    """Our tank (TankBrain) against a scripted opponent on the rules engine; one round per episode."""

    metadata = {"render_modes": []}

    def __init__(self, opponent: str = "SpinBot", arena: Any = (800, 600), max_turns: int = 2000,
                 seed: int | None = None, rewards: TankRewards | str | None = None, aim: str | None = None,
                 radar: str | None = None, move: str | None = None, speed: str | None = None,
                 still: Any = False, repeat: int | None = None, react: Any = None, observe: str | None = None,
                 fixed: str | dict[str, float] | None = None, wall_stick: Any = None,
                 kill_shot: Any = None) -> None:
        if int(max_turns) < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        self.roster = parse_opponents(opponent)
        self.opponent, self.arena, self.max_turns = self.roster[0], parse_arena(arena), int(max_turns)
        self.setup = Setup(arena_width=self.arena[0], arena_height=self.arena[1], number_of_rounds=1)
        if isinstance(rewards, str):  # "fired=-0.1;kill=5", as --env-kwargs can hand it over
            rewards = TankRewards(**{k: float(v) for k, v in (kv.split("=") for kv in rewards.split(";") if kv)})
        self.brain = TankBrain(rewards or TankRewards(), self.arena,
                               controls(aim, radar, move, speed, repeat, react, observe, fixed, wall_stick,
                                        kill_shot))
        self.drive = str(still).lower() in ("false", "0", "no")  # --env-kwargs hands over text
        self.brain.my_id = ME
        self.policies = {name: make(name) for name in self.roster}
        self.policy = self.policies[self.opponent]
        width = obs_dim(self.brain.controls)
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (width,), np.float32)
        self.action_space = gym.spaces.Box(ACT_LOW, ACT_HIGH, dtype=np.float32)
        self._first_seed = seed
        self.engine: Engine | None = None
        self.turn: Turn | None = None
        self.obs = np.zeros(width, np.float32)
        self.steps = 0  # this episode's
        # called after every engine turn of a step, with the env: what studies a round turn by turn reads (a
        # decision spans up to `repeat` turns, and a shot leaves on one of them)
        self.watch: Callable[[TankRoyaleEnv], None] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        if seed is None and self._first_seed is not None:
            seed = self._first_seed
        self._first_seed = None
        super().reset(seed=seed)
        game_seed, policy_seed, pick = (int(v) for v in self.np_random.integers(0, 2**31 - 1, size=3))
        opponent = self.roster[pick % len(self.roster)]
        if opponent != self.opponent:
            self.brain.surf.forget()  # speed = surf: what the last opponent's shots did says nothing of this one
        self.opponent = opponent
        self.policy = self.policies[self.opponent]
        self.engine = Engine(self.setup, [Participant(ME, "saclstm-tank"), Participant(THEM, self.opponent)],
                             seed=game_seed)
        self.policy.reset(np.random.default_rng(policy_seed))
        self.brain.new_round(seed=policy_seed + 1)
        self.brain.enemies_left = 1
        self.turn, self.steps = self.engine.new_round(), 0
        self.brain.apply(self.turn.events.get(ME, []))
        self.obs = self.brain.observe(Me.from_schema(self.turn.bot_states[ME]), self.turn.turn_number)
        self.brain.take_reward()  # as tank.py: the first turn closes no step, so its tally goes nowhere
        return self.obs.copy(), self._info()

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self.engine is None or self.turn is None:
            raise RuntimeError("step() before reset()")
        if self.turn.round_ended or self.brain.outcome is not None:
            raise RuntimeError("step() after the episode ended; call reset()")
        reward, terminated, truncated = 0.0, False, False
        self.brain.decide()
        for held in range(1, self.brain.controls.repeat + 1):  # the action held; aim and radar follow the enemy
            intents = {ME: intent(self.brain.orders(action, held - 1), self.drive)}
            if THEM in self.turn.bot_states:
                intents[THEM] = act_on_turn(self.policy, THEM, self.turn, self.arena)
            self.turn = self.engine.step(intents)
            self.brain.apply(self.turn.events.get(ME, []))
            state = self.turn.bot_states.get(ME)  # the contract keeps a bot that died this turn, at energy 0
            if state is not None:
                self.obs = self.brain.observe(Me.from_schema(state), self.turn.turn_number)
            terminated = self.brain.outcome is not None  # died or won, as tank.py ends its episode
            self.steps += 1
            truncated = not terminated and (self.turn.round_ended or self.steps >= self.max_turns)
            reward += self.brain.take_reward()
            if self.watch is not None:
                self.watch(self)
            if terminated or truncated or self.brain.decision_due(held):
                break
        return self.obs.copy(), reward, terminated, truncated, self._info()

    def _info(self) -> dict[str, Any]:
        t = self.turn
        assert t is not None
        energy = {bot: float(s["energy"]) for bot, s in t.bot_states.items()}
        return {"opponent": self.opponent, "turn": t.turn_number, "won": self.brain.outcome == "won",
                "outcome": self.brain.outcome, "energy": energy.get(ME, 0.0), "opponent_energy": energy.get(THEM, 0.0),
                "tally": self.brain.tally.to_dict(), "action_targets": self.brain.take_targets()}


def _flag(value: Any) -> bool | None:
    """A switch as --env-kwargs hands it over (text) or as Python gives it; None: not given."""
    return None if value is None else str(value).lower() in ("true", "1", "yes")


def controls(aim: str | None, radar: str | None, move: str | None, speed: str | None, repeat: Any,
             react: Any = None, observe: str | None = None,
             fixed: str | dict[str, float] | None = None, wall_stick: Any = None,
             kill_shot: Any = None) -> TankControls:
    """TankControls with the given fields over its defaults (the networked tank's), so both play alike.
    `fixed` may be a mapping, {"aim": 0}, as well as TankControls' text, "aim=0;power=2"."""
    if isinstance(fixed, dict):
        fixed = ";".join(f"{k}={v}" for k, v in fixed.items())
    given: dict[str, Any] = {"aim": aim, "radar": radar, "move": move, "speed": speed,
                             "repeat": None if repeat is None else int(repeat),
                             "react": _flag(react),
                             "observe": observe, "fixed": fixed,
                             "wall_stick": None if wall_stick is None else float(wall_stick),
                             "kill_shot": _flag(kill_shot)}
    return replace(TankControls(), **{k: v for k, v in given.items() if v is not None})


def intent(o: Orders, drive: bool = True) -> Intent:
    """The engine's intent for the brain's orders; without `drive` the body neither moves nor turns."""
    flag = o.independent
    return Intent(target_speed=o.target_speed if drive else 0.0, turn_rate=o.turn_rate if drive else 0.0,
                  gun_turn_rate=o.gun_turn_rate, radar_turn_rate=o.radar_turn_rate, firepower=o.firepower,
                  adjust_gun_for_body_turn=flag, adjust_radar_for_body_turn=flag, adjust_radar_for_gun_turn=flag)
