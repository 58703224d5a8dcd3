"""Who is calling: built by authentication, read by every later step of the request path."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from strongroom.auth.keys import Environment


@dataclass(frozen=True, slots=True)
class Principal:
    auth_method: Literal["api_key", "oauth"]
    user_id: uuid.UUID
    tenant_id: uuid.UUID
    email: str
    environment: Environment
    rate_limit_tier: str
    scopes: frozenset[str]
    api_key_id: uuid.UUID | None = None
    api_key_name: str | None = None
    api_key_prefix: str | None = None
    client_id: str | None = None

    def missing_scopes(self, required: frozenset[str]) -> list[str]:
        return sorted(required - self.scopes)

    @property
    def credential_id(self) -> str:
        """One credential's identity: its rate-limit bucket and idempotency namespace
        (D17, D27). An API key is itself; an OAuth credential is client + user."""
        if self.api_key_id is not None:
            return f"key:{self.api_key_id}"
        return f"oauth:{self.client_id}:{self.user_id}"
