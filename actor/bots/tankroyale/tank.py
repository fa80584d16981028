"""A Robocode Tank Royale tank that trains with saclstm (`saclstm tank --server ws://...`).

    round started   -> client.new_episode(opponent=name, or numeric id)
    each turn       -> the turn's events (all of them, from its TickEvent) into the brain; every `repeat`
                       turns (TankControls) the step that ends at this turn with the rewards of the turns
                       it held, action = client.act(obs); commands from the held action, go()
    won or died     -> that turn's events, then the last step with terminated=True
    round ended     -> if still playing: the last step was the round's last, truncated
A turn is handled once, at the first handler the bot API calls for it: a won round and our death are
critical events, dispatched before the turn's TickEvent, so their handlers read the same TickEvent
(the bot API's `events` queue holds it) and close the episode with every hit and kill of that turn.
A turn the server played without our intent (a SkippedTurnEvent) is not sent as a step taken as
commanded: the client leaves a gap there, and the count is kept.
The bot API calls round-ended on its socket thread, possibly while the bot thread is still to dispatch
the round's last turn: the handlers hold one lock, and round-ended plays any queued turn first.
`detach()` (saclstm tank on a signal) takes that lock too: after it, no handler touches the client, which the
main thread then closes.
Everything in a turn is in memory: the client never waits on the network,
and a turn costs well under the game's turn timeout (tests/bench/bench_tank.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

import numpy as np
from robocode_tank_royale.bot_api import Bot, BotInfo
from robocode_tank_royale.bot_api.events import (
    BotDeathEvent,
    BulletFiredEvent,
    BulletHitBotEvent,
    DeathEvent,
    GameStartedEvent,
    HitBotEvent,
    HitByBulletEvent,
    HitWallEvent,
    RoundEndedEvent,
    RoundStartedEvent,
    ScannedBotEvent,
    SkippedTurnEvent,
    TickEvent,
    WonRoundEvent,
)

from actor.bots.tankroyale.baseline import FixedActionClient
from actor.bots.tankroyale.botapi import cheaper_messages, end_on_clean_close
from actor.bots.tankroyale.brain import ACT_HIGH, ACT_LOW, TankBrain, TankControls, TankRewards, obs_dim
from actor.client import BotClient

log = logging.getLogger("saclstm.tank")


def as_schema(e: Any, me: int) -> dict[str, Any] | None:
    """A bot API event as the protocol's schema map (what the brain and the engine speak); None: no reward in it."""
    turn = e.turn_number
    if isinstance(e, ScannedBotEvent):
        return {"type": "ScannedBotEvent", "turnNumber": turn, "scannedByBotId": e.scanned_by_bot_id,
                "scannedBotId": e.scanned_bot_id, "energy": e.energy, "x": e.x, "y": e.y, "direction": e.direction,
                "speed": e.speed}
    if isinstance(e, BulletFiredEvent):
        bullet = {"ownerId": me, "power": e.bullet.power, "direction": e.bullet.direction,
                  "x": getattr(e.bullet, "x", None), "y": getattr(e.bullet, "y", None)}  # where it left: hindsight
        return {"type": "BulletFiredEvent", "turnNumber": turn, "bullet": {k: v for k, v in bullet.items()
                                                                              if v is not None}}
    if isinstance(e, BulletHitBotEvent):
        return {"type": "BulletHitBotEvent", "turnNumber": turn, "victimId": e.victim_id, "bullet": {"ownerId": me},
                "damage": e.damage, "energy": e.energy}
    if isinstance(e, HitByBulletEvent):
        b = e.bullet  # where it came from tells speed = surf which of the enemy's waves found us
        bullet = {"ownerId": getattr(b, "owner_id", None), "power": getattr(b, "power", None),
                  "direction": getattr(b, "direction", None)}
        return {"type": "BulletHitBotEvent", "turnNumber": turn, "victimId": me,
                "bullet": {k: v for k, v in bullet.items() if v is not None},
                "damage": e.damage, "energy": e.energy}
    if isinstance(e, HitBotEvent):
        return {"type": "BotHitBotEvent", "turnNumber": turn, "botId": me, "victimId": e.victim_id,
                "energy": e.energy, "x": e.x, "y": e.y, "rammed": e.rammed}
    if isinstance(e, HitWallEvent):
        return {"type": "BotHitWallEvent", "turnNumber": turn, "victimId": me}
    if isinstance(e, DeathEvent):
        return {"type": "BotDeathEvent", "turnNumber": turn, "victimId": me}
    if isinstance(e, BotDeathEvent):
        return {"type": "BotDeathEvent", "turnNumber": turn, "victimId": e.victim_id}
    if isinstance(e, WonRoundEvent):
        return {"type": "WonRoundEvent", "turnNumber": turn}
    return None


