"""Robocode Tank Royale: everything the game needs lives here.

    brain.py   what our tank sees, does and is rewarded for (pure, no bot API)
    tank.py    our tank on the official Python bot API
    cli.py     `saclstm tank`
The rest of the project knows Tank Royale only as a bot, an environment id and commands.
"""
