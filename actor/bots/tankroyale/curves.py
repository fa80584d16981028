"""Curves of a tank's training: win rate and mean round score against rounds played, per opponent."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def rolling(values: list[float], window: int) -> list[float]:
    """The mean of the last `window` values at each point (fewer at the start)."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def plot_rounds(rounds: list[dict[str, Any]], path: Path, title: str = "", window: int = 20) -> Path | None:
    """One PNG, two panels; None when there is nothing to plot."""
    if not rounds:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_win, ax_score) = plt.subplots(1, 2, figsize=(11, 4))
    for name in sorted({r["opponent"] for r in rounds}):
        mine = [r for r in rounds if r["opponent"] == name]
        x = list(range(1, len(mine) + 1))
        ax_win.plot(x, rolling([1.0 if r["won"] else 0.0 for r in mine], window), label=name)
        ax_score.plot(x, rolling([float(r["score"]) for r in mine], window), label=name)
    ax_win.set(xlabel="rounds against this opponent", ylabel=f"win rate (last {window})", ylim=(-0.02, 1.02))
    ax_score.set(xlabel="rounds against this opponent", ylabel=f"round score (last {window})")
    for ax in (ax_win, ax_score):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title or "tank training")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
