'use strict';
/**
 * The saclstm wire protocol as protocol/SPEC.md (1.2) states it: msgpack maps, typed arrays, and
 * one rejection reason per bad frame, the first fault found in the SPEC's order. Written from the
 * SPEC and the test vectors alone.
 *
 * JavaScript has one number type, so the encoder is told each field's msgpack type (a float
 * field must go out as a float even when its value is whole, an int field as an int).
 */
const { Decoder, Encoder } = require('@msgpack/msgpack');

const VERSION = 1;
const MAX_ID = 256;
const MAX_STEPS = 4096;
const MAX_DIM = 65536;
const MAX_FRAME = 64 * 1024 * 1024; // the learner's default max_message_bytes
const MAX_ARCH_KEYS = 64;
const MAX_PER_SENDER = 100000;
const ITEMSIZE = { f32: 4, f64: 8, i32: 4, i64: 8, u8: 1, bool: 1 };
const KINDS = ['hello', 'experience', 'episode_start', 'episode_end', 'heartbeat', 'bye', 'weights', 'progress'];

/** A frame that must be dropped, with the one SPEC reason it is counted under. */
class ProtocolError extends Error {
  constructor(reason, detail) {
    super(`${reason}: ${detail}`);
    this.reason = reason;
  }
}

const fail = (reason, detail) => { throw new ProtocolError(reason, detail); };

// ---------------------------------------------------------------- field types

/** Field type tags. A field spec is [key, type, required, extra]. */
const T = {
  uint: 'uint', int: 'int', float: 'float', bool: 'bool', id: 'id', str: 'str', map: 'map',
  opponent: 'opponent', array: 'array', uintMap: 'uintMap',
};

const COMMON = [['v', T.int, true], ['kind', T.str, true], ['sender', T.id, true], ['seq', T.uint, true]];

const arr = (dtype, rank, finite, extra = {}) => ({ dtype, rank, finite, ...extra });

/**
 * Per kind, the fields of SPEC.md's tables (after the common ones), in table order: the order
 * faults are looked for. `finite` arrays are checked for NaN/infinity after every field (step 5);
 * `obs_low`/`obs_high` (no NaN) with the checks across fields (step 6).
 */
const SCHEMA = {
  hello: [
    ['bot', T.id, true], ['obs_dim', T.uint, true, { min: 1, max: MAX_DIM }],
    ['act_dim', T.uint, true, { min: 1, max: MAX_DIM }],
    ['obs_low', T.array, true, arr('f32', 1)], ['obs_high', T.array, true, arr('f32', 1)],
    ['act_low', T.array, true, arr('f32', 1, 'finite')], ['act_high', T.array, true, arr('f32', 1, 'finite')],
    ['software', T.str, false, { max: MAX_ID }], ['eval', T.bool, false],
  ],
  experience: [
    ['bot', T.id, true], ['episode', T.uint, true], ['t0', T.uint, true], ['version', T.uint, true],
    ['obs', T.array, true, arr('f32', 2, 'finite')], ['action', T.array, true, arr('f32', 2, 'finite')],
    ['reward', T.array, true, arr('f32', 1, 'finite')], ['next_obs', T.array, true, arr('f32', 2, 'finite')],
    ['terminated', T.array, true, arr('bool', 1)], ['truncated', T.array, true, arr('bool', 1)],
    ['prev_action', T.array, false, arr('f32', 1, 'finite')], ['prev_reward', T.float, false, { finite: true }],
    ['h0', T.array, false, arr('f32', 1, 'finite')], ['c0', T.array, false, arr('f32', 1, 'finite')],
    ['target', T.array, false, arr('f32', 2)],  // 1.5: NaN allowed (no target), infinity is not
  ],
  episode_start: [['bot', T.id, true], ['episode', T.uint, true], ['opponent', T.opponent, false]],
  episode_end: [
    ['bot', T.id, true], ['episode', T.uint, true], ['return', T.float, true, { finite: true }],
    ['length', T.uint, true], ['eval', T.bool, false],
  ],
  heartbeat: [
    ['round', T.uint, true], ['episodes', T.uint, true], ['sent', T.uint, true], ['dropped', T.uint, true],
    ['held_s', T.float, false, { finite: true, nonnegative: true }],  // 1.2
    ['labels_late', T.uint, false],  // 1.6
  ],
  bye: [['sent', T.uint, true], ['dropped', T.uint, true], ['labels_late', T.uint, false]],
  weights: [
    ['version', T.uint, true], ['rev', T.str, true, { max: MAX_ID }], ['arch', T.map, true],
    ['params', T.array, true, arr('f32', 1, 'finite')], ['grad_steps', T.uint, false],
    ['state_every', T.uint, false],
  ],
  progress: [
    ['received', T.uint, true], ['grad_steps', T.uint, true], ['utd', T.float, true, { finite: true, positive: true }],
    ['learning_starts', T.uint, true], ['version', T.uint, true],
    ['session', T.uint, true], ['per_sender', T.uintMap, false],
  ],
};

