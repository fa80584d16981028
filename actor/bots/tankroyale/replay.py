"""Replays: one round as a self-contained HTML page (no network, no external script) to watch in a browser.

    saclstm tank-eval --checkpoint live.sacl --opponent SpinBot --rounds 5 --replay replays/
        -> replays/round-001.html ... one page per round our tank played

A Recorder takes a round's turns one at a time as observers see them (fight.Frame: the server's
TickEventForObserver, or the engine's Turn), so a replay of a networked battle and one of TankRoyale-v0
(RecordEpisodes, a wrapper that records every engine turn of an episode, whatever its `repeat`) are the
same page. Each turn is stored compact, as arrays with rounded numbers, so a round of 1,000 turns makes a
page of a few hundred kB:

    [turn, bots, bullets, flashes]
    bots:    [[id, x, y, energy, direction, gun direction, radar direction, radar sweep], ...]
             x, y and energy to 0.1 (POS_DIGITS), directions to whole degrees
    bullets: [[owner, x, y, power], ...]   x, y whole units, power to 0.1
    flashes: [[kind, x, y, bot], ...]      kind: FLASHES (a hit, a wall, two bullets, a ram, a death)

The page draws the arena, each tank (body, gun and radar headings, the radar's sweep), bullets in flight,
hits as flashes, energy bars and the turn number, with play/pause, step, speed and a turn slider.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym

from actor.bots.tankroyale.fight import Fight, Frame

POS_DIGITS = 1  # x, y and energy are stored to 0.1: what a test may compare with the engine
FLASHES = {"BulletHitBotEvent": 1, "BulletHitWallEvent": 2, "BulletHitBulletEvent": 3, "BotHitBotEvent": 4,
           "BotDeathEvent": 5}


def _num(value: float, digits: int = POS_DIGITS) -> float | int:
    """Rounded, and whole numbers without their ".0" (bytes matter: a round has thousands of them)."""
    v = round(float(value), digits)
    return int(v) if v.is_integer() else v


def compact_bot(bot: int, s: dict[str, Any]) -> list[float | int]:
    return [bot, _num(s["x"]), _num(s["y"]), _num(s["energy"]), _num(s["direction"], 0),
            _num(s["gunDirection"], 0), _num(s["radarDirection"], 0), _num(s.get("radarSweep", 0.0), 0)]


def compact_bullet(b: dict[str, Any]) -> list[float | int]:
    return [int(b["ownerId"]), _num(b["x"], 0), _num(b["y"], 0), _num(b["power"])]


def compact_flash(e: dict[str, Any], bots: dict[int, dict[str, Any]]) -> list[float | int] | None:
    """Where a turn's event flashes on the page, or None for events that do not."""
    kind = FLASHES.get(str(e.get("type")))
    if kind is None:
        return None
    if kind in (1, 2, 3):
        b = e.get("bullet") or {}
        return [kind, _num(b.get("x", 0.0), 0), _num(b.get("y", 0.0), 0), int(e.get("victimId", 0))]
    victim = int(e.get("victimId", 0))
    where = bots.get(victim) or {"x": e.get("x", 0.0), "y": e.get("y", 0.0)}
    return [kind, _num(where["x"], 0), _num(where["y"], 0), victim]


class Recorder:
    """One round's turns, compacted as they arrive; `page()` is the HTML, `save(path)` writes it."""

    def __init__(self, arena: tuple[int, int] = (800, 600), names: dict[int, str] | None = None,
                 title: str = "") -> None:
        self.arena, self.names, self.title = arena, dict(names or {}), title
        self.turns: list[list[Any]] = []
        self.fight = Fight()  # the round's tally, shown under the arena
        self.won: dict[int, bool] = {}  # the results' word, where known; else a bot won by surviving
        self.round = 0

    def add(self, frame: Frame) -> None:
        """One turn (all of a round's turns, in order, make the replay)."""
        self.fight.add(frame)  # refuses a frame of another round
        self.round = frame.round
        for bot, s in frame.bots.items():
            if s.get("name") and bot not in self.names:
                self.names[bot] = str(s["name"])
        flashes = [f for f in (compact_flash(e, frame.bots) for e in frame.events) if f is not None]
        self.turns.append([frame.turn, [compact_bot(b, s) for b, s in sorted(frame.bots.items())],
                           [compact_bullet(b) for b in frame.bullets], flashes])

    def data(self) -> dict[str, Any]:
        """What the page plays: plain JSON."""
        fight = {str(b): {**s.to_dict(), "ending": self._ending(b)} for b, s in sorted(self.fight.sides.items())}
        return {"v": 1, "title": self.title, "round": self.round, "arena": list(self.arena),
                "names": {str(b): n for b, n in sorted(self.names.items())}, "fight": fight, "turns": self.turns}

    def _ending(self, bot: int) -> str:
        """How the round ended for `bot`; "" while nobody died and no result says who won (a round cut short)."""
        if bot in self.won or self.fight.dead:
            return self.fight.ending(bot, self.won.get(bot))
        return ""

    def page(self) -> str:
        blob = json.dumps(self.data(), separators=(",", ":")).replace("</", "<\\/")  # never ends the script early
        title = self.title or f"round {self.round}"
        return PAGE.replace("__TITLE__", _html(title)).replace("__DATA__", blob)

    def save(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.page(), encoding="utf-8")
        return path


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


