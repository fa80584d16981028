'use strict';
/**
 * Checks this bot's protocol code against the committed vectors:
 *   valid vectors decode to their kind, and re-encode (as this bot encodes) to the same message;
 *   invalid ones are rejected with the reason the vector names;
 *   forward.json or forward_memoryless.json (when given): one policy step after another gives the expected mean
 *   and action (the policy resets its state per step where the arch is memoryless);
 *   the flow vector: after each `progress`, flow.js lets the bot take the steps the vector names.
 * Usage: node check_vectors.js VECTORS_JSON [FORWARD_JSON]; prints one JSON summary line, exit 1 on any failure.
 */
const fs = require('fs');
const { decode, encode, ProtocolError, WireArray } = require('./protocol');
const { Policy } = require('./policy');
const { mayTake } = require('./flow');

/** A decoded message as comparable text (arrays with their dtype, shape and bytes; BigInts as digits). */
function canonical(msg) {
  return JSON.stringify(msg, (key, value) => {
    if (typeof value === 'bigint') return `${value}n`;
    if (value instanceof WireArray) return { dtype: value.dtype, shape: value.shape, data: Buffer.from(value.data).toString('hex') };
    return value;
  });
}

/** A valid vector decodes to its kind, and what this bot encodes from it decodes to the same message. */
function checkValid(vector) {
  const bytes = Buffer.from(vector.hex, 'hex');
  const msg = decode(bytes, vector.run);
  if (msg.kind !== vector.kind) return `decoded as ${msg.kind}, not ${vector.kind}`;
  const again = decode(encode(msg));
  if (canonical(again) !== canonical(msg)) return `re-encoded to ${canonical(again)}, not ${canonical(msg)}`;
  return null;
}

function checkInvalid(vector) {
  try {
    decode(Buffer.from(vector.hex, 'hex'), vector.run);
  } catch (err) {
    if (!(err instanceof ProtocolError)) return `crashed: ${err.stack}`;
    return err.reason === vector.reason ? null : `rejected as ${err.message}, not ${vector.reason}`;
  }
  return `accepted, should be ${vector.reason}`;
}

/** Runs forward.json's steps through one policy state; returns the worst errors and any failure. */
function checkForward(fwd) {
  const msg = decode(Buffer.from(fwd.weights_frame_b64, 'base64'));
  if (msg.kind !== 'weights') return { failure: `the frame is a ${msg.kind}` };
  const policy = new Policy(msg);
  let state = policy.initialState();
  const failures = [];
  if (JSON.stringify(policy.low) !== JSON.stringify(fwd.act_low) || JSON.stringify(policy.high) !== JSON.stringify(fwd.act_high)) {
    failures.push(`arch bounds ${policy.low}..${policy.high} are not the vector's ${fwd.act_low}..${fwd.act_high}`);
  }
  const worst = { mean: 0, log_std: 0, action: 0 };
  const off = (got, want) => Math.max(...got.map((g, i) => Math.abs(g - want[i])));
  fwd.steps.forEach((step, t) => {
    // The vector's prev_action is already in policy units, as fed to the network.
    const out = policy.step(step.obs, step.prev_action, step.prev_reward, state);
    state = out.state;
    const got = { mean: out.mean, log_std: out.logStd, action: policy.act(out, out.mean.map(() => 0)) };
    for (const key of Object.keys(worst)) {
      const d = off(got[key], fwd.expected[key][t]);
      worst[key] = Math.max(worst[key], d);
      if (!(d <= fwd.atol)) failures.push(`step ${t}: ${key} off by ${d}`);
    }
  });
  return { steps: fwd.steps.length, worst, failure: failures.join('; ') || null };
}

/** The flow vector's steps, `taken` counted as the SPEC counts it; a failure per entry that differs. */
function checkFlow(flow) {
  const failures = [];
  let taken = 0, session = null;
  for (const entry of flow.steps) {
    let got = 0;  // no progress read yet: wait
    if (entry.progress !== null) {
      const progress = decode(Buffer.from(entry.progress, 'hex'));
      const now = String(progress.session);
      if (session !== null && now !== session) taken = 0;
      session = now;
      got = mayTake(progress, flow.sender, taken, flow.tolerance);
    }
    if (got !== entry.may_take) failures.push(`flow ${entry.name}: may take ${got}, not ${entry.may_take}`);
    taken += entry.then.sent;
  }
  return failures;
}

function main() {
  const [vectorsPath, forwardPath] = process.argv.slice(2);
  const vectors = JSON.parse(fs.readFileSync(vectorsPath, 'utf8'));
  const failures = [];
  for (const v of vectors.valid) {
    let why;
    try { why = checkValid(v); } catch (err) { why = `rejected: ${err.message}`; }
    if (why) failures.push(`valid ${v.name}: ${why}`);
  }
  for (const v of vectors.invalid) {
    const why = checkInvalid(v);
    if (why) failures.push(`invalid ${v.name}: ${why}`);
  }
  if (vectors.flow) failures.push(...checkFlow(vectors.flow));
  const summary = { valid: vectors.valid.length, invalid: vectors.invalid.length,
                    flow: vectors.flow ? vectors.flow.steps.length : 0, forward: null, failures };
  if (forwardPath && fs.existsSync(forwardPath)) {
    let fwd;
    try {
      fwd = checkForward(JSON.parse(fs.readFileSync(forwardPath, 'utf8')));
    } catch (err) {
      fwd = { failure: `crashed: ${err.stack}` };
    }
    summary.forward = fwd;
    if (fwd.failure) failures.push(`forward: ${fwd.failure}`);
  }
  console.log(JSON.stringify(summary));
  process.exitCode = failures.length ? 1 : 0;
}

main();
