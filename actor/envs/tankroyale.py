"""TankRoyale-v0, registered by name: `--env TankRoyale-v0` works on the actor daemon, which imports this
package and not the game. gymnasium imports the game (actor/bots/tankroyale/env.py) when one is made.

    gymnasium.make("TankRoyale-v0", opponent="SpinBot", ...)   # the kwargs: actor/bots/tankroyale/env.py
"""

from __future__ import annotations

import gymnasium as gym

TANK_ROYALE = "TankRoyale-v0"


def register() -> None:
    """Idempotent: importing the package twice (or reloading it) registers the id once."""
    if TANK_ROYALE not in gym.registry:
        gym.register(id=TANK_ROYALE, entry_point="actor.bots.tankroyale.env:TankRoyaleEnv")


register()
