"""Robocode Tank Royale: everything the game needs lives here.

    rules.py, engine.py   the official rules as one pure, deterministic engine (turn in, turn out)
    protocol_tr.py        the official WebSocket protocol's message shapes
    server.py             a headless game server on that protocol, bot and controller side
    controller.py         a controller client: ours here, or an official server elsewhere
    brain.py              what our tank sees, does and is rewarded for, and how its action becomes
                          orders (TankControls: the action's forms; pure, no bot API)
    surf.py               wave surfing: the enemy's shots as waves, and which way to go (speed = "surf")
    guess_factors.py      the guess-factor angle and bins, shared by surf.py and the opponents' learning guns
    tank.py               our tank on the official Python bot API
    opponents.py          scripted opponents (sample-bot behaviours) and two baselines
    env.py                TankRoyale-v0: the engine as a Gymnasium environment, no sockets (registered by
                          name in actor/envs/, so the actor daemon does not import the game)
    fight.py              a round's fight from the observer's turns: shots, hits, damage, how it was won
    replay.py             a round as a self-contained HTML page (`tank-eval --replay`)
    fits.py               whether a checkpoint can play our tank
    cli.py                `saclstm tank`
Runs of the game (`saclstm tank-train`, `tank-eval`, the arenas they play) are deploy/tank/'s, beside
every other kind of run; the rest of the project knows Tank Royale only as a bot, an environment id and
commands.
"""
