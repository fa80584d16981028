'use strict';
/**
 * The actor network of protocol/SPEC.md ("weights"), one step at a time, in plain JavaScript
 * (float64 arithmetic on the float32 parameters).
 */
const crypto = require('crypto');
const { ProtocolError } = require('./protocol');

/** SPEC.md's 12 tensors, in `params` order: [role, name]. */
const TENSORS = [
  ['inW', 'inp.weight'], ['inB', 'inp.bias'],
  ['wIH', 'lstm.weight_ih_l0'], ['wHH', 'lstm.weight_hh_l0'], ['bIH', 'lstm.bias_ih_l0'], ['bHH', 'lstm.bias_hh_l0'],
  ['fcW', 'fc.weight'], ['fcB', 'fc.bias'],
  ['muW', 'mean.weight'], ['muB', 'mean.bias'], ['lsW', 'log_std.weight'], ['lsB', 'log_std.bias'],
];

const bad = (reason, detail) => new ProtocolError(reason, `weights: ${detail}`);
const relu = (v) => v.map((x) => (x > 0 ? x : 0));
const sigmoid = (x) => 1 / (1 + Math.exp(-x));

/** W [rows, cols] (row-major Float32Array) times x, plus b. */
function affine(W, b, x) {
  const rows = b.length, cols = x.length, out = new Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = b[r];
    for (let c = 0; c < cols; c++) s += W[r * cols + c] * x[c];
    out[r] = s;
  }
  return out;
}

class Policy {
  /** From a decoded `weights` message; throws ProtocolError when it cannot be a policy. */
  constructor(msg) {
    const arch = msg.arch;
    this.version = msg.version;
    this.rev = msg.rev;
    const digest = crypto.createHash('sha256').update(msg.params.data).digest('hex').slice(0, 16);
    if (digest !== msg.rev) throw bad('bad_value', `rev ${msg.rev} is not the params' sha-256 ${digest}`);
    for (const k of ['obs_dim', 'act_dim', 'hidden', 'fc', 'log_std_min', 'log_std_max']) {
      if (typeof arch[k] !== 'number') throw bad('bad_type', `arch.${k} missing or not a number`);
    }
    for (const k of ['prev_action', 'prev_reward']) {
      if (typeof arch[k] !== 'boolean') throw bad('bad_type', `arch.${k} missing or not a bool`);
    }
    // 1.3: optional, absent = false (a 1.2 learner); true = no state carried from step to step.
    if (arch.memoryless !== undefined && typeof arch.memoryless !== 'boolean') {
      throw bad('bad_type', 'arch.memoryless is not a bool');
    }
    for (const k of ['act_low', 'act_high']) {
      if (!Array.isArray(arch[k]) || arch[k].length !== arch.act_dim) throw bad('bad_shape', `arch.${k} is not A floats`);
    }
    this.D = arch.obs_dim;
    this.A = arch.act_dim;
    this.H = arch.hidden;
    this.F = arch.fc;
    this.usePrevAction = arch.prev_action === true;
    this.usePrevReward = arch.prev_reward === true;
    this.memoryless = arch.memoryless === true;
    this.lsMin = arch.log_std_min;
    this.lsMax = arch.log_std_max;
    this.low = arch.act_low;
    this.high = arch.act_high;
    this.t = this.tensors(arch.layout, msg.params);
  }

  /** Slices the flat params by the SPEC's layout, refusing a blob whose `layout` is any other. */
  tensors(layout, params) {
    const { D, A, H, F } = this;
    const I = D + (this.usePrevAction ? A : 0) + (this.usePrevReward ? 1 : 0);
    const shapes = {
      inW: [H, I], inB: [H], wIH: [4 * H, H], wHH: [4 * H, H], bIH: [4 * H], bHH: [4 * H],
      fcW: [F, H], fcB: [F], muW: [A, F], muB: [A], lsW: [A, F], lsB: [A],
    };
    const want = TENSORS.map(([role, name]) => [name, shapes[role]]);
    if (JSON.stringify(layout) !== JSON.stringify(want)) {
      throw bad('bad_shape', `arch.layout ${JSON.stringify(layout)} is not the SPEC's ${JSON.stringify(want)}`);
    }
    const flat = new Float32Array(params.values());
    const size = want.reduce((n, [, s]) => n + s.reduce((a, b) => a * b, 1), 0);
    if (size !== flat.length) throw bad('bad_shape', `layout adds up to ${size} params, params has ${flat.length}`);
    const out = {};
    let at = 0;
    TENSORS.forEach(([role], k) => {
      const n = want[k][1].reduce((a, b) => a * b, 1);
      out[role] = flat.subarray(at, at + n);
      at += n;
    });
    return out;
  }

  initialState() {
    return { h: new Array(this.H).fill(0), c: new Array(this.H).fill(0) };
  }

  /** Environment units -> the policy's [-1, 1] (clipped): the next step's `pa`. */
  toUnit(action) {
    return action.map((a, i) => Math.min(1, Math.max(-1, (2 * (a - this.low[i])) / (this.high[i] - this.low[i]) - 1)));
  }

  /** The policy's [-1, 1] -> environment units. */
  toEnv(unit) {
    return unit.map((u, i) => this.low[i] + ((u + 1) / 2) * (this.high[i] - this.low[i]));
  }

  /** One step: the pre-squash mean, the clamped log-std and the next state. prevAction in [-1, 1].
   * A memoryless arch starts every step from a zero state, whatever `state` is passed. */
  step(obs, prevAction, prevReward, state) {
    const { t, H } = this;
    if (this.memoryless) state = this.initialState();
    const x = [...obs];
    if (this.usePrevAction) x.push(...prevAction);
    if (this.usePrevReward) x.push(prevReward);
    const z = relu(affine(t.inW, t.inB, x));
    const gi = affine(t.wIH, t.bIH, z), gh = affine(t.wHH, t.bHH, state.h);
    const h = new Array(H), c = new Array(H);
    for (let j = 0; j < H; j++) {
      const i = sigmoid(gi[j] + gh[j]);
      const f = sigmoid(gi[H + j] + gh[H + j]);
      const g = Math.tanh(gi[2 * H + j] + gh[2 * H + j]);
      const o = sigmoid(gi[3 * H + j] + gh[3 * H + j]);
      c[j] = f * state.c[j] + i * g;
      h[j] = o * Math.tanh(c[j]);
    }
    const y = relu(affine(t.fcW, t.fcB, h));
    const mean = affine(t.muW, t.muB, y);
    const logStd = affine(t.lsW, t.lsB, y).map((v) => Math.min(Math.max(v, this.lsMin), this.lsMax));
    return { mean, logStd, state: { h, c } };
  }

  /** The action in environment units: tanh(mean + exp(log_std) * noise), rescaled. noise 0 = deterministic. */
  act(out, noise) {
    return this.toEnv(out.mean.map((m, i) => Math.tanh(m + Math.exp(out.logStd[i]) * noise[i])));
  }
}

module.exports = { Policy };
