"""A still of a replay: one turn of a replay page (replay.py) drawn as a PNG, for docs and reports, where a page
with a script cannot go.

    python -m actor.bots.tankroyale.still replays/round-001.html --turn 300 -o still.png [--trail 30] [--width 800]

It reads the round's data embedded in the page and draws that turn as the page's canvas does (same colours,
sizes and layering): the arena and its 100-unit grid, each tank's radar beam or sweep, bullets in flight, each
tank's body, gun and radar dish, its name, energy and energy bar, the flashes of the last few turns' hits,
and the turn number. `--trail N` adds each tank's path over the N turns before (0: none), which is what shows
how a tank moves: dodging, circling, ramming. Matplotlib's Agg canvas only: no display, no pyplot state.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.patches import Arc, Circle, Polygon, Rectangle, Wedge

from actor.bots.tankroyale.replay import PAGE

BACKGROUND, GRID, TEXT = "#0b0d10", "#161a20", "#d8dce4"
PT = 0.72  # points per arena unit: the figure is drawn at 100 dpi per pixel-per-unit, so 1 unit = 1/100 inch
DATA = re.compile(r'<script id="data" type="application/json">(.*?)</script>', re.S)
PALETTE = re.compile(r"const COLORS = (\[[^\]]*\])")
# Layers, bottom to top, as the page draws them.
Z_GRID, Z_TRAIL, Z_RADAR, Z_BULLET, Z_TANK, Z_LABEL, Z_FLASH, Z_TEXT = range(8)


def read_page(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The round a page plays and the page's own palette (so a still matches the page it came from)."""
    html = path.read_text(encoding="utf-8")
    found = DATA.search(html)
    if found is None:
        raise ValueError(f"{path}: not a replay page (no embedded round data)")
    palette = PALETTE.search(html) or PALETTE.search(PAGE)
    assert palette is not None, "replay.PAGE lost its palette"
    return json.loads(found.group(1)), json.loads(palette.group(1))


def row_index(turns: Sequence[Sequence[Any]], turn: int | None) -> int:
    """The row of turn `turn` (the first at or after it, as the page's #t= link picks it); None: the last."""
    if not turns:
        raise ValueError("the replay has no turns")
    if turn is None:
        return len(turns) - 1
    return next((k for k, row in enumerate(turns) if row[0] >= turn), len(turns) - 1)


def rotated(points: Sequence[tuple[float, float]], x: float, y: float, degrees: float) -> list[tuple[float, float]]:
    """Tank-local points (x along the heading) in the arena."""
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return [(x + px * c - py * s, y + px * s + py * c) for px, py in points]


def box(x0: float, y0: float, w: float, h: float) -> list[tuple[float, float]]:
    return [(x0, y0), (x0 + w, y0), (x0 + w, y0 + h), (x0, y0 + h)]


def draw_grid(ax: Axes, w: int, h: int) -> None:
    ax.add_patch(Rectangle((0, 0), w, h, color=BACKGROUND, zorder=Z_GRID))
    for x in range(100, w, 100):
        ax.plot([x, x], [0, h], color=GRID, lw=PT, zorder=Z_GRID)
    for y in range(100, h, 100):
        ax.plot([0, w], [y, y], color=GRID, lw=PT, zorder=Z_GRID)


def draw_trails(ax: Axes, turns: Sequence[Sequence[Any]], index: int, color: dict[int, str], trail: int) -> None:
    """Each tank's path over the `trail` turns up to this one, fading into the past."""
    paths: dict[int, list[tuple[float, float]]] = {}
    for row in turns[max(0, index - trail):index + 1]:
        for bot, x, y, *_ in row[1]:
            paths.setdefault(bot, []).append((x, y))
    for bot, path in paths.items():
        if len(path) < 2:
            continue
        segments = list(zip(path[:-1], path[1:]))
        alphas = [0.15 + 0.6 * (k + 1) / len(segments) for k in range(len(segments))]
        ax.add_collection(LineCollection(segments, colors=[(*_rgb(color[bot]), a) for a in alphas],
                                         linewidths=2 * PT, capstyle="butt", zorder=Z_TRAIL))


def _rgb(hex_color: str) -> tuple[float, float, float]:
    return tuple(int(hex_color[k:k + 2], 16) / 255 for k in (1, 3, 5))  # type: ignore[return-value]


def draw_radar(ax: Axes, bot: Sequence[Any], c: str) -> None:
    _, x, y, _, _, _, r, sweep = bot
    if sweep == 0:
        end = (x + 1200 * math.cos(math.radians(r)), y + 1200 * math.sin(math.radians(r)))
        ax.plot([x, end[0]], [y, end[1]], color=c + "55", lw=PT, zorder=Z_RADAR)
        return
    ax.add_patch(Wedge((x, y), 1200, min(r - sweep, r), max(r - sweep, r), facecolor=c + "14", edgecolor=c + "55",
                       lw=PT, zorder=Z_RADAR))


def draw_bullets(ax: Axes, bullets: Sequence[Sequence[Any]], color: dict[int, str]) -> None:
    for owner, x, y, power in bullets:
        ax.add_patch(Circle((x, y), 2 + power, color=color.get(owner, "#a0a0a0"), zorder=Z_BULLET))
        ax.add_patch(Circle((x, y), 1 + power / 2, color="#ffffffaa", zorder=Z_BULLET))


