"""Runs of the Robocode Tank Royale game: training, evaluation and the battles they play.

    battle.py     arenas: a game server, bot processes and a controller playing games back to back;
                  rounds as they end (RoundRecord, RoundLog), win rates with their intervals
    train.py      `saclstm tank-train`: a kind of run (deploy/run.py) of N tanks against scripted opponents
    progress.py   its live table and summary lines (deploy/progress.py's view)
    curves.py     its curves: per opponent against rounds, and the learner's alpha and entropy
    evaluate.py   `saclstm tank-eval`: a checkpoint, deterministic, beside two baselines

The game itself (rules, engine, server, controller, our tank, the opponents, TankRoyale-v0) lives in
actor/bots/tankroyale/; these modules run it.
"""
