'use strict';
/**
 * A made-up, deterministic environment: a point steered toward a target on a line. Episodes of
 * varying length; odd episodes end in a terminal state at their horizon, even ones are truncated,
 * and one that strays too far ends terminated early. Everything it returns is already float32
 * (what goes on the wire is what the policy saw).
 */
const f32 = Math.fround;

class DriftEnv {
  constructor() {
    this.obsDim = 3;
    this.actDim = 2;
    this.obsLow = [-Infinity, -10, 0];
    this.obsHigh = [Infinity, 10, 1];
    this.actLow = [-2, 0];
    this.actHigh = [2, 1];
  }

  reset(episode) {
    this.episode = episode;
    this.t = 0;
    this.limit = 90 + ((episode * 37) % 70);
    this.pos = 0.5 * Math.sin(episode);
    this.target = Math.cos(1.7 * episode);
    return this.obs();
  }

  obs() {
    return [this.pos, this.target - this.pos, this.t / this.limit].map(f32);
  }

  /** action in environment units -> {obs, reward, terminated, truncated}. */
  step(action) {
    const [push, gain] = action;
    this.pos += 0.1 * push * gain;
    this.t += 1;
    const reward = f32(-Math.abs(this.target - this.pos) - 0.01 * push * push);
    const strayed = Math.abs(this.pos) > 3;
    const horizon = this.t >= this.limit;
    const terminated = strayed || (horizon && this.episode % 2 === 1);
    return { obs: this.obs(), reward, terminated, truncated: horizon && !terminated };
  }
}

module.exports = { DriftEnv };
