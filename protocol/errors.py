"""The one error type the codec raises, and the closed set of reasons it uses.

Reasons are part of the wire contract (SPEC.md): the learner counts rejects by
reason and shows them in metrics, so a bot author can tell from a dashboard
what is wrong with their messages.
"""

from __future__ import annotations

REASONS: tuple[str, ...] = (
    "undecodable",  # not a msgpack map, truncated, trailing bytes
    "unknown_kind",  # "kind" names no message type
    "bad_version",  # "v" is not a protocol version this side speaks
    "missing_field",  # a required field is absent
    "bad_type",  # a field has the wrong msgpack type
    "bad_dtype",  # an array's dtype is not on the allow-list, or not the one the field needs
    "bad_shape",  # an array's shape is wrong, or its byte length does not match it
    "non_finite",  # NaN or infinity where only finite numbers may go
    "too_large",  # the frame, an array, or a string exceeds its limit
    "dims_mismatch",  # a width (D, A, or H of h0/c0) differs from the run's
    "bad_value",  # a value outside its documented range
    "out_of_bounds",  # an action outside the run's act_low..act_high by more than the tolerance
)
"""Every reason `decode` may give. Learner-side reasons are listed in SPEC.md."""


class ProtocolError(ValueError):
    """A message that this side must not accept; `reason` is one of REASONS."""

    def __init__(self, reason: str, detail: str = "") -> None:
        if reason not in REASONS:
            raise AssertionError(f"unknown protocol error reason {reason!r}")
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)
