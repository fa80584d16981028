'use strict';
/**
 * SPEC.md's flow control, as a bot written from it keeps it: may a rate-limited bot take one more step now?
 *
 *   progress   the newest `progress` read (decoded; null: none yet)
 *   sender     this bot's sender id
 *   taken      steps taken since `session` last changed (the first session read is no change), sent or
 *              still buffered, those its own full queue dropped left out
 *   tolerance  how many steps it may run ahead of the target UTD (its own setting, not on the wire)
 *
 * A 1.2 learner sends `settled`: the steps not yet settled must fit in an equal share of the slack or of the
 * tolerance, whichever is less. A 1.1 learner does not: its `per_sender` counts accepted steps only, and the
 * 1.1 rule (steps sent and not accepted, against the slack's share) applies, with `sentThisSession`.
 */
function mayStep(progress, sender, taken, tolerance, sentThisSession = taken) {
  if (!progress) return false;
  const u = Math.max(Number(progress.utd), 1e-9);
  const consumed = Number(progress.learning_starts) + Number(progress.grad_steps) / u;
  const received = Number(progress.received);
  if (progress.settled === undefined || progress.settled === null) {  // 1.1
    const perSender = progress.per_sender ?? {};
    const inFlight = Math.max(0, sentThisSession - Number(perSender[sender] ?? 0));
    const k = Math.max(1, Object.keys(perSender).length);
    return inFlight === 0 || inFlight < (consumed + tolerance - received) / k;
  }
  if (!Object.prototype.hasOwnProperty.call(progress.settled, sender)) return false;
  const tol = Math.max(tolerance, Math.ceil(1 / u - 1e-9));
  const slack = consumed + tol - received;
  const unsettled = Math.max(0, taken - Number(progress.settled[sender]));
  const k = Math.max(1, Object.keys(progress.settled).length);
  return unsettled < Math.min(slack, tol) / k;
}

/** How many steps, one after another, a bot may take on one `progress` (capped, for a rule that never stops). */
function mayTake(progress, sender, taken, tolerance, cap = 10000) {
  let n = 0;
  while (n < cap && mayStep(progress, sender, taken + n, tolerance)) n += 1;
  return n;
}

module.exports = { mayStep, mayTake };
