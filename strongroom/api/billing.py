"""Billing a capability's call, the same whoever makes it: a request (api/request_path.py)
or a routine's step acting for its owner (routines/runner.py). D21: live calls only, a
write's debit the last statement of its transaction, and a balance that reaches zero makes
the tenant past due on every replica at once."""

from __future__ import annotations

from typing import Protocol

from strongroom.api.capability import Capability
from strongroom.auth.principal import Principal
from strongroom.billing.credits import WriteDebit
from strongroom.metrics import CREDITS_BILLED
from strongroom.tenants.partition import Environment


class Announces(Protocol):
    async def announce(self, event: dict[str, str]) -> None: ...


def write_debit(principal: Principal, capability: Capability, request_id: str) -> WriteDebit | None:
    """The debit a write sends with its commit, entered in the ledger under `request_id`
    (what made the call); None for a test call, which is free."""
    if principal.environment is not Environment.LIVE:
        return None
    return WriteDebit(
        principal.tenant_id, capability.cost, reason=capability.name, request_id=request_id
    )


async def settled(
    announcer: Announces, principal: Principal, capability: Capability, balance: int
) -> None:
    """After a billed call committed, leaving `balance`: counted, and at zero announced, so
    every replica refuses the tenant's next live call (D21)."""
    CREDITS_BILLED.inc(capability.cost)
    if balance <= 0:
        await announcer.announce({"tenant_id": str(principal.tenant_id)})
