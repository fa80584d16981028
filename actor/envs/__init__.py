"""Gymnasium environments shipped with saclstm; importing this package registers their ids.

    memory.py       the memory tasks (saclstm/DelayedRecall-v0, ...)
    tankroyale.py   TankRoyale-v0, by name (the game loads when one is made)
"""

from actor.envs import memory, tankroyale  # noqa: F401 - each registers its ids