const FIELD_TYPES = new Map();
for (const [kind, fields] of Object.entries(SCHEMA)) {
  FIELD_TYPES.set(kind, new Map([...COMMON, ...fields].map(([key, type]) => [key, type])));
}

// ---------------------------------------------------------------- typed arrays

/** An array value as the SPEC's map, plus its elements decoded (numbers; bools as 0/1). */
class WireArray {
  constructor(dtype, shape, data) {
    this.dtype = dtype;
    this.shape = shape;
    this.data = data; // Uint8Array, little-endian elements
  }

  get size() { return this.shape.reduce((a, b) => a * b, 1); }

  /** Elements as plain numbers (float64 in JS: every f32 is exact in it). */
  values() {
    const view = new DataView(this.data.buffer, this.data.byteOffset, this.data.byteLength);
    const n = this.data.byteLength / ITEMSIZE[this.dtype];
    const out = new Array(n);
    for (let i = 0; i < n; i++) {
      switch (this.dtype) {
        case 'f32': out[i] = view.getFloat32(4 * i, true); break;
        case 'f64': out[i] = view.getFloat64(8 * i, true); break;
        case 'i32': out[i] = view.getInt32(4 * i, true); break;
        case 'i64': out[i] = Number(view.getBigInt64(8 * i, true)); break;
        default: out[i] = view.getUint8(i);
      }
    }
    return out;
  }

  /** For the wire: the SPEC's {"dtype", "shape", "data"} map. */
  toWire() { return { dtype: this.dtype, shape: this.shape, data: this.data }; }

  static f32(values, shape) {
    const flat = values.flat(Infinity);
    const buf = new Uint8Array(flat.length * 4);
    const view = new DataView(buf.buffer);
    flat.forEach((x, i) => view.setFloat32(4 * i, x, true));
    return new WireArray('f32', shape ?? [flat.length], buf);
  }

  static bool(values) {
    return new WireArray('bool', [values.length], Uint8Array.from(values, (b) => (b ? 1 : 0)));
  }
}

// ---------------------------------------------------------------- decoding

/** A msgpack float as decoded: JavaScript alone cannot tell 3.0 from 3, the SPEC can (an int field). */
class Float {
  constructor(value) { this.value = value; }
}

/**
 * @msgpack/msgpack's decoder, told to keep what the SPEC needs and plain JavaScript loses: floats
 * stay marked (Float); a repeated map key, a non-string key, any extension type and invalid UTF-8
 * are undecodable.
 * The overridden methods are the pinned 3.1.x decoder's own; SELF_TEST below fails loudly if they move.
 */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

class WireDecoder extends Decoder {
  constructor() {
    super({
      useBigInt64: true, // uint64 values past 2^53 (a learner's `session`) stay exact
      mapKeyConverter(key) {
        if (typeof key !== 'string') fail('undecodable', `a map key is a ${typeof key}, not a string`);
        if (Object.hasOwn(this.stack.top().map, key)) fail('undecodable', `the map key ${key} is repeated`);
        return key;
      },
    });
  }

  decodeExtension() { return fail('undecodable', 'a msgpack extension type'); }

  decodeUtf8String(byteLength, headerOffset) {
    super.decodeUtf8String(byteLength, headerOffset); // the library's decoding replaces invalid UTF-8 silently
    try {
      return strictUtf8.decode(this.bytes.subarray(this.pos - byteLength, this.pos));
    } catch {
      return fail('undecodable', 'a string that is not valid UTF-8');
    }
  }

  readF32() { return new Float(super.readF32()); }

  readF64() { return new Float(super.readF64()); }
}

const decoder = new WireDecoder();

