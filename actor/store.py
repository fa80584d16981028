"""A bot's view of one checkpoint file: load now, re-stat on an interval, re-parse only when it changed.

One writer (the learner's saver), many readers (bots, an evaluator): the
writer renames whole files into place, so a reader sees the old file or the
new one. A missing or corrupt file means "no model (yet)": one log line, and
the bot keeps the policy it had. Lets a bot play with the live model when no
learner runs.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from actor.policy import LocalPolicy
from protocol import Weights
from protocol.arch import Arch, actor_layout
from protocol.checkpoint import CheckpointError, decode_checkpoint

log = logging.getLogger("saclstm.actor")


def policy_from_checkpoint(meta: dict, tensors: dict[str, np.ndarray]) -> LocalPolicy:
    """The actor network of a learner checkpoint, ready to act."""
    try:
        arch = Arch.from_wire(meta["arch"])
        params = np.concatenate([np.asarray(tensors[f"actor.{name}"], np.float32).reshape(-1)
                                 for name, _ in actor_layout(arch)])
    except (KeyError, ValueError, TypeError) as exc:
        raise CheckpointError(f"no usable actor in this checkpoint: {exc}") from None
    return LocalPolicy(Weights("checkpoint", 0, int(meta.get("version", 0)), str(meta["rev"]), arch.to_wire(), params,
                               int(meta.get("grad_steps", 0))))


class CheckpointStore:
    """`policy` is the newest good model from `path` (None until one loads)."""

    def __init__(self, path: str | Path, reload_s: float = 5.0,
                 on_reload: Callable[[LocalPolicy], None] | None = None) -> None:
        self.path, self.reload_s, self.on_reload = Path(path), reload_s, on_reload
        self.policy: LocalPolicy | None = None
        self.reloads = 0
        self._seen: tuple[int, int, int] | None = None
        self._complained = False
        self._stop = threading.Event()
        self.refresh()
        self._thread: threading.Thread | None = None
        if reload_s > 0:
            self._thread = threading.Thread(target=self._loop, name="saclstm-ckpt-store", daemon=True)
            self._thread.start()

    def refresh(self) -> bool:
        """Re-stat; re-parse only when the file changed. True when a new model was loaded."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        if key == self._seen:
            return False
        self._seen = key
        try:
            meta, tensors = decode_checkpoint(self.path.read_bytes())
            policy = policy_from_checkpoint(meta, tensors)
        except (OSError, CheckpointError) as exc:
            if not self._complained:
                log.warning("checkpoint %s not usable (%s); keeping the model we have", self.path, exc)
                self._complained = True
            return False
        self._complained = False
        self.policy = policy
        self.reloads += 1
        if self.on_reload is not None:
            self.on_reload(policy)
        return True

    def _loop(self) -> None:
        while not self._stop.wait(self.reload_s):
            self.refresh()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
