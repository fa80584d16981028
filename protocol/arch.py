"""The actor's architecture and its weights blob's layout: what every weights message carries.

Free of torch on purpose: a bot (actor/policy.py) rebuilds the actor from
a blob with numpy alone, so a bot process never needs to import torch (seconds
and hundreds of MB of RSS each: the figures are in docs/design.md, The actors).
learner/networks.py builds the torch modules to match, and re-exports these names.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

MAX_WEIGHTS_BYTES = 64 * 1024 * 1024
"""The largest weights frame a learner publishes, and so the largest a bot must accept (SPEC.md, Sockets): a
learner refuses a network whose frame could be larger (its config at start; a first hello's D and A as too_large)."""


@dataclass(frozen=True)
class Arch:
    """Everything needed to rebuild the actor; travels in every weights blob."""

    obs_dim: int
    act_dim: int
    hidden: int = 128
    fc: int = 128
    prev_action: bool = True
    prev_reward: bool = True
    log_std_min: float = -5.0
    log_std_max: float = 2.0
    act_low: tuple[float, ...] = ()
    act_high: tuple[float, ...] = ()
    # The LSTM's state is reset to zeros before every step: the same network and blob without history, the
    # memory ablation's agent (docs/memory.md). Here, not only in the learner's config, so a bot plays the way
    # the learner trains; a blob or checkpoint from before the option has no key and reads as False.
    memoryless: bool = False

    def __post_init__(self) -> None:
        if self.obs_dim < 1 or self.act_dim < 1 or self.hidden < 1 or self.fc < 1:
            raise ValueError(f"arch: dims must be positive, got {self}")
        if len(self.act_low) != self.act_dim or len(self.act_high) != self.act_dim:
            raise ValueError(f"arch: act_low/act_high need {self.act_dim} entries")
        if not all(lo < hi for lo, hi in zip(self.act_low, self.act_high)):
            raise ValueError("arch: act_low must be below act_high")
        if not isinstance(self.memoryless, bool):  # the wire may carry 1 or "yes": only a bool says which network
            raise ValueError(f"arch: memoryless must be a bool, got {self.memoryless!r}")

    @property
    def in_dim(self) -> int:
        return self.obs_dim + (self.act_dim if self.prev_action else 0) + (1 if self.prev_reward else 0)

    def to_wire(self) -> dict:
        wire = asdict(self)
        wire["act_low"], wire["act_high"] = list(self.act_low), list(self.act_high)
        wire["layout"] = [[name, list(shape)] for name, shape in actor_layout(self)]
        return wire

    @staticmethod
    def from_wire(wire: dict) -> Arch:
        keys = {f for f in Arch.__dataclass_fields__}
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in wire.items() if k in keys}
        try:
            arch = Arch(**fields)
        except TypeError as exc:
            raise ValueError(f"arch: {exc}") from None
        if "layout" in wire and [[n, list(s)] for n, s in actor_layout(arch)] != wire["layout"]:
            raise ValueError("arch: layout does not match this network definition")
        return arch


def actor_layout(arch: Arch) -> list[tuple[str, tuple[int, ...]]]:
    """Parameter names and shapes of `Actor`, in blob order (its named_parameters order; a test holds them equal).
    Written out, not read off a built module, so a subscriber can slice a blob without building one."""
    h, f, a = arch.hidden, arch.fc, arch.act_dim
    return [("inp.weight", (h, arch.in_dim)), ("inp.bias", (h,)),
            ("lstm.weight_ih_l0", (4 * h, h)), ("lstm.weight_hh_l0", (4 * h, h)),
            ("lstm.bias_ih_l0", (4 * h,)), ("lstm.bias_hh_l0", (4 * h,)),
            ("fc.weight", (f, h)), ("fc.bias", (f,)), ("mean.weight", (a, f)), ("mean.bias", (a,)),
            ("log_std.weight", (a, f)), ("log_std.bias", (a,))]


def params_count(arch: Arch) -> int:
    """P: the floats in the weights blob (SPEC.md's formula, read off the layout)."""
    count = 0
    for _, shape in actor_layout(arch):
        n = 1
        for d in shape:
            n *= d
        count += n
    return count


def weights_frame_bytes(arch: Arch) -> int:
    """At least the size of any weights frame a learner publishes for `arch`: the message with an empty blob and
    every integer at its widest (versions and counts up to 2^53), plus the blob's 4 P bytes and what a larger
    blob adds to its `bin` and `shape` headers (8 bytes at most). Builds no blob, so a huge P costs nothing.
    Bounds are float64 on the wire whatever their value (9 bytes each), so any stand-ins of the right count do."""
    import numpy as np

    from protocol.codec import encode
    from protocol.messages import Weights

    wide = 2**53 - 1
    sized = replace(arch, act_low=(-1.0,) * arch.act_dim, act_high=(1.0,) * arch.act_dim)
    frame = encode(Weights("learner", wide, wide, "0" * 16, sized.to_wire(), np.zeros(0, np.float32), wide, wide))
    return len(frame) + 4 * params_count(arch) + 8