/** SELF_TEST: the hooks above still take (a float stays a Float; a repeated key, bad UTF-8 throw). */
(function selfTest() {
  const float = decoder.decode(Uint8Array.of(0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0));
  const refused = (bytes) => {
    try {
      decoder.decode(bytes);
    } catch (err) {
      return err instanceof ProtocolError;
    }
    return false;
  };
  const repeated = refused(Uint8Array.of(0x82, 0xa1, 0x61, 0x01, 0xa1, 0x61, 0x02));
  const badUtf8 = refused(Uint8Array.of(0xa2, 0xc3, 0x28));
  if (!(float instanceof Float) || !repeated || !badUtf8) {
    throw new Error('@msgpack/msgpack changed inside: WireDecoder\'s hooks no longer take (see package-lock.json)');
  }
}());

const isMap = (x) => x !== null && typeof x === 'object' && !Array.isArray(x) && !(x instanceof Uint8Array)
  && !(x instanceof Float);

/** A whole-number value as a Number when it fits exactly, else the BigInt. */
const normInt = (x) => (typeof x === 'bigint' && x >= -BigInt(Number.MAX_SAFE_INTEGER)
  && x <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(x) : x);

const isInt = (x) => typeof x === 'bigint' || (typeof x === 'number' && Number.isInteger(x));

const codePoints = (x) => [...x].length;

function checkStr(key, x, max = Infinity) {
  if (typeof x !== 'string') fail('bad_type', `${key} is not a string`);
  if (codePoints(x) > max) fail('too_large', `${key} is over ${max} characters`);
  return x;
}

function checkId(key, x) {
  checkStr(key, x, MAX_ID);
  if (x.length === 0) fail('bad_value', `${key} is empty`);
  return x;
}

function checkUint(key, x, opts = {}) {
  if (!isInt(x)) fail('bad_type', `${key} is not an integer`);
  x = normInt(x);
  if (x < 0) fail('bad_value', `${key} is negative`);
  if (opts.min !== undefined && x < opts.min) fail('bad_value', `${key} = ${x} is below ${opts.min}`);
  if (opts.max !== undefined && x > opts.max) fail('too_large', `${key} = ${x} is above ${opts.max}`);
  if (opts.below !== undefined && x >= opts.below) fail('bad_value', `${key} = ${x} is not below ${opts.below}`);
  return x;
}

/** An array field, in the SPEC's order (step 4); its finiteness waits for step 5. */
function checkArray(key, x, spec) {
  if (!isMap(x)) fail('bad_type', `${key} is not an array map`);
  for (const k of ['dtype', 'shape', 'data']) if (!(k in x)) fail('missing_field', `${key}.${k}`);
  const { dtype, shape, data } = x;
  if (!(dtype in ITEMSIZE) || dtype !== spec.dtype) fail('bad_dtype', `${key} has dtype ${dtype}, not ${spec.dtype}`);
  if (!(data instanceof Uint8Array)) fail('bad_type', `${key}.data is not bin`);
  if (data.byteLength > MAX_FRAME) fail('too_large', `${key}.data is over ${MAX_FRAME} bytes`);
  if (!Array.isArray(shape)) fail('bad_shape', `${key}.shape is not a list`);
  if (shape.length !== spec.rank) fail('bad_shape', `${key} has rank ${shape.length}, not ${spec.rank}`);
  if (!shape.every((d) => isInt(d) && d >= 0)) fail('bad_shape', `${key} has a shape entry that is not a uint`);
  const bytes = shape.reduce((a, d) => a * BigInt(d), BigInt(ITEMSIZE[dtype]));
  if (bytes !== BigInt(data.byteLength)) fail('bad_shape', `${key}: ${data.byteLength} bytes for shape [${shape}]`);
  const out = new WireArray(dtype, shape.map(Number), data);
  if (dtype === 'bool' && out.values().some((b) => b > 1)) fail('bad_value', `${key} has a bool byte other than 0/1`);
  return out;
}

/** Step 5: NaN or infinity in the float arrays that must be finite, all together. */
function checkFinite(msg, fields) {
  for (const [key, type, , extra] of fields) {
    if (type === T.array && extra.finite === 'finite' && msg[key] !== undefined && !msg[key].values().every(Number.isFinite)) {
      fail('non_finite', `${key} is not finite`);
    }
  }
}

const isPlain = (x) => ['number', 'bigint', 'string', 'boolean'].includes(typeof x) || x instanceof Float
  || Array.isArray(x);

/** `arch`: a map (else bad_type) of at most 64 entries (else too_large) of plain values (int, float, str, bool, list; a list's items are not checked). */
function checkArch(key, x) {
  if (!isMap(x)) fail('bad_type', `${key} is not a map`);
  const values = Object.values(x);
  if (values.length > MAX_ARCH_KEYS) fail('too_large', `${key} has over ${MAX_ARCH_KEYS} entries`);
  if (!values.every(isPlain)) fail('bad_type', `${key} holds a value other than int, float, str, bool or list`);
  return normDeep(x);
}

