"""An in-process cache of API key lookups (D16).

Entries live at most `ttl` seconds (2 s at most by D16), and are dropped at once when an
invalidation event names their key, user or tenant. A lookup that raced with an
invalidation is not cached (the generation counter), so a revoked key can never be
re-cached from a read that started before the revocation.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """What authentication needs to know about a key, its user and its tenant."""

    api_key_id: uuid.UUID
    name: str
    prefix: str
    environment: str
    scopes: frozenset[str]
    rate_limit_tier: str
    expires_at: datetime | None
    revoked: bool
    user_id: uuid.UUID
    email: str
    user_active: bool
    tenant_id: uuid.UUID
    tenant_suspended: bool
    billing_past_due: bool
    credits: int


class KeyCache:
    def __init__(self, ttl: float) -> None:
        self._ttl = ttl
        self._entries: dict[str, tuple[float, KeyRecord]] = {}
        self.generation = 0

    def get(self, key_hash: str) -> KeyRecord | None:
        entry = self._entries.get(key_hash)
        if entry is None:
            return None
        if entry[0] <= time.monotonic():
            del self._entries[key_hash]
            return None
        return entry[1]

    def put(self, key_hash: str, record: KeyRecord, generation: int) -> None:
        """Cache `record`, read when the cache was at `generation`, unless it moved on."""
        if self._ttl > 0 and generation == self.generation:
            self._entries[key_hash] = (time.monotonic() + self._ttl, record)

    def invalidate(self, event: dict[str, str]) -> None:
        """Drop the entries an event names (`api_key_id`, `user_id` or `tenant_id`)."""
        self.generation += 1
        fields = {"api_key_id": "api_key_id", "user_id": "user_id", "tenant_id": "tenant_id"}
        targets = {
            (field, uuid.UUID(event[name])) for name, field in fields.items() if name in event
        }
        if not targets:
            self.clear()
            return
        for key_hash, (_, record) in list(self._entries.items()):
            if any(getattr(record, field) == value for field, value in targets):
                del self._entries[key_hash]

    def clear(self) -> None:
        self.generation += 1
        self._entries.clear()
