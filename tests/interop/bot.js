'use strict';
/**
 * A saclstm bot in JavaScript, written from protocol/SPEC.md alone: it says hello, waits for
 * weights, plays DriftEnv with its own LSTM policy (stochastic, seeded), sends every step as
 * experience between episode_start and episode_end, beats its heart, and says bye. New weights
 * are taken at episode starts, so each episode is played by one weights rev.
 *
 * Usage: node bot.js --ingest EP --weights EP --sender ID [--steps N] [--seed S] [--pace-ms MS]
 *                    [--flow realtime|rate-limited] [--flow-tolerance STEPS] [--report FILE]
 * The report (JSON) holds the bot's counts, the weights frames it acted with (base64, by rev) and,
 * per episode, every step's inputs, noise, mean, log-std and action, for an outside replay.
 */
const fs = require('fs');
const zmq = require('zeromq');
const { ProtocolError, WireArray, decode, encode } = require('./protocol');
const { Policy } = require('./policy');
const { DriftEnv } = require('./env');
const { mayStep } = require('./flow');

const BOT = 'js0';
const FLUSH_STEPS = 32;
const HELLO_EVERY_MS = 100;
const HEARTBEAT_EVERY_MS = 500;
const FIRST_WEIGHTS_TIMEOUT_MS = 30000;
const FLOW_TIMEOUT_MS = 5000;
const SOFTWARE = 'saclstm-interop-js 1.0';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function parseArgs(argv) {
  const opts = { steps: 3000, seed: 1, paceMs: 10, flow: 'realtime', flowTolerance: 128, report: null };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '').replace(/-(\w)/g, (_, c) => c.toUpperCase());
    opts[key] = ['steps', 'seed', 'paceMs', 'flowTolerance'].includes(key) ? Number(argv[i + 1]) : argv[i + 1];
  }
  if (!['realtime', 'rate-limited'].includes(opts.flow)) throw new Error(`--flow ${opts.flow}: realtime or rate-limited`);
  for (const k of ['ingest', 'weights', 'sender']) if (!opts[k]) throw new Error(`--${k} is required`);
  return opts;
}

/** Seeded standard normals (mulberry32 + Box-Muller): the same run gives the same noise. */
function normals(seed) {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
}

/** The ingest PUSH socket: numbered messages, never blocking, every drop counted. */
class Link {
  constructor(endpoint, sender) {
    this.sender = sender;
    this.seq = 0;
    this.hellos = 0;
    this.sent = 0; // experience steps handed to the socket
    this.sentThisSession = 0; // the same, since the learner's session last changed (flow control, 1.1)
    this.taken = 0; // steps taken since the session last changed, sent or buffered, less dropped (flow control)
    this.dropped = 0; // experience steps the full queue refused
    this.msgs = { sent: 0, dropped: 0 };
    this.socket = new zmq.Push({ sendHighWaterMark: 1000, sendTimeout: 0, linger: 2000 });
    this.socket.connect(endpoint);
  }

  /** Sends one message (seq taken whether or not it goes out); true when queued. */
  async send(kind, fields, steps = 0) {
    const frame = encode({ v: 1, kind, sender: this.sender, seq: this.seq++, ...fields });
    if (kind === 'hello') this.hellos += 1;
    try {
      await this.socket.send(frame);
    } catch (err) {
      if (err.code !== 'EAGAIN') throw err;
      this.msgs.dropped += 1;
      this.dropped += steps;
      this.taken = Math.max(0, this.taken - steps); // never reach the learner, so never settle
      return false;
    }
    this.msgs.sent += 1;
    this.sent += steps;
    this.sentThisSession += steps;
    return true;
  }
}

/** The weights SUB socket: the newest good policy, the learner's session, rejects by reason. */
class Inbox {
  constructor(endpoint, env) {
    this.env = env;
    this.latest = null; // {policy, frame}
    this.versionsSeen = [];
    this.rejects = {};
    this.session = null;
    this.sessionChanged = false;
    this.progress = null;
    this.progressAt = Date.now();
    this.socket = new zmq.Subscriber({ linger: 0 });
    this.socket.connect(endpoint);
    this.socket.subscribe('weights');
    this.socket.subscribe('progress');
    this.done = this.run();
  }

  async run() {
    try {
      for await (const [topic, frame] of this.socket) this.take(topic.toString(), frame);
    } catch (err) {
      if (!this.socket.closed) throw err;
    }
  }

  take(topic, frame) {
    try {
      const msg = decode(frame);
      if (msg.kind !== topic) throw new ProtocolError('bad_type', `a ${msg.kind} under topic ${topic}`);
      if (msg.kind === 'weights') this.takeWeights(msg, frame);
      else this.takeProgress(msg);
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err;
      this.rejects[err.reason] = (this.rejects[err.reason] ?? 0) + 1;
      console.error(`rejected a ${topic} frame: ${err.message}`);
    }
  }