function checkField(key, type, x, extra = {}) {
  switch (type) {
    case T.uint: return checkUint(key, x, extra);
    case T.int: if (!isInt(x)) fail('bad_type', `${key} is not an integer`); return normInt(x);
    case T.float: {
      if (!(x instanceof Float) && !isInt(x)) fail('bad_type', `${key} is not a number`); // an int is a float too
      const value = Number(x instanceof Float ? x.value : x);
      if (extra.finite && !Number.isFinite(value)) fail('non_finite', `${key} is not finite`);
      if (extra.positive && !(value > 0)) fail('bad_value', `${key} is not above 0`);
      if (extra.nonnegative && !(value >= 0)) fail('bad_value', `${key} is below 0`);
      return value;
    }
    case T.bool: if (typeof x !== 'boolean') fail('bad_type', `${key} is not a bool`); return x;
    case T.id: return checkId(key, x);
    case T.str: return checkStr(key, x, extra.max);
    case T.map: return checkArch(key, x);
    case T.opponent:
      if (typeof x === 'string') return checkStr(key, x, MAX_ID);
      if (isInt(x)) return normInt(x);
      return fail('bad_type', `${key} is neither a string nor an integer`);
    case T.uintMap: {
      if (!isMap(x)) fail('bad_type', `${key} is not a map`);
      const entries = Object.entries(x);
      if (entries.length > MAX_PER_SENDER) fail('too_large', `${key} has over ${MAX_PER_SENDER} entries`);
      const out = {};
      for (const [k, v] of entries) out[checkStr(`${key} key`, k, MAX_ID)] = checkUint(`${key}[${k}]`, v);
      return out;
    }
    case T.array: return checkArray(key, x, extra);
    default: throw new Error(`no type ${type}`);
  }
}

/** Plain values: Floats unwrapped, BigInts that fit made Numbers. */
function normDeep(x) {
  if (x instanceof Float) return x.value;
  if (Array.isArray(x)) return x.map(normDeep);
  if (isMap(x)) return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, normDeep(v)]));
  return normInt(x);
}

/** How far past act_low..act_high an action may lie (float rounding): 1e-4 of the range. */
const boundsSlack = (low, high) => 1e-4 * (high - low);

/**
 * Step 6: the checks across fields, in the SPEC's order. `run` (a learner's configuration, as the
 * vectors give it: obs_dim, act_dim, hidden, act_low, act_high) adds the checks against the run.
 */
const CROSS = {
  hello(m, run) {
    const D = m.obs_dim, A = m.act_dim;
    for (const k of ['obs_low', 'obs_high']) {
      if (m[k].shape[0] !== D) fail('bad_shape', `${k} is not [obs_dim]`);
      if (m[k].values().some(Number.isNaN)) fail('non_finite', `${k} has a NaN`);
    }
    for (const k of ['act_low', 'act_high']) if (m[k].shape[0] !== A) fail('bad_shape', `${k} is not [act_dim]`);
    const lo = m.act_low.values(), hi = m.act_high.values();
    if (lo.some((l, i) => !(l < hi[i]))) fail('bad_value', 'act_low >= act_high');
    if (run && (D !== run.obs_dim || A !== run.act_dim)) fail('dims_mismatch', 'obs_dim/act_dim are not the run\'s');
  },
  experience(m, run) {
    const [n, D] = m.obs.shape, A = m.action.shape[1];
    if (n < 1) fail('bad_shape', 'an empty batch');
    if (n > MAX_STEPS) fail('too_large', `a batch of ${n} steps`);
    if (D > MAX_DIM || A > MAX_DIM) fail('too_large', `D = ${D}, A = ${A}: over ${MAX_DIM}`);
    const want = { action: [n, A], reward: [n], next_obs: [n, D], terminated: [n], truncated: [n] };
    for (const [k, shape] of Object.entries(want)) {
      if (m[k].shape.some((d, i) => d !== shape[i])) fail('bad_shape', `${k} has shape [${m[k].shape}], not [${shape}]`);
    }
    if (m.prev_action && m.prev_action.shape[0] !== A) fail('bad_shape', 'prev_action is not [A]');
    if ((m.h0 === undefined) !== (m.c0 === undefined)) fail('bad_shape', 'h0 and c0 come both or neither');
    if (m.h0 && m.h0.shape[0] !== m.c0.shape[0]) fail('bad_shape', 'h0 and c0 differ in width');
    if (m.target && (m.target.shape[0] !== n || m.target.shape[1] !== A)) fail('bad_shape', 'target is not [n, A]');
    if (m.target && m.target.values().some((x) => x === Infinity || x === -Infinity)) fail('non_finite', 'target has an infinity');
    const done = [...m.terminated.values().slice(0, -1), ...m.truncated.values().slice(0, -1)];
    if (done.some((b) => b)) fail('bad_value', 'a done flag before the last step');
    if (!run) return;
    if (D !== run.obs_dim || A !== run.act_dim) fail('dims_mismatch', 'D/A are not the run\'s');
    if (m.h0 && m.h0.shape[0] !== run.hidden) fail('dims_mismatch', 'h0/c0 are not H wide');
    const outside = (values) => values.some((a, k) => {
      const i = k % A, slack = boundsSlack(run.act_low[i], run.act_high[i]);
      return a < run.act_low[i] - slack || a > run.act_high[i] + slack;
    });
    if (outside(m.action.values())) fail('out_of_bounds', 'an action outside act_low..act_high');
    if (m.prev_action && outside(m.prev_action.values())) fail('out_of_bounds', 'prev_action outside act_low..act_high');
  },
};

