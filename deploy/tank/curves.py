"""Curves of a tank's training, per opponent against rounds played: win rate, mean round score, hit rate,
damage dealt and taken per round; and the learner's alpha and entropy against gradient steps.

The fight panels tell what a win rate hides (a tank that shoots straight, or one that waits for its
opponent to die of inactivity); alpha and entropy say whether the policy still explores. Rounds from
older logs, without fight fields, count for the win and score panels only.
"""

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


def rolling_ratio(num: list[float], den: list[float], window: int) -> list[float]:
    """sum(num) / sum(den) over the last `window` points (a hit rate over rounds, not a mean of rates); NaN
    where the window's den is 0 (no shot: no hit rate)."""
    a, b = rolling(num, window), rolling(den, window)
    return [x / y if y else float("nan") for x, y in zip(a, b)]


def plot_rounds(rounds: list[dict[str, Any]], path: Path, title: str = "", window: int = 20,
                metrics: list[dict[str, Any]] | None = None) -> Path | None:
    """One PNG of `figure`'s six panels; None when no round ended."""
    if not rounds:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = figure(rounds, title, window, metrics)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def figure(rounds: list[dict[str, Any]], title: str = "", window: int = 20,
           metrics: list[dict[str, Any]] | None = None) -> Any:
    """The figure: per opponent win rate, score, hit rate, damage dealt and taken; the learner's panel (alpha
    and entropy from `metrics`, the learner's metrics.jsonl lines) says so when there is none."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    (ax_win, ax_score, ax_hit), (ax_dealt, ax_taken, ax_learner) = axes
    for name in sorted({r["opponent"] for r in rounds}):
        _plot_opponent(axes, [r for r in rounds if r["opponent"] == name], name, window)
    ax_win.set(ylabel=f"win rate (last {window})", ylim=(-0.02, 1.02))
    ax_score.set(ylabel=f"round score (last {window})")
    ax_hit.set(ylabel=f"hit rate: hits / shots (last {window})", ylim=(-0.02, 1.02))
    ax_dealt.set(ylabel=f"damage dealt per round (last {window})")
    ax_taken.set(ylabel=f"damage taken per round (last {window})")
    for ax in (ax_win, ax_score, ax_hit, ax_dealt, ax_taken):
        ax.set(xlabel="rounds against this opponent")
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend()
    _plot_learner(ax_learner, metrics or [])
    fig.suptitle(title or "tank training")
    fig.tight_layout()
    return fig


def _plot_opponent(axes: Any, mine: list[dict[str, Any]], name: str, window: int) -> None:
    (ax_win, ax_score, ax_hit), (ax_dealt, ax_taken, _) = axes
    x = list(range(1, len(mine) + 1))
    ax_win.plot(x, rolling([1.0 if r["won"] else 0.0 for r in mine], window), label=name)
    ax_score.plot(x, rolling([float(r["score"]) for r in mine], window), label=name)
    fought = [(i, r) for i, r in zip(x, mine) if r.get("ending")]
    if not fought:
        return
    fx = [i for i, _ in fought]
    ax_hit.plot(fx, rolling_ratio([float(r["hits"]) for _, r in fought], [float(r["shots"]) for _, r in fought],
                                  window), label=name)
    ax_dealt.plot(fx, rolling([float(r["dealt"]) for _, r in fought], window), label=name)
    ax_taken.plot(fx, rolling([float(r["taken"]) for _, r in fought], window), label=name)


def _plot_learner(ax: Any, metrics: list[dict[str, Any]]) -> None:
    """alpha (log scale, left) and the policy's entropy (right) against gradient steps."""
    rows = [m for m in metrics if "alpha" in m and "entropy" in m]
    ax.set(xlabel="gradient steps", title="learner")
    if not rows:
        ax.text(0.5, 0.5, "no training pass logged", ha="center", va="center", transform=ax.transAxes)
        return
    steps = [m.get("steps", i) for i, m in enumerate(rows)]
    ax.plot(steps, [m["alpha"] for m in rows], color="tab:blue", label="alpha")
    ax.set_yscale("log")
    ax.set_ylabel("alpha", color="tab:blue")
    ax.grid(alpha=0.3)
    right = ax.twinx()
    right.plot(steps, [m["entropy"] for m in rows], color="tab:orange", label="entropy")
    right.set_ylabel("entropy", color="tab:orange")
