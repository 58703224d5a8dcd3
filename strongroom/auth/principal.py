"""Who is calling: built by authentication, read by every later step of the request path."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from strongroom.problems import Problem
from strongroom.tenants.partition import Environment


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


def check_owner(
    *,
    tenant_suspended: bool,
    user_active: bool,
    environment: Environment,
    owes: bool,
    tenant_deleted: bool = False,
    whose: str = "this credential",
) -> None:
    """The D10 checks every credential shares, after its own: tenant, user, then payment.
    A routine acting for its owner (routines/grant.py) runs the same checks, `whose` naming
    it in the problems.

    `owes`: the tenant is past due or out of credits. Test calls are free (D21), so only
    live calls can owe anything. Raises Problem with the first failing code."""
    if tenant_suspended or tenant_deleted:
        state = "deleted" if tenant_deleted else "suspended"
        raise Problem("tenant_disabled", f"The tenant of {whose} is {state}.")
    if not user_active:
        raise Problem("user_inactive", f"The user of {whose} is deactivated.")
    if environment is Environment.LIVE and owes:
        raise Problem("payment_required", "The tenant's billing is past due.")