class SaclstmTank(Bot):
    """Event-driven: the game calls the handlers, the client does the learning (or, a FixedActionClient, plays
    the constant action of the baseline through the same orders, sending nothing).

    A `Bot` whose run loop only calls go(): the bot API dispatches a turn's events from go() (a
    BaseBot that called go() only in its handlers would never be told of a tick), on_tick sets the
    orders, and the next go() sends them.
    """

    def __init__(self, client: BotClient | FixedActionClient, rewards: TankRewards | None = None,
                 bot_info: BotInfo | None = None, server_url: str | None = None, server_secret: str | None = None,
                 live: bool = True, controls: TankControls | None = None) -> None:
        end_on_clean_close()  # else a server shutting down cleanly leaves start() waiting forever
        cheaper_messages()  # the same objects from each tick, for less of the CPU a turn costs
        super().__init__(bot_info or BotInfo(name="saclstm-tank", version="0.1.0", authors=["saclstm"]),
                         server_url, server_secret)
        self.client, self.brain, self.live = client, TankBrain(rewards or TankRewards(),
                                                                    controls=controls or TankControls()), live
        self.prev_obs: np.ndarray | None = None
        self.prev_action: np.ndarray | None = None
        self.opponent: str | None = None
        self.ended = True
        self.last_turn = 0  # the newest turn handled this round
        self.skip_pending = False  # the server played a turn of this decision without our intent
        self.pending, self.held = 0.0, 0  # the reward and turns of the decision in progress
        self.turns = self.skipped = self.rounds = 0  # totals over the game, for the tank's report
        self._lock = threading.RLock()  # the bot thread and the socket thread both call handlers
        self.detached = False  # set by detach(): the handlers leave the client alone

    def detach(self, timeout: float = 2.0) -> None:
        """From here on no handler uses the client (the main thread is closing it). Waits, up to `timeout`, for
        a handler that is using it now."""
        held = self._lock.acquire(timeout=timeout)
        self.detached = True
        if held:
            self._lock.release()

    # -- game and round -------------------------------------------------------------------

    def on_game_started(self, e: GameStartedEvent) -> None:
        self.brain.width, self.brain.height = e.game_setup.arena_width, e.game_setup.arena_height
        self.brain.my_id = e.my_id
        self.brain.surf.forget()  # a new game: its enemy may be another than the last one's

    def on_round_started(self, e: RoundStartedEvent) -> None:
        with self._lock:
            if self.detached:
                return
            self.brain.new_round()
            self.brain.enemies_left = max(1, self._enemy_count())
            self.prev_obs = self.prev_action = None
            self.ended, self.last_turn, self.skip_pending, self.pending, self.held = False, 0, False, 0.0, 0
            self.rounds += 1
            self.opponent = self._sole_opponent() or self.opponent
            self.client.new_episode(opponent=self.opponent)

    def on_round_ended(self, e: RoundEndedEvent) -> None:
        with self._lock:
            if self.detached:
                return
            for tick in sorted(self._queued_ticks(), key=lambda t: t.turn_number):
                self._turn(tick.turn_number, tick.events, tick.bot_state)  # the last turn, not yet dispatched
            self._finish(terminated=False)  # survived to the end of the round: cut, not terminal

    def on_death(self, e: DeathEvent) -> None:
        self._critical(e)

    def on_won_round(self, e: WonRoundEvent) -> None:
        self._critical(e)

    def on_skipped_turn(self, e: SkippedTurnEvent) -> None:
        with self._lock:
            self.skipped += 1
            self.skip_pending = True

    def on_scanned_bot(self, e: ScannedBotEvent) -> None:
        self.opponent = self._name(e.scanned_bot_id)  # the brain reads the scan from the turn's events

    # -- the turn -------------------------------------------------------------------------

    def on_tick(self, e: TickEvent) -> None:
        with self._lock:
            if self.detached:
                return
            self._turn(e.turn_number, e.events, e.bot_state)

    def _critical(self, e: DeathEvent | WonRoundEvent) -> None:
        """Dispatched before its turn's TickEvent: play that turn now, from the TickEvent still queued."""
        with self._lock:
            if self.detached:
                return
            tick = next((t for t in self._queued_ticks() if t.turn_number == e.turn_number), None)
            if tick is not None:
                self._turn(tick.turn_number, tick.events, tick.bot_state)
            if not self.ended:  # its turn went before it (or never came): the event alone ends the episode
                event = as_schema(e, self.brain.my_id)
                self.brain.apply([event] if event is not None else [])
                self._finish(terminated=True)

    def _queued_ticks(self) -> list[TickEvent]:
        try:
            return [t for t in (self.events or ()) if isinstance(t, TickEvent)]
        except Exception:  # the bot API raises when no game is running
            return []

    def _turn(self, turn: int, events: Iterable[Any], bot_state: Any) -> None:
        """One turn, once: its events, and at a decision (every `repeat` turns, or the end) the step that ends
        here with the rewards of the turns it held, and the next action; between decisions the action is held
        and only the aim and the radar follow the enemy."""
        if self.ended or turn <= self.last_turn:
            return
        self.last_turn = turn
        self.turns += 1
        me = self.brain.my_id
        self.brain.apply([m for m in (as_schema(ev, me) for ev in events) if m is not None])
        obs = self.brain.observe(bot_state, turn) if bot_state is not None else self.prev_obs
        self.pending += self.brain.take_reward()
        done = self.brain.outcome is not None
        self.held += 1
        if self.prev_obs is not None and self.prev_action is not None and obs is not None:
            if not done and not self.brain.decision_due(self.held):
                self.command(self.prev_action)  # the decision holds; aim and radar from this turn's state
                return
            if self.skip_pending and not done:
                self.client.skip(self.pending)  # the server kept an old intent: not the step we recorded
            else:
                self.client.step(self.prev_obs, self.prev_action, self.pending, obs, done, False, self._labels())
        self.skip_pending, self.pending, self.held = False, 0.0, 0
        if done:
            self.ended = True
            if self.prev_obs is None:
                self.client.end_episode()
            return
        assert obs is not None
        action = self.client.act(obs)
        self.brain.decide()
        self.prev_obs, self.prev_action = obs, action
        self.command(action)

    def run(self) -> None:
        while self.running:
            self.go()

    def command(self, action: np.ndarray) -> None:
        """Orders for the next go(): the bot API sends them as this turn's intent."""
        o = self.brain.orders(action, self.held)
        self.adjust_gun_for_body_turn = self.adjust_radar_for_body_turn = o.independent
        self.adjust_radar_for_gun_turn = o.independent
        self.target_speed, self.turn_rate, self.gun_turn_rate = o.target_speed, o.turn_rate, o.gun_turn_rate
        self.radar_turn_rate = o.radar_turn_rate
        if o.firepower > 0:
            self.set_fire(o.firepower)

    # -- helpers --------------------------------------------------------------------------

    def _finish(self, terminated: bool) -> None:
        """The episode's last step when no turn closed it: from the last observation to itself."""
        if self.ended:
            return
        self.ended = True
        if self.prev_obs is not None and self.prev_action is not None:
            self.client.step(self.prev_obs, self.prev_action, self.pending + self.brain.take_reward(),
                             self.prev_obs, terminated, not terminated, self._labels())
        else:
            self.client.end_episode()

    def _labels(self) -> dict[int, np.ndarray] | None:
        """The aim labels of the shots whose waves passed since the last step, for the steps that fired them; None
        (taken and let go) when the actor does not wait for labels (`label_wait` 0). Why: a shot's label comes
        decisions after its step, whose batch has then left, so without the wait every label would be dropped and
        counted (`labels_late`) for a learner that did not ask for them."""
        targets = self.brain.take_targets()
        client = self.client
        if isinstance(client, FixedActionClient) or client.eval_mode or client.cfg.label_wait == 0:
            return None
        return targets

    def _name(self, bot_id: int) -> str:
        """The opponent key: its name, or its numeric id while the name is unknown (the original Nim bot's rule)."""
        try:
            name = self.get_bot_name(bot_id) if self.live else None
        except Exception:  # the bot API raises when no game is running
            name = None
        return name or str(bot_id)

    def _sole_opponent(self) -> str | None:
        """In a one-on-one game the key is known before any scan: the name of the other participant."""
        if not self.live:
            return None
        try:
            names = [self.get_bot_name(i) for i in (1, 2) if i != self.my_id]
        except Exception:  # the bot API raises when no game is running
            return None
        return names[0] if self._enemy_count() == 1 and len(names) == 1 and names[0] else None

    def _enemy_count(self) -> int:
        try:
            return int(self.enemy_count) if self.live else 1
        except Exception:
            return 1


def spec(controls: TankControls | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(obs_low, obs_high, act_low, act_high) for the client's hello: the observation as wide as the form's."""
    width = obs_dim(controls or TankControls())
    return -np.ones(width, np.float32), np.ones(width, np.float32), ACT_LOW, ACT_HIGH
