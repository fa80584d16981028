"""The promotion gate: a candidate checkpoint becomes the live one only if it plays well enough.

    score the candidate: N deterministic episodes (eval mode: nothing is sent anywhere)
    the live score is the one recorded in the live file (scored now if it has none)
    pass if candidate >= live - margin, or candidate >= threshold (when one is set)
    on pass: the candidate, with its score recorded, replaces the live file atomically
Every decision is logged with both scores.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import numpy as np

from protocol.checkpoint import CheckpointError, decode_checkpoint, encode_checkpoint, write_atomic
from protocol.scaling import to_policy

log = logging.getLogger("saclstm.promote")


def evaluate(path: Path, env: str, obs_mask: tuple[int, ...], episodes: int, seed: int = 0) -> float:
    """Mean undiscounted return of the checkpoint's actor, deterministic, over `episodes` episodes."""
    from actor.config import ActorConfig
    from actor.daemon import make_env
    from actor.store import policy_from_checkpoint

    meta, tensors = decode_checkpoint(path.read_bytes())
    policy = policy_from_checkpoint(meta, tensors)
    game = make_env(ActorConfig(env=env, obs_mask=obs_mask))
    low, high = game.act_low, game.act_high
    returns = []
    for episode in range(episodes):
        obs, state = game.reset(seed=seed + episode), policy.initial_state()
        prev, prev_r, total, done = np.zeros(len(low), np.float32), 0.0, 0.0, False
        while not done:
            action, state = policy.act(obs, prev, prev_r, state, deterministic=True)
            obs, reward, terminated, truncated, _ = game.step(action)
            prev = to_policy(action, low, high)
            prev_r, total, done = reward, total + reward, terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def gate(candidate: float, live: float | None, margin: float, threshold: float | None) -> tuple[bool, str]:
    """The rule, on its own so it can be read and tested."""
    if live is None:
        return True, "no live model yet"
    if threshold is not None and candidate >= threshold:
        return True, f"at or above the threshold {threshold:g}"
    if candidate >= live - margin:
        return True, f"within the margin {margin:g} of the live score"
    return False, f"below the live score minus the margin {margin:g}" + (
        f" and below the threshold {threshold:g}" if threshold is not None else "")


def promote(candidate: Path, live: Path, env: str, obs_mask: tuple[int, ...], episodes: int, margin: float,
            threshold: float | None, seed: int = 0) -> bool:
    cand_meta, cand_tensors = decode_checkpoint(candidate.read_bytes())
    cand_score = evaluate(candidate, env, obs_mask, episodes, seed)
    live_score: float | None = None
    if live.exists():
        try:
            live_meta, _ = decode_checkpoint(live.read_bytes())
            live_score = live_meta.get("score")
            if live_score is None:
                live_score = evaluate(live, env, obs_mask, episodes, seed)
        except CheckpointError as exc:
            log.warning("live checkpoint %s unusable (%s): judging the candidate alone", live, exc)
    ok, why = gate(cand_score, live_score, margin, threshold)
    live_text = "none" if live_score is None else f"{live_score:.1f}"
    if ok:
        write_atomic(live, encode_checkpoint({**cand_meta, "score": cand_score, "score_episodes": episodes}, cand_tensors))
        log.info("promoted %s -> %s: candidate %.1f, live %s (%s)", candidate.name, live.name, cand_score, live_text, why)
    else:
        log.info("refused %s: candidate %.1f, live %s (%s)", candidate.name, cand_score, live_text, why)
    return ok


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("promote", help="score a candidate and make it live if it passes the gate")
    p.add_argument("candidate", help="the candidate checkpoint (e.g. live.candidate.sacl)")
    p.add_argument("--live", required=True, help="the live checkpoint path bots play from")
    p.add_argument("--env", default="Pendulum-v1", help="Gymnasium environment to score on")
    p.add_argument("--obs-mask", default="", help="observation indices to keep, e.g. 2")
    p.add_argument("--episodes", type=int, default=10, help="deterministic episodes per score")
    p.add_argument("--margin", type=float, default=0.0, help="how far below the live score a candidate may be")
    p.add_argument("--threshold", type=float, default=None, help="an absolute score that always passes")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(fn=_cmd)


def _cmd(args: argparse.Namespace) -> int:
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    mask = tuple(int(x) for x in args.obs_mask.split(",") if x.strip())
    try:
        ok = promote(Path(args.candidate), Path(args.live), args.env, mask, args.episodes, args.margin, args.threshold,
                     args.seed)
    except (OSError, CheckpointError, ValueError) as exc:
        log.error("promotion of %s failed: %s", args.candidate, exc)
        return 2
    return 0 if ok else 1
