// Runs a replay page's inline script under node, with a stand-in DOM and canvas, and says what it drew.
//
//   node replay_harness.js INPUT.json   (INPUT: {script, data, ids, width, dpr, hash, actions})
//
// The page's script is run as the browser would run it (a fresh global, "use strict", the data read from the
// element #data), against:
//   - a document whose getElementById knows only the ids the page has (anything else is null, as in a browser),
//   - a canvas whose 2D context records every call with the transform in force (save/restore, setTransform,
//     translate, rotate, scale kept as a matrix), so a test can say where on the canvas a thing was drawn;
//     setting the canvas's width or height resets the context, as in a browser; a method a real context lacks
//     is missing here too,
//   - requestAnimationFrame and timers on a clock that only moves when an action says so.
// Actions, in order: {do:"start"} runs the script; {do:"click", id}; {do:"input", id, value} (sets .value,
// then oninput); {do:"change", id, value} (sets .value only: a <select>); {do:"key", key}; {do:"raf", ms}
// (runs animation frames every 16 ms for ms); {do:"resize", width}. After each action it reports the calls
// made during it, the text of #turn, the slider's value, the play button's label, the table, and any error
// thrown, as one JSON document on stdout.
"use strict";
const fs = require("fs");
const vm = require("vm");

const input = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));

// -- the canvas -----------------------------------------------------------------------------------------------

const STYLE_KEYS = ["fillStyle", "strokeStyle", "lineWidth", "font", "textAlign", "textBaseline", "globalAlpha",
  "lineCap", "lineJoin"];
const DEFAULT_STYLE = {fillStyle: "#000000", strokeStyle: "#000000", lineWidth: 1, font: "10px sans-serif",
  textAlign: "start", textBaseline: "alphabetic", globalAlpha: 1, lineCap: "butt", lineJoin: "miter"};

function multiply(m, n) {  // m * n, both [a, b, c, d, e, f] as the canvas has them
  return [m[0] * n[0] + m[2] * n[1], m[1] * n[0] + m[3] * n[1], m[0] * n[2] + m[2] * n[3],
    m[1] * n[2] + m[3] * n[3], m[0] * n[4] + m[2] * n[5] + m[4], m[1] * n[4] + m[3] * n[5] + m[5]];
}

function makeContext(log) {
  let m = [1, 0, 0, 1, 0, 0], style = {...DEFAULT_STYLE}, stack = [];
  const record = (op, args) => log.push({op, args: Array.from(args), m: m.slice(), fill: String(style.fillStyle),
    stroke: String(style.strokeStyle), alpha: style.globalAlpha});
  const ctx = {
    reset() { m = [1, 0, 0, 1, 0, 0]; style = {...DEFAULT_STYLE}; stack = []; },
    save() { stack.push({m: m.slice(), style: {...style}}); record("save", []); },
    restore() { const s = stack.pop(); if (s) { m = s.m; style = s.style; } record("restore", []); },
    setTransform(a, b, c, d, e, f) { m = [a, b, c, d, e, f]; record("setTransform", arguments); },
    resetTransform() { m = [1, 0, 0, 1, 0, 0]; record("resetTransform", []); },
    transform(a, b, c, d, e, f) { m = multiply(m, [a, b, c, d, e, f]); record("transform", arguments); },
    translate(x, y) { m = multiply(m, [1, 0, 0, 1, x, y]); record("translate", arguments); },
    rotate(t) { m = multiply(m, [Math.cos(t), Math.sin(t), -Math.sin(t), Math.cos(t), 0, 0]); record("rotate", arguments); },
    scale(x, y) { m = multiply(m, [x, 0, 0, y, 0, 0]); record("scale", arguments); },
    getTransform() { const [a, b, c, d, e, f] = m; return {a, b, c, d, e, f}; },
    measureText(s) { return {width: String(s).length * 6}; },
  };
  for (const op of ["beginPath", "closePath", "moveTo", "lineTo", "arc", "arcTo", "ellipse", "rect",
    "quadraticCurveTo", "bezierCurveTo", "fill", "stroke", "clip", "fillRect", "strokeRect", "clearRect",
    "fillText", "strokeText", "setLineDash", "drawImage"]) {
    ctx[op] = function () {
      for (const a of arguments) {
        if (typeof a === "number" && !Number.isFinite(a)) throw new TypeError(op + ": a non-finite argument");
      }
      record(op, arguments);
    };
  }
  for (const key of STYLE_KEYS) {
    Object.defineProperty(ctx, key, {get: () => style[key], set: v => { style[key] = v; }, enumerable: true});
  }
  return ctx;
}

