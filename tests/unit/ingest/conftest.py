"""One warm reader (tests/unit/ingest/measure.py) for the memory tests of this folder: its
imports paid once per run, each read still in a process of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.unit.ingest.measure import WarmReader


@pytest.fixture(scope="session")
def warm_reader() -> Iterator[WarmReader]:
    reader = WarmReader()
    yield reader
    reader.close()