  takeWeights(msg, frame) {
    if (this.latest && msg.version <= this.latest.policy.version) return; // a re-publish, or late
    const policy = new Policy(msg);
    const { env } = this;
    if (policy.D !== env.obsDim || policy.A !== env.actDim) {
      throw new ProtocolError('dims_mismatch', `weights for D=${policy.D}, A=${policy.A}`);
    }
    const same = (a, b) => a.every((x, i) => Math.abs(x - b[i]) <= 1e-8 + 1e-5 * Math.abs(b[i])); // SPEC: bounds_mismatch
    if (!same(policy.low, env.actLow) || !same(policy.high, env.actHigh)) {
      throw new ProtocolError('bad_value', `weights for action bounds ${policy.low}..${policy.high}`);
    }
    this.latest = { policy, frame: Buffer.from(frame).toString('base64') };
    this.versionsSeen.push(msg.version);
  }

  takeProgress(msg) {
    const session = String(msg.session); // below 2^53 from a 1.1 learner; a 1.0 learner's arrives as a BigInt
    if (this.session !== null && session !== this.session) this.sessionChanged = true;
    this.session = session;
    this.progress = msg;
    this.progressAt = Date.now();
  }

  close() {
    this.socket.close();
  }
}

class Bot {
  constructor(opts) {
    this.opts = opts;
    this.env = new DriftEnv();
    this.link = new Link(opts.ingest, opts.sender);
    this.inbox = new Inbox(opts.weights, this.env);
    this.noise = normals(opts.seed);
    this.steps = 0;
    this.episodes = 0;
    this.heartbeats = 0;
    this.waits = 0;
    this.stood = { books: null, at: 0, free: false }; // the books the flow timeout watches, since when
    this.lastBeat = 0;
    this.log = [];
    this.frames = {};
  }

  async hello() {
    const e = this.env;
    await this.link.send('hello', {
      bot: BOT, obs_dim: e.obsDim, act_dim: e.actDim,
      obs_low: WireArray.f32(e.obsLow), obs_high: WireArray.f32(e.obsHigh),
      act_low: WireArray.f32(e.actLow), act_high: WireArray.f32(e.actHigh),
      software: SOFTWARE, eval: false,
    });
  }

  async firstWeights() {
    const deadline = Date.now() + FIRST_WEIGHTS_TIMEOUT_MS;
    while (!this.inbox.latest) {
      if (Date.now() > deadline) throw new Error('no weights within 30 s of hello');
      await this.hello(); // repeated: a publish can race the SUB socket's subscription
      await sleep(HELLO_EVERY_MS);
    }
  }

  /** Heartbeats on time, and hello again when the learner restarted (its session changed). */
  async housekeeping() {
    if (this.inbox.sessionChanged) {
      this.inbox.sessionChanged = false;
      console.error('learner restarted: hello again');
      this.link.sentThisSession = 0;
      this.link.taken = 0;
      await this.hello();
    }
    if (Date.now() - this.lastBeat >= HEARTBEAT_EVERY_MS) {
      this.lastBeat = Date.now();
      await this.link.send('heartbeat', {
        round: this.heartbeats++, episodes: this.episodes, sent: this.link.sent, dropped: this.link.dropped,
      });
    }
  }

  /** SPEC flow control (flow.js): may this actor take a step, given the newest `progress`? */
  mayStep() {
    if (this.opts.flow !== 'rate-limited') return true;
    return mayStep(this.inbox.progress, this.link.sender, this.link.taken, this.opts.flowTolerance,
      this.link.sentThisSession);
  }

  /** The books the flow timeout watches: session, received, grad_steps and this sender's settled count. */
  books() {
    const p = this.inbox.progress;
    if (!p) return '';
    const own = (p.settled ?? p.per_sender ?? {})[this.link.sender];
    return [p.session, p.received, p.grad_steps, own].map(String).join('/');
  }

  /** Waits (heartbeats going on) until flow control lets this actor step. What the books cannot show ends on
   *  the timeout: a learner silent that long, or books that stood still that long while it waited, which then
   *  keep it going until they move. */
  async paced() {
    const since = Date.now();
    while (!this.mayStep()) {
      const books = this.books();
      if (books !== this.stood.books) this.stood = { books, at: Date.now(), free: false };
      if (this.stood.free) return;
      const now = Date.now();
      if (now - this.inbox.progressAt > FLOW_TIMEOUT_MS) {
        console.error(`no progress from the learner for ${FLOW_TIMEOUT_MS} ms: stepping on`);
        return;
      }
      if (books && now - Math.max(this.stood.at, since) > FLOW_TIMEOUT_MS) {
        console.error(`the learner's books stood still for ${FLOW_TIMEOUT_MS} ms while this bot waited: stepping on`);
        this.stood.free = true;
        return;
      }
      this.waits += 1;
      await this.housekeeping();
      await sleep(5);
    }
  }

