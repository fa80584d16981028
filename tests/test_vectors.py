"""The committed hex vectors decode as SPEC.md says, and match what the generator writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protocol import KINDS, ProtocolError, decode
from tests.vectors.generate import build

VECTORS = json.loads((Path(__file__).parent / "vectors" / "vectors.json").read_text())


def test_vectors_cover_every_kind() -> None:
    assert {v["kind"] for v in VECTORS["valid"]} == set(KINDS)


@pytest.mark.parametrize("vector", VECTORS["valid"], ids=lambda v: v["name"])
def test_valid_vector_decodes(vector: dict) -> None:
    assert decode(bytes.fromhex(vector["hex"])).kind == vector["kind"]


@pytest.mark.parametrize("vector", VECTORS["invalid"], ids=lambda v: v["name"])
def test_invalid_vector_gets_its_reason(vector: dict) -> None:
    with pytest.raises(ProtocolError) as info:
        decode(bytes.fromhex(vector["hex"]))
    assert info.value.reason == vector["reason"]


def test_committed_vectors_match_generator() -> None:
    assert build() == VECTORS, "run `python -m tests.vectors.generate` after a deliberate protocol change"
