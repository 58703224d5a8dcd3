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
