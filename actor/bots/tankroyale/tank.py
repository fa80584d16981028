"""A Robocode Tank Royale tank that trains with saclstm (`saclstm tank --server ws://...`).

    round started   -> client.new_episode(opponent=name, or numeric id)
    each turn       -> reward of the last turn, client.step(...), action = client.act(obs), commands, go()
    death/round end -> the last step with terminated=True
Everything in a turn is in memory: the client never waits on the network,
and a turn costs well under the game's turn timeout (tests/bench/bench_tank.py).
"""

from __future__ import annotations

import logging

import numpy as np
from robocode_tank_royale.bot_api import BaseBot, BotInfo
from robocode_tank_royale.bot_api.events import (
    BotDeathEvent,
    BulletHitBotEvent,
    DeathEvent,
    GameStartedEvent,
    HitBotEvent,
    HitByBulletEvent,
    HitWallEvent,
    RoundEndedEvent,
    RoundStartedEvent,
    ScannedBotEvent,
    TickEvent,
    WonRoundEvent,
)

from actor.bots.tankroyale.brain import ACT_HIGH, ACT_LOW, MAX_RADAR_TURN, OBS_DIM, TankBrain, TankRewards
from actor.client import BotClient

log = logging.getLogger("saclstm.tank")

# Ram damage in Tank Royale: 0.6 energy to each bot per collision.
RAM_DAMAGE = 0.6


class SaclstmTank(BaseBot):
    """Event-driven: the game calls the handlers, the client does the learning."""

    def __init__(self, client: BotClient, rewards: TankRewards | None = None, bot_info: BotInfo | None = None,
                 server_url: str | None = None, server_secret: str | None = None, live: bool = True) -> None:
        super().__init__(bot_info or BotInfo(name="saclstm-tank", version="0.1.0", authors=["saclstm"]),
                         server_url, server_secret)
        self.client, self.brain, self.live = client, TankBrain(rewards or TankRewards()), live
        self.prev_obs: np.ndarray | None = None
        self.prev_action: np.ndarray | None = None
        self.opponent: str | None = None
        self.ended = True

    # -- game and round -------------------------------------------------------------------

    def on_game_started(self, e: GameStartedEvent) -> None:
        self.brain.width, self.brain.height = e.game_setup.arena_width, e.game_setup.arena_height

    def on_round_started(self, e: RoundStartedEvent) -> None:
        self.brain.new_round()
        self.brain.enemies_left = max(1, self._enemy_count())
        self.prev_obs = self.prev_action = None
        self.ended = False
        self.client.new_episode(opponent=self.opponent)

    def on_round_ended(self, e: RoundEndedEvent) -> None:
        self._finish(terminated=False)  # survived to the end of the round: cut, not terminal

    def on_death(self, e: DeathEvent) -> None:
        self.brain.died()
        self._finish(terminated=True)

    def on_won_round(self, e: WonRoundEvent) -> None:
        self.brain.won()
        self._finish(terminated=True)

    # -- what happened this turn ----------------------------------------------------------

    def on_scanned_bot(self, e: ScannedBotEvent) -> None:
        self.brain.scanned(e.scanned_bot_id, e.x, e.y, e.energy, e.direction, e.speed, e.turn_number)
        self.opponent = self._name(e.scanned_bot_id)

    def on_bullet_hit(self, e: BulletHitBotEvent) -> None:
        self.brain.damage_dealt(e.damage)
        if e.energy <= 0:  # the victim's energy after our hit: we killed it
            self.brain.bot_died(e.victim_id, by_us=True)

    def on_hit_by_bullet(self, e: HitByBulletEvent) -> None:
        self.brain.damage_taken(e.damage)

    def on_hit_bot(self, e: HitBotEvent) -> None:
        self.brain.hit_bot = True
        self.brain.damage_taken(RAM_DAMAGE)
        self.brain.damage_dealt(RAM_DAMAGE)

    def on_hit_wall(self, e: HitWallEvent) -> None:
        self.brain.hit_wall = True

    def on_bot_death(self, e: BotDeathEvent) -> None:
        self.brain.bot_died(e.victim_id, by_us=False)  # ours was already counted by on_bullet_hit

    def on_tick(self, e: TickEvent) -> None:
        """One turn: close the last step, act, command. No I/O waits here."""
        if e.bot_state is None or self.ended:
            return
        obs = self.brain.observe(e.bot_state, e.turn_number)
        if self.prev_obs is not None and self.prev_action is not None:
            self.client.step(self.prev_obs, self.prev_action, self.brain.take_reward(), obs, False, False)
        action = self.client.act(obs)
        self.prev_obs, self.prev_action = obs, action
        self.command(action)

    def command(self, action: np.ndarray) -> None:
        speed, turn, gun_turn, power = self.brain.commands(action)
        self.target_speed, self.turn_rate, self.gun_turn_rate = speed, turn, gun_turn
        self.radar_turn_rate = MAX_RADAR_TURN
        if power > 0:
            self.set_fire(power)
        if self.live:
            self.go()

    # -- helpers --------------------------------------------------------------------------

    def _finish(self, terminated: bool) -> None:
        """The episode's last step: from the last observation to itself, terminated or cut."""
        if self.ended:
            return
        self.ended = True
        if self.prev_obs is not None and self.prev_action is not None:
            self.client.step(self.prev_obs, self.prev_action, self.brain.take_reward(), self.prev_obs,
                             terminated, not terminated)
        else:
            self.client.end_episode()

    def _name(self, bot_id: int) -> str:
        """The opponent key: its name, or its numeric id while the name is unknown (the seed's rule)."""
        try:
            name = self.get_bot_name(bot_id) if self.live else None
        except Exception:  # the bot API raises when no game is running
            name = None
        return name or str(bot_id)

    def _enemy_count(self) -> int:
        try:
            return int(self.enemy_count) if self.live else 1
        except Exception:
            return 1


def spec() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(obs_low, obs_high, act_low, act_high) for the client's hello."""
    return -np.ones(OBS_DIM, np.float32), np.ones(OBS_DIM, np.float32), ACT_LOW, ACT_HIGH
