"""The learner's configuration: one frozen dataclass, every field documented and checked."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

from learner.replay import MIN_CHUNKS_HELD, OPPONENT_POLICIES, ChunkShape, min_capacity
from protocol.arch import MAX_WEIGHTS_BYTES, Arch, weights_frame_bytes
from protocol.config import check

TORSOS = ("separate", "shared")  # the SAC torso layouts; here, not in learner.sac, so config needs no torch


def _f(default, help: str):  # noqa: A002 - reads like a docstring per field
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class LearnerConfig:
    """Everything the learner daemon needs; TOML table [learner], env SACLSTM_<KEY>, flags --<key>."""

    ingest: str = _f("tcp://127.0.0.1:5555", "endpoint the experience PULL socket binds")
    weights: str = _f("tcp://127.0.0.1:5556", "endpoint the weights/progress PUB socket binds")
    metrics: str = _f("tcp://127.0.0.1:5557", "endpoint the metrics/health PUB socket binds")
    insecure_bind: bool = _f(False, "allow binding a non-loopback address without CURVE keys")
    curve_secret: str = _f("", "the learner's CURVE secret key file (server.key_secret); turns CURVE on")
    curve_allowed: str = _f("", "directory of allowed client public keys (*.key): the ZAP allow list")
    obs_dim: int | None = _f(None, "observation width; unset = taken from the first hello")
    act_dim: int | None = _f(None, "action width; unset = taken from the first hello")
    act_low: tuple[float, ...] | None = _f(None, "action lower bounds; unset = from the first hello")
    act_high: tuple[float, ...] | None = _f(None, "action upper bounds; unset = from the first hello")
    hidden: int = _f(128, "LSTM width h of actor and critics (the Tank Royale tank's is deploy/tank.toml's)")
    fc: int = _f(128, "width of the layer after the LSTM")
    torso: str = _f("shared", "shared: one critic-trained LSTM feeds both Q heads and the actor head (2 LSTM "
                              "forwards + 1 backward per update); separate: actor and each critic own one (5 + 3)")
    prev_action: bool = _f(True, "feed the previous action to the LSTMs beside the observation")
    prev_reward: bool = _f(True, "feed the previous reward to the LSTMs beside the observation")
    memoryless: bool = _f(False, "reset every LSTM's state to zeros before every step, in training and in the bots "
                                 "(the same network and weights blob with no history: the memory ablation, "
                                 "docs/memory.md); stored state is then moot and off")
    target_torso: bool = _f(True, "with torso = shared: targets read a Polyak copy of the torso (true), or the online "
                                  "torso's histories, detached, as DrQ-v2 does (false: one LSTM forward fewer per update)")
    seq_len: int = _f(32, "steps per training sequence (chunk)")
    overlap: int = _f(16, "steps a chunk shares with the previous one of its episode (context, not trained twice)")
    memory_horizon: int = _f(0, "steps back the agent must remember (longest gap from a clue to its use); 0 = off. "
                                "N >= 2 chrono-initialises the LSTMs' gates for N steps and raises overlap to at least "
                                "burn_in + N (seq_len with it, keeping seq_len - overlap trained steps per chunk), so "
                                "every trained step has N steps of history with gradients in its chunk, and turns on "
                                "use_stored_state, so each chunk starts from the state the actor had there")
    recall_weight: float = _f(10.0, "with memory_horizon N >= 2: weight of the recall loss, which asks the critic "
                                    "torso's state to name the observations 1..N steps back (every step up to 16, "
                                    "then 16 spread evenly); 0 = off")
    burn_in: int = _f(0, "leading steps of each chunk that only warm the LSTMs (no gradient, no loss)")
    use_stored_state: bool = _f(False, "start each chunk's LSTMs from the state the actor had at its first step (R2D2); "
                                       "the learner asks its actors for it (on with memory_horizon)")
    batch_size: int = _f(16, "sequences per gradient step")
    utd_ratio: float = _f(1.0, "gradient steps per transition drained (UTD)")
    learning_starts: int = _f(1000, "transitions in replay before training begins; a resume waits for them too, "
                                    "from an empty replay or from what save_replay restored")
    capacity: int = _f(1_000_000, "replay capacity in transitions (preallocated)")
    opponent_policy: str = _f("keep", "on a new opponent key: keep the bot's old data, or clear it")
    gamma: float = _f(0.99, "discount")
    n_step: int = _f(1, "steps of reward summed before the critics' target bootstraps (1: SAC's own target); more "
                        "carries a reward back to the decision that earned it sooner, uncorrected off-policy as "
                        "R2D2's n-step returns")
    tau: float = _f(0.005, "Polyak rate for the target critics")
    actor_lr: float = _f(3e-4, "actor learning rate")
    critic_lr: float = _f(1e-3, "critic learning rate")
    alpha_lr: float = _f(3e-4, "temperature learning rate")
    init_alpha: float = _f(1.0, "initial entropy temperature")
    target_entropy: float = _f(-1.0, "the entropy the temperature steers toward, per action dimension (SAC's usual "
                                     "-1: -dim(A) in all); higher keeps exploring longer")
    action_prior: float = _f(0.0, "weight of a penalty on the policy's mean (before squashing) away from the middle "
                                  "of the action range, where a form puts its default (e.g. the tank's); 0 = off")
    action_target_weight: float = _f(0.0, "weight of a supervised term pulling the policy's mean action toward the "
                                          "targets bots send with their steps (protocol `target`: a label known "
                                          "later, e.g. where a shot should have gone), through the actor's torso, "
                                          "the shared one included; 0 = off (targets sent are checked, not kept)")
    grad_clip: float = _f(0.0, "max gradient norm; 0 = no clipping")
    amp: bool = _f(False, "bf16 autocast in the update (faster on CPUs with bf16 units)")
    device: str = _f("cpu", "torch device: cpu or cuda")
    threads: int = _f(0, "torch intra-op threads; 0 = tuned while running between the core count and 1, whichever "
                         "updates faster now (a shared machine); N = fixed (learner/threads.py)")
    max_drain: int = _f(2048, "most messages drained per pass, so a flood cannot starve training")
    max_steps_per_pass: int = _f(32, "most gradient steps per pass before draining again (the rest carries over)")
    max_pass_s: float = _f(0.25, "most seconds of gradient steps per pass before draining again (at least one step)")
    max_debt: int = _f(2000, "most gradient steps owed; steps received beyond it are kept in replay but not owed "
                             "training (counted as untrained_steps): a flood cannot pile up work for good, and the "
                             "backlog a burst leaves is about a minute at h=256 (rate-limited actors wait it out)")
    publish_hz: float = _f(10.0, "most weight publishes per second")
    republish_s: float = _f(2.0, "re-publish the newest weights at least this often (PUB has no history)")
    dead_after_s: float = _f(10.0, "an actor silent this long is marked dead")
    health_s: float = _f(1.0, "seconds between health maps on the metrics socket (and Prometheus updates); "
                              "a watcher sees a change within this; rates in them are over time, not maps")
    metrics_path: str = _f("", "JSONL file for one metrics line per training pass; empty = none")
    weights_path: str = _f("", "live checkpoint file (the seed's SACLSTM_WEIGHTS_PATH); numbered ones go beside it; "
                              "empty = no checkpoints")
    save_interval: int = _f(500, "gradient steps between checkpoint saves")
    keep_checkpoints: int = _f(3, "numbered checkpoints kept beside the live one")
    save_timeout_s: float = _f(60.0, "how long the final save at shutdown may take")
    max_checkpoint_bytes: int = _f(0, "file-size limit for the saver process (RLIMIT_FSIZE); 0 = none")
    game: str = _f("", "the game or environment name recorded in checkpoints")
    save_replay: bool = _f(False, "also write the replay buffer to replay.sacl beside the checkpoint at shutdown, "
                                  "and reload it on resume")
    replay_save_s: float = _f(300.0, "with save_replay, also write replay.sacl every this many seconds while training "
                                     "(0: at shutdown only), so a learner killed outright resumes with most of its "
                                     "experience rather than an empty replay")
    promotion_gate: bool = _f(False, "saves become <live>.candidate.sacl; `saclstm ckpt promote` makes one live "
                                     "only if it scores well enough")
    prometheus_port: int = _f(-1, "serve /metrics, /healthz, /readyz on this port; -1 = off, 0 = any free port")
    prometheus_host: str = _f("127.0.0.1", "address the Prometheus endpoint binds (loopback unless told otherwise)")
    tensorboard: str = _f("", "write TensorBoard scalars under this directory; empty = off")
    max_message_bytes: int = _f(64 * 1024 * 1024, "largest accepted frame (ZMQ_MAXMSGSIZE)")
    seed: int = _f(0, "random seed")
    log_level: str = _f("INFO", "DEBUG, INFO, WARNING or ERROR")

    def __post_init__(self) -> None:
        check(self.recall_weight >= 0 and math.isfinite(self.recall_weight), "recall_weight", self.recall_weight,
              "must be 0 (off) or a finite weight above 0")
        check(self.action_target_weight >= 0 and math.isfinite(self.action_target_weight), "action_target_weight",
              self.action_target_weight, "must be 0 (off) or a finite weight above 0")
        check(self.memory_horizon >= 0, "memory_horizon", self.memory_horizon, "must be 0 (off) or a number of steps")
        check(self.hidden >= 1, "hidden", self.hidden, "must be at least 1")
        check(self.fc >= 1, "fc", self.fc, "must be at least 1")
        check(self.torso in TORSOS, "torso", self.torso, f"must be one of {', '.join(TORSOS)}")
        check(self.target_torso or self.torso == "shared", "target_torso", self.target_torso,
              "false applies to torso = shared only (separate critics each need their own target LSTM)")
        check(self.seq_len >= 1, "seq_len", self.seq_len, "must be at least 1")
        check(0 <= self.overlap < self.seq_len, "overlap", self.overlap,
              f"must be in 0..seq_len-1 ({self.seq_len - 1}): a chunk of context only would never train")
        chunks = self.chunks
        check(0 <= self.burn_in <= chunks.overlap, "burn_in", self.burn_in,
              f"must be in 0..overlap ({chunks.overlap}): burn-in beyond the shared context would skip steps for good")
        check(self.batch_size >= 1, "batch_size", self.batch_size, "must be at least 1")
        check(self.utd_ratio > 0, "utd_ratio", self.utd_ratio, "must be above 0, or the learner never trains")
        check(self.learning_starts >= self.batch_size, "learning_starts", self.learning_starts,
              f"must be at least batch_size ({self.batch_size})")
        check(self.capacity >= min_capacity(chunks.seq_len), "capacity", self.capacity,
              f"must hold at least {MIN_CHUNKS_HELD} chunks ({min_capacity(chunks.seq_len)})")
        check(self.capacity >= self.learning_starts, "capacity", self.capacity,
              f"must be at least learning_starts ({self.learning_starts}), or training never starts")
        check(self.opponent_policy in OPPONENT_POLICIES, "opponent_policy", self.opponent_policy,
              f"must be one of {', '.join(OPPONENT_POLICIES)}")
        check(0 < self.gamma <= 1, "gamma", self.gamma, "must be in (0, 1]")
        check(1 <= self.n_step <= 64, "n_step", self.n_step, "must be 1..64 steps")
        check(0 < self.tau <= 1, "tau", self.tau, "must be in (0, 1]")
        for key in ("actor_lr", "critic_lr", "alpha_lr", "init_alpha", "publish_hz", "republish_s", "dead_after_s",
                    "health_s"):
            check(getattr(self, key) > 0, key, getattr(self, key), "must be above 0")
        check(self.grad_clip >= 0, "grad_clip", self.grad_clip, "must be 0 (off) or above")
        check(self.replay_save_s >= 0, "replay_save_s", self.replay_save_s, "must be 0 (at shutdown only) or above")
        check(self.device == "cpu" or self.device.startswith("cuda"), "device", self.device, "must be cpu or cuda[:N]")
        check(self.max_drain >= 1, "max_drain", self.max_drain, "must be at least 1")
        check(self.max_steps_per_pass >= 1, "max_steps_per_pass", self.max_steps_per_pass, "must be at least 1")
        check(self.threads >= 0, "threads", self.threads, "must be 0 (tuned) or a thread count")
        check(self.max_pass_s > 0, "max_pass_s", self.max_pass_s, "must be above 0")
        check(self.max_debt >= 1, "max_debt", self.max_debt, "must be at least 1")
        check(self.save_interval >= 1, "save_interval", self.save_interval, "must be at least 1")
        check(self.keep_checkpoints >= 1, "keep_checkpoints", self.keep_checkpoints,
              "must be at least 1, or the live checkpoint's file would be deleted")
        check(self.log_level.upper() in ("DEBUG", "INFO", "WARNING", "ERROR"), "log_level", self.log_level, "unknown level")
        check(bool(self.curve_secret) == bool(self.curve_allowed), "curve_secret", self.curve_secret,
              "curve_secret and curve_allowed go together: a key without an allow list would admit nobody")
        if not self.curve_secret and not self.insecure_bind:
            from protocol.curve import is_loopback

            for key in ("ingest", "weights", "metrics"):
                check(is_loopback(getattr(self, key)), key, getattr(self, key),
                      "binds beyond loopback without CURVE keys: set curve_secret and curve_allowed "
                      "(saclstm keys generate), or insecure_bind = true to accept that anyone may connect")
        dims = (self.obs_dim, self.act_dim)
        check(all(d is None or d >= 1 for d in dims), "obs_dim", dims, "dims must be at least 1")
        if self.act_low is not None or self.act_high is not None:
            low, high = self.act_low or (), self.act_high or ()
            check(len(low) == len(high) and (self.act_dim is None or len(low) == self.act_dim), "act_low", low,
                  "act_low and act_high need act_dim entries each")
            check(all(lo < hi for lo, hi in zip(low, high)), "act_low", low, "each bound must be below act_high's")
        frame = self.weights_frame_bytes(self.obs_dim or 1, self.act_dim or 1)
        check(frame <= MAX_WEIGHTS_BYTES, "hidden", self.hidden,
              f"with fc {self.fc} and dims {dims} the actor's weights frame would be {frame / 2**20:.1f} MiB, over the "
              f"{MAX_WEIGHTS_BYTES // 2**20} MiB a bot must accept (SPEC.md, Sockets): narrower layers or smaller dims")

    def weights_frame_bytes(self, obs_dim: int, act_dim: int) -> int:
        """The most bytes a weights frame of this learner's actor for these dims can take (protocol.arch)."""
        return weights_frame_bytes(Arch(obs_dim, act_dim, self.hidden, self.fc, self.prev_action, self.prev_reward,
                                        act_low=(-1.0,) * act_dim, act_high=(1.0,) * act_dim))

    @cached_property
    def chunks(self) -> ChunkShape:
        """The chunks the learner trains on: seq_len and overlap as set, and with memory_horizon N >= 2 at least
        burn_in + N steps of context (seq_len grown by as much, so a chunk still trains its stride), so every
        trained step has N steps of gradient-carrying history in its chunk. Only ever grown: chunks set longer
        are kept. Worked out once, here; the replay, the update and the actors' state_every read it."""
        shape = ChunkShape(self.seq_len, self.overlap)
        return shape.with_context(self.burn_in + self.memory_horizon) if self.memory_horizon >= 2 else shape

    @property
    def stored_state(self) -> bool:
        """Whether chunks start from the actor's stored state: use_stored_state, or memory_horizon N >= 2, which
        turns it on. Without it a chunk starts from zero, while a bot acts from the state its whole episode
        built, and as the gates learn long memories the two drift apart (measured on DelayedRecall k = 16: the
        same policy scored 0.95 re-unrolled over chunk-long windows and 0.48 acting as a bot). Never when
        memoryless: no step reads a state, so the actors are not asked for theirs and replay keeps none."""
        return (self.use_stored_state or self.memory_horizon >= 2) and not self.memoryless
