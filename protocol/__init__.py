"""The saclstm wire protocol: message kinds, the msgpack codec, socket setup.

Imported by both daemons and by bots. Deliberately free of torch, so a bot can
speak the protocol without a deep-learning stack; SPEC.md is the normative text.
"""

from protocol.codec import DEFAULT_LIMITS, Limits, decode, encode
from protocol.errors import REASONS, ProtocolError
from protocol.health import ActorHealth, Health
from protocol.messages import (
    KINDS,
    PROTOCOL_VERSION,
    Bye,
    EpisodeEnd,
    EpisodeStart,
    Experience,
    Heartbeat,
    Hello,
    Message,
    Progress,
    Weights,
)

SOFTWARE_VERSION = "0.1.0"

__all__ = [
    "DEFAULT_LIMITS", "Limits", "decode", "encode", "REASONS", "ProtocolError", "KINDS",
    "PROTOCOL_VERSION", "Bye", "EpisodeEnd", "EpisodeStart", "Experience", "Heartbeat", "Hello", "Message",
    "Progress", "Weights", "SOFTWARE_VERSION", "ActorHealth", "Health",
]
