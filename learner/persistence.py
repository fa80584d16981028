"""The learner's files: checkpoints (through the saver process), the replay file, the version note.

    start:   newest valid checkpoint that fits this config (or none), the replay file, the version note
    train:   a save every save_interval gradient steps (skipped and counted while one is in flight)
    publish: the newest weights version noted beside the checkpoints (a crash must not lower it)
    stop:    a final save, waited for (bounded), and the replay file when asked

With save_replay the replay file is also written every replay_save_s while training, from a copy, on a thread
of its own: a learner killed outright then resumes with all but the last few minutes of its experience. A
resume from an empty replay trains its first thousands of steps on a few thousand fresh transitions, which
undid much of what a trained tank had learned (docs/tank-learning.md, cause 4).

Each replay write has a temp file of its own, and the newest snapshot wins: a periodic write that outlives the
final save's join neither writes into the final one's temp file nor renames its older copy over it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from learner.config import LearnerConfig
from learner.replay import SequenceReplay
from learner.saver import Saver
from learner.state import fits
from protocol.checkpoint import (
    CheckpointError,
    decode_checkpoint,
    encode_checkpoint,
    fsync_dir,
    load_newest,
    write_temp,
)

log = logging.getLogger("saclstm.learner")


@dataclass(frozen=True, eq=False)
class ReplaySnapshot:
    """A copy of the replay to write; `ticket` orders snapshots as they were taken, so the newest one wins."""

    ticket: int
    grad_steps: int
    arrays: dict[str, np.ndarray]
    transitions: int


class Persistence:
    """Everything the learner keeps on disk, beside `weights_path`."""

    def __init__(self, cfg: LearnerConfig) -> None:
        self.cfg = cfg
        self.live = Path(cfg.weights_path)
        self.dir = self.live.parent
        # Behind a promotion gate saves become candidates; the live file changes only by promotion.
        target = self.live.with_name(self.live.stem + ".candidate.sacl") if cfg.promotion_gate else self.live
        self.saver = Saver(target, cfg.keep_checkpoints, cfg.max_checkpoint_bytes)
        self._replay_writer: threading.Thread | None = None
        self._replay_saved_at = time.monotonic()
        self._replay_tickets = 0  # snapshots taken (learner thread only)
        self._replay_landed = 0  # ticket of the snapshot now in replay.sacl
        self._replay_rename = threading.Lock()  # held for the check and the rename only: never across a write

    # -- start ----------------------------------------------------------------------------

    def newest(self) -> tuple[Path, dict[str, Any], dict[str, np.ndarray]] | None:
        """The newest checkpoint whose model fits this config (learner/state.fits; one log line either way)."""
        cfg = self.cfg
        # Behind a gate the live file is the promoted (older) model: resume from the newest save instead.
        return load_newest(self.dir, None if cfg.promotion_gate else self.live, partial(fits, cfg))

    def load_replay(self, replay: SequenceReplay) -> None:
        path = self.dir / "replay.sacl"
        if not self.cfg.save_replay or not path.exists():
            return
        try:
            _, arrays = decode_checkpoint(path.read_bytes())
            restored = replay.load(arrays)
        except (OSError, CheckpointError, ValueError, KeyError) as exc:
            log.warning("replay file %s not used (%s); starting with an empty replay", path, exc)
            return
        log.info("replay: %d transitions restored from %s", restored, path)

    # -- versions -------------------------------------------------------------------------

    def noted_version(self) -> int:
        try:
            return int((self.dir / "version").read_text().strip())
        except (OSError, ValueError):
            return 0

    def note_version(self, version: int) -> None:
        """A rename without fsync: it survives a killed process, which is what it is for."""
        path = self.dir / "version"
        tmp = path.with_name(f".version.tmp-{os.getpid()}")
        try:
            tmp.write_text(str(version))
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("could not note weights version %d in %s: %s", version, path, exc)

    # -- saving ---------------------------------------------------------------------------

    def save(self, meta: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        self.saver.request(meta, tensors)

    def replay_due(self, replay: SequenceReplay, grad_steps: int) -> None:
        """The periodic replay file: every replay_save_s, from a copy taken now, written on a thread (one at a
        time; a write still going when the next is due skips that one)."""
        cfg, now = self.cfg, time.monotonic()
        if not cfg.save_replay or cfg.replay_save_s <= 0 or now - self._replay_saved_at < cfg.replay_save_s:
            return
        self._replay_saved_at = now
        if self._replay_writer is not None and self._replay_writer.is_alive():
            return
        self._replay_writer = threading.Thread(target=self._write_replay, args=(self._snapshot(replay, grad_steps),),
                                               name="saclstm-replay-write", daemon=True)
        self._replay_writer.start()

    def _snapshot(self, replay: SequenceReplay, grad_steps: int) -> ReplaySnapshot:
        self._replay_tickets += 1
        return ReplaySnapshot(self._replay_tickets, grad_steps, replay.export(), replay.transitions)

    def _write_replay(self, snap: ReplaySnapshot) -> None:
        """Encode and write `snap` to a temp file of its own, then rename it over replay.sacl unless a newer
        snapshot is there already (a periodic write that finished after the final one)."""
        path, start = self.dir / "replay.sacl", time.monotonic()
        try:
            tmp = write_temp(path, encode_checkpoint({"game": self.cfg.game, "grad_steps": snap.grad_steps},
                                                     snap.arrays))
            landed = self._land(tmp, path, snap.ticket)
        except OSError as exc:
            log.warning("replay file %s not written: %s", path, exc)
            return
        if not landed:
            log.info("replay: a copy of %d transitions not written, a newer one is in %s", snap.transitions, path)
            return
        log.info("replay: %d transitions written to %s in %.1f s", snap.transitions, path, time.monotonic() - start)

    def _land(self, tmp: Path, path: Path, ticket: int) -> bool:
        """Rename `tmp` over `path` if no newer snapshot landed there; else remove it. The lock covers the check
        and the rename only, so a slow write never holds up another."""
        try:
            with self._replay_rename:
                if ticket < self._replay_landed:
                    tmp.unlink(missing_ok=True)
                    return False
                os.replace(tmp, path)
                self._replay_landed = ticket
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
        fsync_dir(path.parent)
        return True

    def final(self, meta: dict[str, Any] | None, tensors: dict[str, np.ndarray] | None,
              replay: SequenceReplay | None) -> None:
        """The shutdown save (bounded wait), the replay file if asked, then the saver goes."""
        if self._replay_writer is not None:
            self._replay_writer.join(self.cfg.save_timeout_s)
        if meta is not None and tensors is not None:
            if self.saver.final(meta, tensors, timeout=self.cfg.save_timeout_s):
                log.info("final checkpoint written: %s", self.saver.last_path)
            if self.cfg.save_replay and replay is not None:
                self._write_replay(self._snapshot(replay, int(meta["grad_steps"])))
        self.saver.close()