// -- the document ---------------------------------------------------------------------------------------------

const log = [], errors = [], listeners = {document: {}, window: {}};
const frames = [], timers = [];
let clock = 0, timerSeq = 0;
const parent = {clientWidth: input.width || 800};
const ctx = makeContext(log);

function element(id) {
  const el = {id, textContent: "", innerHTML: "", value: "", max: "", style: {}, parentElement: parent,
    onclick: null, oninput: null, onchange: null, clientWidth: parent.clientWidth,
    addEventListener(type, fn) { (el["_" + type] = el["_" + type] || []).push(fn); }};
  if (id === "data") el.textContent = input.data;
  if (id === "speed") el.value = input.speed || "1";
  if (id === "arena") {
    let w = 300, h = 150;
    Object.defineProperty(el, "width", {get: () => w, set: v => { w = v; ctx.reset(); }});
    Object.defineProperty(el, "height", {get: () => h, set: v => { h = v; ctx.reset(); }});
    el.getContext = kind => (kind === "2d" ? ctx : null);
  }
  return el;
}

const elements = Object.fromEntries(input.ids.map(id => [id, element(id)]));
const on = (where, type, fn) => { (listeners[where][type] = listeners[where][type] || []).push(fn); };
const sandbox = {
  document: {
    getElementById: id => elements[id] || null,
    addEventListener: (type, fn) => on("document", type, fn),
  },
  location: {hash: input.hash || ""},
  devicePixelRatio: input.dpr || 1,
  addEventListener: (type, fn) => on("window", type, fn),
  requestAnimationFrame: fn => { frames.push(fn); return frames.length; },
  cancelAnimationFrame: () => {},
  setTimeout: (fn, ms) => { timers.push({at: clock + (ms || 0), fn, id: ++timerSeq}); return timerSeq; },
  clearTimeout: id => { const k = timers.findIndex(t => t.id === id); if (k >= 0) timers.splice(k, 1); },
  console: {log: () => {}, warn: () => {}, error: (...a) => errors.push("console.error: " + a.join(" "))},
};
sandbox.window = sandbox;
vm.createContext(sandbox);

// -- the actions ----------------------------------------------------------------------------------------------

function guarded(what, fn) {
  try { fn(); } catch (e) { errors.push(what + ": " + (e && e.stack ? e.stack : String(e))); }
}

function fire(where, type, ev) {
  for (const fn of listeners[where][type] || []) guarded(where + " " + type, () => fn(ev));
}

function runFrames(ms) {
  for (const end = clock + ms; clock < end;) {
    clock += 16;
    const due = frames.splice(0);
    for (const fn of due) guarded("animation frame", () => fn(clock));
    for (const t of timers.filter(t => t.at <= clock)) {
      timers.splice(timers.indexOf(t), 1);
      guarded("timer", () => t.fn());
    }
  }
}

function handler(id, name) {
  const el = elements[id];
  if (!el) throw new Error("no element #" + id);
  return el[name] || (() => { throw new Error("#" + id + " has no " + name); });
}

const ACTIONS = {
  start: () => vm.runInContext(input.script, sandbox, {filename: "replay-page.js"}),
  click: a => handler(a.id, "onclick")({preventDefault() {}}),
  input: a => { elements[a.id].value = String(a.value); handler(a.id, "oninput")({}); },
  change: a => { elements[a.id].value = String(a.value); },
  key: a => fire("document", "keydown", {key: a.key, preventDefault() {}}),
  raf: a => runFrames(a.ms),
  resize: a => { parent.clientWidth = a.width; fire("window", "resize", {}); },
};

const steps = [];
for (const action of input.actions) {
  log.length = 0;
  const before = errors.length;
  guarded(action.do, () => ACTIONS[action.do](action));
  const el = id => elements[id] || {};
  steps.push({action, calls: log.slice(), turn: el("turn").textContent, seek: String(el("seek").value),
    seekMax: String(el("seek").max), play: el("play").innerHTML, table: el("bots").innerHTML,
    title: el("title").textContent, canvas: [el("arena").width, el("arena").height],
    errors: errors.slice(before), pendingFrames: frames.length});
}
process.stdout.write(JSON.stringify({steps, errors}));