def draw_tank(ax: Axes, bot: Sequence[Any], c: str) -> None:
    """Body (36 x 36 with its tracks and a heading mark), gun and radar dish, as the page's tank()."""
    _, x, y, energy, body, gun, radar, _ = bot

    def shape(points: list[tuple[float, float]], degrees: float, **style: Any) -> None:
        ax.add_patch(Polygon(rotated(points, x, y, degrees), closed=True, zorder=Z_TANK, **style))

    shape(box(-18, -15, 36, 30), body, facecolor=c + "cc" if energy > 0 else "#555555", edgecolor="#000000",
          lw=1.5 * PT)
    shape(box(-18, -18, 36, 5), body, facecolor="#00000066", lw=0)
    shape(box(-18, 13, 36, 5), body, facecolor="#00000066", lw=0)
    shape([(18, 0), (11, 5), (11, -5)], body, facecolor="#ffffff", lw=0)
    shape(box(0, -2.5, 28, 5), gun, facecolor="#e8e8e8", lw=0)
    ax.add_patch(Circle((x, y), 7, color="#e8e8e8", zorder=Z_TANK))
    dish = rotated([(4, 0)], x, y, radar)[0]
    ax.add_patch(Arc(dish, 12, 12, angle=radar, theta1=-math.degrees(1.2), theta2=math.degrees(1.2),
                     color="#ffffff", lw=2 * PT, zorder=Z_TANK))


def draw_label(ax: Axes, bot: Sequence[Any], name: str, arena_h: int) -> None:
    """Name, energy and its bar above the tank (below it near the top wall), as the page's label()."""
    _, x, y, energy = bot[:4]
    frac, up = max(0.0, min(1.0, energy / 100)), y < arena_h - 50
    bar, text = (y + 26, y + 35) if up else (y - 31, y - 43)
    ax.add_patch(Rectangle((x - 20, bar), 40, 5, color="#222222", zorder=Z_LABEL))
    fill = "#5fd38d" if frac > 0.5 else "#f2c14e" if frac > 0.25 else "#ff5a4a"
    ax.add_patch(Rectangle((x - 20, bar), 40 * frac, 5, color=fill, zorder=Z_LABEL))
    ax.text(x, text, f"{name}  {energy:.1f}", color=TEXT, fontsize=11 * PT, ha="center", va="baseline",
            zorder=Z_LABEL)


def draw_flashes(ax: Axes, turns: Sequence[Sequence[Any]], index: int, arena: tuple[int, int]) -> None:
    """This turn's hits and the last six turns', fading, as the page's flashes()."""
    for k in range(max(0, index - 6), index + 1):
        age = index - k
        for kind, fx, fy, *_ in turns[k][3]:
            big = 40 if kind == 5 else 22 if kind == 1 else 20 if kind == 4 else 10
            rgb = {1: (255, 200, 60), 5: (255, 90, 40), 4: (255, 255, 255)}.get(kind, (180, 180, 180))
            where = (max(0, min(arena[0], fx)), max(0, min(arena[1], fy)))
            ax.add_patch(Circle(where, big * (0.4 + 0.6 * (age + 1) / 7), zorder=Z_FLASH,
                                color=(*(v / 255 for v in rgb), 0.75 * (1 - age / 7))))


def draw_still(data: dict[str, Any], palette: Sequence[str], turn: int | None, out: Path, *, width: int = 800,
               trail: int = 30) -> Path:
    """Turn `turn` of the round (None: its last) as a PNG `width` pixels wide, the arena's shape; `trail`:
    turns of each tank's path to draw behind it."""
    arena_w, arena_h = (int(v) for v in data["arena"])
    turns = data["turns"]
    index = row_index(turns, turn)
    row = turns[index]
    ids = sorted({b[0] for r in turns for b in r[1]})
    color = {bot: palette[k % len(palette)] for k, bot in enumerate(ids)}
    fig = Figure(figsize=(arena_w / 100, arena_h / 100), dpi=100 * width / arena_w, facecolor=BACKGROUND)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, arena_w)
    ax.set_ylim(0, arena_h)
    ax.set_axis_off()
    draw_grid(ax, arena_w, arena_h)
    if trail > 0:
        draw_trails(ax, turns, index, color, trail)
    for bot in row[1]:
        draw_radar(ax, bot, color[bot[0]])
    draw_bullets(ax, row[2], color)
    for bot in row[1]:
        draw_tank(ax, bot, color[bot[0]])
        draw_label(ax, bot, data["names"].get(str(bot[0]), f"bot {bot[0]}"), arena_h)
    draw_flashes(ax, turns, index, (arena_w, arena_h))
    heading = f"{data['title']}: turn {row[0]}" if data.get("title") else f"turn {row[0]}"
    ax.text(8, arena_h - 8, heading, color=TEXT, fontsize=13 * PT, ha="left", va="top", zorder=Z_TEXT)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, facecolor=BACKGROUND)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m actor.bots.tankroyale.still",
                                     description="Draw one turn of a replay page as a PNG.")
    parser.add_argument("page", type=Path, help="a replay page (saclstm tank-eval --replay DIR writes them)")
    parser.add_argument("--turn", type=int, default=None, help="the turn to draw (default: the round's last)")
    parser.add_argument("-o", "--out", type=Path, default=None, help="the PNG (default: PAGE-turnN.png beside it)")
    parser.add_argument("--width", type=int, default=800, help="pixels across (the height follows the arena)")
    parser.add_argument("--trail", type=int, default=30, help="turns of each tank's path to draw (0: none)")
    args = parser.parse_args(argv)
    data, palette = read_page(args.page)
    index = row_index(data["turns"], args.turn)
    out = args.out or args.page.with_name(f"{args.page.stem}-turn{data['turns'][index][0]}.png")
    print(draw_still(data, palette, args.turn, out, width=args.width, trail=args.trail))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
