from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.procs import Procs, endpoints


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Procs]:
    p = Procs(tmp_path)
    try:
        yield p
    finally:
        p.close()


@pytest.fixture
def eps() -> dict[str, str]:
    return endpoints()