  async playEpisode(episode) {
    const { policy, frame } = this.inbox.latest;
    this.frames[policy.rev] = frame;
    const record = { episode, version: policy.version, rev: policy.rev, steps: [] };
    this.log.push(record);
    await this.link.send('episode_start', { bot: BOT, episode, opponent: 'drift' });
    let obs = this.env.reset(episode);
    let state = policy.initialState();
    let pa = new Array(this.env.actDim).fill(0);
    let pr = 0;
    let ret = 0;
    let batch = null;
    for (let t = 0; ; t++) {
      if (batch && batch.rows.length && !this.mayStep()) { // about to wait: send what it took, so it can settle
        await this.flush(episode, batch);
        batch = null;
      }
      await this.paced();
      if (!batch) batch = this.newBatch(t, state, policy, record.steps);
      const out = policy.step(obs, pa, pr, state);
      const eps = out.mean.map(() => this.noise());
      const action = policy.act(out, eps).map(Math.fround);
      const next = this.env.step(action);
      this.steps += 1;
      this.link.taken += 1;
      const last = this.steps >= this.opts.steps;
      const truncated = next.truncated || (last && !next.terminated); // out of steps: cut the episode
      batch.rows.push({ obs, action, reward: next.reward, nextObs: next.obs, terminated: next.terminated, truncated });
      record.steps.push({ obs, mean: out.mean, log_std: out.logStd, eps, action, reward: next.reward });
      ret += next.reward;
      const done = next.terminated || truncated;
      if (done || batch.rows.length === FLUSH_STEPS) {
        await this.flush(episode, batch);
        batch = null;
        await this.housekeeping();
        await sleep(this.opts.paceMs); // the environment's own pace; lets the inbox read weights
      }
      if (done) break;
      obs = next.obs;
      state = out.state;
      pa = policy.toUnit(action);
      pr = next.reward;
    }
    this.episodes += 1;
    await this.link.send('episode_end', { bot: BOT, episode, return: ret, length: record.steps.length });
  }

  /** A batch opens with the state before its first step (and, past t0 = 0, the action and reward before it). */
  newBatch(t0, state, policy, steps) {
    const prev = t0 > 0 ? steps[t0 - 1] : null;
    return {
      t0, version: policy.version, rows: [],
      h0: WireArray.f32(state.h), c0: WireArray.f32(state.c),
      prevAction: prev ? WireArray.f32(prev.action) : undefined,
      prevReward: prev ? prev.reward : undefined,
    };
  }

  async flush(episode, batch) {
    const rows = batch.rows, n = rows.length, D = this.env.obsDim, A = this.env.actDim;
    await this.link.send('experience', {
      bot: BOT, episode, t0: batch.t0, version: batch.version,
      obs: WireArray.f32(rows.map((r) => r.obs), [n, D]),
      action: WireArray.f32(rows.map((r) => r.action), [n, A]),
      reward: WireArray.f32(rows.map((r) => r.reward), [n]),
      next_obs: WireArray.f32(rows.map((r) => r.nextObs), [n, D]),
      terminated: WireArray.bool(rows.map((r) => r.terminated)),
      truncated: WireArray.bool(rows.map((r) => r.truncated)),
      prev_action: batch.prevAction, prev_reward: batch.prevReward,
      h0: batch.h0, c0: batch.c0,
    }, n);
  }

  async run() {
    await this.firstWeights();
    for (let episode = 0; this.steps < this.opts.steps; episode++) await this.playEpisode(episode);
    await this.link.send('bye', { sent: this.link.sent, dropped: this.link.dropped });
  }

  report() {
    const { link, inbox } = this;
    const progress = inbox.progress;
    return {
      sender: link.sender, bot: BOT, steps: this.steps, sent: link.sent, dropped: link.dropped, msgs: link.msgs,
      hellos: link.hellos, flow_waits: this.waits,
      episodes: this.episodes, versions_seen: inbox.versionsSeen, rejects: inbox.rejects,
      learner_saw: progress?.per_sender?.[link.sender] ?? null,
      act_low: this.env.actLow, act_high: this.env.actHigh, frames: this.frames, log: this.log,
    };
  }

  close() {
    this.inbox.close();
    this.link.socket.close(); // lingers up to 2 s for queued messages
  }
}

async function main() {
  const bot = new Bot(parseArgs(process.argv.slice(2)));
  try {
    await bot.run();
  } finally {
    if (bot.opts.report) fs.writeFileSync(bot.opts.report, JSON.stringify(bot.report()));
    bot.close();
    await bot.inbox.done;
  }
  const r = bot.report();
  console.log(`bot ${r.sender}: ${r.steps} steps, ${r.episodes} episodes, sent ${r.sent}, dropped ${r.dropped}, `
    + `weights versions ${r.versions_seen.join(',')}`);
}

main().catch((err) => {
  console.error(err.stack ?? err);
  process.exitCode = 1;
});
