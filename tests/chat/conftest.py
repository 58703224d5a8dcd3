"""Chat tests reuse the vault's fixtures (documents are what chat answers from)."""

from __future__ import annotations

import json

from tests.chat_upstream import chat_upstream  # noqa: F401 (fixture)
from tests.vault.conftest import owner_and_strangers, vault, worker  # noqa: F401 (fixtures)


def parse_events(body: bytes) -> list[tuple[str, dict]]:
    """Server-Sent Events as (event, data) pairs, comments left out."""
    events = []
    for block in body.decode().split("\n\n"):
        lines = [line for line in block.splitlines() if line and not line.startswith(":")]
        if not lines:
            continue
        fields = dict(line.split(": ", 1) for line in lines)
        events.append((fields["event"], json.loads(fields["data"])))
    return events
