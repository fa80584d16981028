"""`python -m actor.bots.tankroyale.opponents NAME --server URL`: one opponent as a bot (bot.py)."""

import sys

from actor.bots.tankroyale.opponents.bot import main

sys.exit(main())