/**
 * bytes -> a validated message object (uints as Numbers, or BigInts past 2^53; arrays as WireArray).
 * Throws ProtocolError with the SPEC's reason: the first fault, in the SPEC's order. With `run`,
 * also the checks a learner makes against its configuration.
 */
function decode(bytes, run = null) {
  if (bytes.length > MAX_FRAME) fail('too_large', `a frame of ${bytes.length} bytes`);
  let raw;
  try {
    raw = decoder.decode(bytes);
  } catch (err) {
    if (err instanceof ProtocolError) throw err;
    fail('undecodable', err.message);
  }
  if (!isMap(raw)) fail('undecodable', 'the top level is not a map');
  if (!('v' in raw)) fail('missing_field', 'v');
  if (!isInt(raw.v) || normInt(raw.v) !== VERSION) fail('bad_version', `v is not the integer ${VERSION}`);
  if (!('kind' in raw)) fail('missing_field', 'kind');
  if (typeof raw.kind !== 'string' || !KINDS.includes(raw.kind)) fail('unknown_kind', String(raw.kind));
  const fields = [...COMMON.slice(2), ...SCHEMA[raw.kind]];
  const msg = { ...raw, v: VERSION };
  for (const [key, type, required, extra] of fields) {
    if (key in raw) msg[key] = checkField(key, type, raw[key], extra);
    else if (required) fail('missing_field', key);
  }
  checkFinite(msg, fields);
  CROSS[raw.kind]?.(msg, run);
  return msg;
}

// ---------------------------------------------------------------- encoding

const intEncoder = new Encoder();
const bigEncoder = new Encoder({ useBigInt64: true });
const floatEncoder = new Encoder({ forceIntegerToFloat: true });

function header(n, fix, h16) {
  if (n < 16) return Uint8Array.of(fix | n);
  if (n < 65536) return Uint8Array.of(h16, n >> 8, n & 0xff);
  return Uint8Array.of(h16 + 1, n >>> 24, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff);
}

/** One value in msgpack: `type` T.float makes a whole number a float; maps and lists recurse. */
function encodeValue(value, type) {
  if (value instanceof WireArray) return encodeValue(value.toWire());
  if (value instanceof Float) return floatEncoder.encode(value.value);
  if (typeof value === 'bigint') return bigEncoder.encode(value);
  if (typeof value === 'number' && type === T.float) return floatEncoder.encode(value);
  if (Array.isArray(value)) return Buffer.concat([header(value.length, 0x90, 0xdc), ...value.map((v) => encodeValue(v))]);
  if (isMap(value)) return encodeMap(Object.entries(value));
  return intEncoder.encode(value); // str, bin, bool, int (a non-integer number goes out as float64)
}

function encodeMap(entries, types = new Map()) {
  const parts = [header(entries.length, 0x80, 0xde)];
  for (const [key, value] of entries) parts.push(intEncoder.encode(key), encodeValue(value, types.get(key)));
  return Buffer.concat(parts);
}

/** A message object -> one msgpack map, keys in the object's order, each value in its field's type. */
function encode(msg) {
  return encodeMap(Object.entries(msg).filter(([, v]) => v !== undefined), FIELD_TYPES.get(msg.kind));
}

module.exports = { VERSION, KINDS, MAX_STEPS, ProtocolError, WireArray, decode, encode };
