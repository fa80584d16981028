"""Learning curves from a metrics JSONL file: return against env steps, losses and alpha beside it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def read_metrics(path: str | Path) -> list[dict]:
    """The learner's metrics.jsonl lines (one per training pass); none when there is no file, and a line cut
    by a crash is skipped, the rest kept. Every kind of run's curves read the learner's side from here."""
    if not Path(path).exists():
        return []
    rows = []
    with open(path) as fh:
        for line in fh:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def plot_curves(metrics: str | Path, out: str | Path, eval_return: float | None = None, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_metrics(metrics)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    steps = [r["env_steps"] for r in rows]
    ret = [(r["env_steps"], r["recent_return"]) for r in rows if r.get("recent_return") is not None]
    ax = axes[0]
    if ret:
        ax.plot(*zip(*ret), label="training return (mean of last 10 episodes)")
    if eval_return is not None and steps:
        ax.scatter([steps[-1]], [eval_return], color="red", zorder=3, label=f"deterministic eval: {eval_return:.0f}")
    ax.set_xlabel("env steps")
    ax.set_ylabel("episode return")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    for ax, keys in ((axes[1], ("critic_loss", "actor_loss")), (axes[2], ("alpha", "utd_achieved"))):
        for key in keys:
            pts = [(r["env_steps"], r[key]) for r in rows if key in r]
            if pts:
                ax.plot(*zip(*pts), label=key)
        ax.set_xlabel("env steps")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    axes[2].set_yscale("log")
    fig.suptitle(title or str(metrics))
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="saclstm plot", description="Learning curves (return against env steps, "
                                "losses, alpha, UTD) from a learner's metrics JSONL file.")
    p.add_argument("metrics", help="the metrics JSONL file (learner --metrics-path)")
    p.add_argument("-o", "--out", default="curves.png", help="PNG to write")
    p.add_argument("--title", default="")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not Path(args.metrics).exists() or not read_metrics(args.metrics):
        print(f"saclstm plot: {args.metrics}: no metrics lines", file=sys.stderr)
        return 1
    print(plot_curves(args.metrics, args.out, title=args.title))
    return 0