class ReplayFeed:
    """Observer ticks of a game in, one page per round out: `done(round, path)` saves the round's page."""

    def __init__(self, arena: tuple[int, int], title: str = "") -> None:
        self.arena, self.title = arena, title
        self.recorder = Recorder(arena, title=title)

    def add(self, frame: Frame) -> None:
        if self.recorder.turns and frame.round != self.recorder.round:
            self.recorder = Recorder(self.arena, title=self.title)
        self.recorder.add(frame)

    def save(self, round_number: int, path: Path, won: bool | None = None) -> Path | None:
        """The page of round `round_number`, if its turns were seen; `won`: bot 1's, by the results."""
        r = self.recorder
        if not r.turns or r.round != round_number:
            return None
        if won is not None:
            r.won[1] = won
        if self.title:
            r.title = f"{self.title}, round {round_number}"
        return r.save(path)


class RecordEpisodes(gym.Wrapper):
    """TankRoyale-v0 with every engine turn of the current episode recorded (`recorder`), whatever `repeat`:
    the env's engine's step is wrapped at each reset. `save(path)` writes the episode's page."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.recorder: Recorder | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        base: Any = self.env.unwrapped
        recorder = self.recorder = Recorder(base.arena, {1: "saclstm-tank", 2: base.opponent},
                                            f"TankRoyale-v0 against {base.opponent}")
        recorder.add(Frame.from_turn(base.turn))
        step = base.engine.step

        def recorded(intents: Any) -> Any:
            turn = step(intents)
            recorder.add(Frame.from_turn(turn))
            return turn

        base.engine.step = recorded  # this episode's engine only: a reset makes a new one
        return obs, info

    def save(self, path: Path) -> Path:
        if self.recorder is None:
            raise RuntimeError("save() before reset(): nothing recorded")
        return self.recorder.save(path)


PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body{margin:0;background:#15171c;color:#d8dce4;font:13px system-ui,sans-serif}
main{max-width:1000px;margin:0 auto;padding:10px}
h1{font-size:15px;font-weight:600;margin:4px 0 8px}
canvas{display:block;width:100%;background:#0b0d10;border:1px solid #333a45;border-radius:3px}
.bar{display:flex;gap:6px;align-items:center;margin:8px 0;flex-wrap:wrap}
button,select{background:#262b35;color:#d8dce4;border:1px solid #3c4452;border-radius:3px;padding:3px 9px;font:inherit}
button:hover{background:#313846}
input[type=range]{flex:1;min-width:150px}
#turn{min-width:120px;font-variant-numeric:tabular-nums}
table{border-collapse:collapse;margin-top:6px}
td,th{padding:2px 10px 2px 0;text-align:right;font-variant-numeric:tabular-nums}
th{font-weight:600;color:#9aa3b2}td:first-child,th:first-child{text-align:left}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px}
.hint{color:#7d8594;font-size:12px}
</style></head><body><main>
<h1 id="title"></h1>
<canvas id="arena"></canvas>
<div class="bar">
<button id="back" title="step back (left arrow)">&#9664;&#9646;</button>
<button id="play" title="play / pause (space)">&#9654; play</button>
<button id="fwd" title="step forward (right arrow)">&#9646;&#9654;</button>
<select id="speed" title="speed">
<option value="0.25">0.25x</option><option value="0.5">0.5x</option><option value="1" selected>1x (30 tps)</option>
<option value="2">2x</option><option value="4">4x</option><option value="8">8x</option></select>
<input id="seek" type="range" min="0" value="0" step="1">
<span id="turn"></span></div>
<table id="bots"></table>
<p class="hint">space: play/pause &middot; arrows: step &middot; drag the slider to seek</p>
</main>
<script id="data" type="application/json">__DATA__</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const T = D.turns, W = D.arena[0], H = D.arena[1];
const COLORS = ["#4fa3ff", "#ff6b5a", "#5fd38d", "#f2c14e", "#c17cf2", "#4ed6d6", "#f28ac1", "#a0a0a0"];
const cv = document.getElementById("arena"), ctx = cv.getContext("2d");
const seek = document.getElementById("seek"), playBtn = document.getElementById("play");
let i = 0, playing = false, acc = 0, last = null;
const ids = [...new Set(T.flatMap(t => t[1].map(b => b[0])))].sort((a, b) => a - b);
const color = id => COLORS[(ids.indexOf(id) + COLORS.length) % COLORS.length];
const name = id => D.names[id] || ("bot " + id);
const rad = d => d * Math.PI / 180;
document.getElementById("title").textContent = D.title || ("round " + D.round);
seek.max = Math.max(0, T.length - 1);

function size() {
  const w = Math.min(cv.parentElement.clientWidth, 1000), scale = w / W, dpr = window.devicePixelRatio || 1;
  cv.style.height = (H * scale) + "px";
  cv.width = Math.round(w * dpr); cv.height = Math.round(H * scale * dpr);
  ctx.setTransform(scale * dpr, 0, 0, -scale * dpr, 0, H * scale * dpr);  // game units, y up
  draw();
}

function grid() {
  ctx.fillStyle = "#0b0d10"; ctx.fillRect(0, 0, W, H);
  ctx.strokeStyle = "#161a20"; ctx.lineWidth = 1;
  for (let x = 100; x < W; x += 100) { ctx.beginPath(); ctx.moveTo(x, 0); ctx.lineTo(x, H); ctx.stroke(); }
  for (let y = 100; y < H; y += 100) { ctx.beginPath(); ctx.moveTo(0, y); ctx.lineTo(W, y); ctx.stroke(); }
}

function radar(b) {
  const [id, x, y, , , , r, sw] = b, a1 = rad(r), a0 = rad(r - sw);
  ctx.fillStyle = color(id) + "14"; ctx.strokeStyle = color(id) + "55"; ctx.lineWidth = 1;
  ctx.beginPath(); ctx.moveTo(x, y);
  if (sw === 0) ctx.lineTo(x + 1200 * Math.cos(a1), y + 1200 * Math.sin(a1));
  else ctx.arc(x, y, 1200, Math.min(a0, a1), Math.max(a0, a1));
  ctx.closePath(); ctx.fill(); ctx.stroke();
}

function tank(b) {
  const [id, x, y, e, d, g, r] = b, c = color(id);
  ctx.save(); ctx.translate(x, y);
  ctx.save(); ctx.rotate(rad(d));                       // body: 36 x 36, tracks along its heading
  ctx.fillStyle = e > 0 ? c + "cc" : "#555"; ctx.strokeStyle = "#000"; ctx.lineWidth = 1.5;
  ctx.fillRect(-18, -15, 36, 30); ctx.strokeRect(-18, -15, 36, 30);
  ctx.fillStyle = "#00000066"; ctx.fillRect(-18, -18, 36, 5); ctx.fillRect(-18, 13, 36, 5);
  ctx.fillStyle = "#fff"; ctx.beginPath(); ctx.moveTo(18, 0); ctx.lineTo(11, 5); ctx.lineTo(11, -5); ctx.fill();
  ctx.restore();
  ctx.save(); ctx.rotate(rad(g));                       // gun
  ctx.fillStyle = "#e8e8e8"; ctx.fillRect(0, -2.5, 28, 5); ctx.beginPath(); ctx.arc(0, 0, 7, 0, 7); ctx.fill();
  ctx.restore();
  ctx.save(); ctx.rotate(rad(r));                       // radar dish
  ctx.strokeStyle = "#ffffff"; ctx.lineWidth = 2; ctx.beginPath(); ctx.arc(4, 0, 6, -1.2, 1.2); ctx.stroke();
  ctx.restore();
  ctx.restore();
  label(b);
}

function label(b) {  // name, energy and its bar above the tank (below it near the top wall)
  const [id, x, y, e] = b, w = 40, frac = Math.max(0, Math.min(1, e / 100)), up = y < H - 50;
  const bar = up ? y + 26 : y - 31, text = up ? y + 35 : y - 43;
  ctx.fillStyle = "#222"; ctx.fillRect(x - w / 2, bar, w, 5);
  ctx.fillStyle = frac > 0.5 ? "#5fd38d" : frac > 0.25 ? "#f2c14e" : "#ff5a4a";
  ctx.fillRect(x - w / 2, bar, w * frac, 5);
  ctx.save(); ctx.scale(1, -1); ctx.fillStyle = "#d8dce4"; ctx.font = "11px system-ui,sans-serif";
  ctx.textAlign = "center"; ctx.fillText(name(id) + "  " + e.toFixed(1), x, -text); ctx.restore();
}

function bullets(list) {
  for (const [owner, x, y, p] of list) {
    ctx.fillStyle = color(owner); ctx.beginPath(); ctx.arc(x, y, 2 + p, 0, 7); ctx.fill();
    ctx.fillStyle = "#ffffffaa"; ctx.beginPath(); ctx.arc(x, y, 1 + p / 2, 0, 7); ctx.fill();
  }
}

function flashes() {  // this turn's and the last few turns', fading
  for (let k = Math.max(0, i - 6); k <= i; k++) {
    const age = i - k, fade = 1 - age / 7;
    for (const [kind, fx, fy] of T[k][3]) {
      const x = Math.max(0, Math.min(W, fx)), y = Math.max(0, Math.min(H, fy));
      const big = kind === 5 ? 40 : kind === 1 ? 22 : kind === 4 ? 20 : 10;
      const col = kind === 1 ? "255,200,60" : kind === 5 ? "255,90,40" : kind === 4 ? "255,255,255" : "180,180,180";
      ctx.fillStyle = "rgba(" + col + "," + (0.75 * fade).toFixed(2) + ")";
      ctx.beginPath(); ctx.arc(x, y, big * (0.4 + 0.6 * (age + 1) / 7), 0, 7); ctx.fill();
    }
  }
}

function table() {
  const now = new Map(T[i][1].map(b => [b[0], b]));
  let html = "<tr><th></th><th colspan=2>now</th><th colspan=5 style='text-align:center'>the whole round</th></tr>"
    + "<tr><th>bot</th><th>energy</th><th></th><th>shots</th><th>hits</th><th>dealt</th><th>taken</th><th>ended</th></tr>";
  for (const id of ids) {
    const b = now.get(id), e = b ? b[3] : 0, f = D.fight[id] || {};
    const bar = "<span class='sw' style='background:" + color(id) + "'></span>";
    const meter = "<div style='width:100px;height:6px;background:#222'><div style='height:6px;width:"
      + Math.max(0, Math.min(100, e)) + "px;background:" + color(id) + "'></div></div>";
    html += "<tr><td>" + bar + esc(name(id)) + "</td><td>" + (b ? e.toFixed(1) : "dead") + "</td><td>" + meter
      + "</td><td>" + (f.shots ?? "") + "</td><td>" + (f.hits ?? "") + "</td><td>" + num(f.dealt)
      + "</td><td>" + num(f.taken) + "</td><td>" + (f.ending ?? "") + "</td></tr>";
  }
  document.getElementById("bots").innerHTML = html;
}

function num(v) { return v === undefined ? "" : v.toFixed(1); }
function esc(s) { return String(s).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})[c]); }

function draw() {
  if (!T.length) return;
  const t = T[i];
  grid();
  t[1].forEach(radar); bullets(t[2]); t[1].forEach(tank); flashes();
  document.getElementById("turn").textContent = "turn " + t[0] + " (" + (i + 1) + "/" + T.length + ")";
  seek.value = i; table();
}

function go(k) { i = Math.max(0, Math.min(T.length - 1, k)); draw(); }
function setPlaying(p) {
  playing = p && T.length > 1; if (playing && i >= T.length - 1) i = 0;
  playBtn.innerHTML = playing ? "&#10074;&#10074; pause" : "&#9654; play"; last = null; acc = 0;
}
function frame(ts) {
  if (playing) {
    if (last !== null) acc += (ts - last) / 1000 * 30 * Number(document.getElementById("speed").value);
    last = ts;
    const n = Math.floor(acc);
    if (n > 0) { acc -= n; go(i + n); if (i >= T.length - 1) setPlaying(false); }
  }
  requestAnimationFrame(frame);
}
playBtn.onclick = () => setPlaying(!playing);
document.getElementById("back").onclick = () => { setPlaying(false); go(i - 1); };
document.getElementById("fwd").onclick = () => { setPlaying(false); go(i + 1); };
seek.oninput = () => go(Number(seek.value));
document.addEventListener("keydown", ev => {
  if (ev.key === " ") { ev.preventDefault(); setPlaying(!playing); }
  else if (ev.key === "ArrowLeft") { setPlaying(false); go(i - 1); }
  else if (ev.key === "ArrowRight") { setPlaying(false); go(i + 1); }
});
window.addEventListener("resize", size);
const at = /t=(\d+)/.exec(location.hash);  // page.html#t=300 opens at turn 300
if (at) i = Math.max(0, T.findIndex(t => t[0] >= Number(at[1])));
size(); requestAnimationFrame(frame);
</script></body></html>
"""
