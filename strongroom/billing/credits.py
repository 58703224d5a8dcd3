"""Debiting and granting credits. Both change the balance and append to the ledger in the
caller's transaction: the request path commits a debit together with the handler's work,
so a call is never done without being billed, nor billed without being done."""

from __future__ import annotations

import uuid

from sqlalchemy import insert, update
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.billing.models import CreditEntry
from strongroom.tenants.models import Tenant

_tenants = Tenant.__table__
_ledger = CreditEntry.__table__


class InsufficientCredits(Exception):
    """The tenant's balance was already at or below zero when the call was to be billed."""


async def debit(
    session: AsyncSession, tenant_id: uuid.UUID, amount: int, *, reason: str, request_id: str
) -> int:
    """Bill `amount` credits for the request `request_id` (unique: never billed twice), and
    return the new balance.

    The guard is in the UPDATE itself, so concurrent calls cannot all pass on a stale
    balance: a call is billed only while the balance is above zero, which lets the last one
    take it below zero by at most its own cost. Raises InsufficientCredits otherwise; the
    caller rolls back the call's work.
    """
    balance = (
        await session.exec(
            update(_tenants)
            .where(_tenants.c.id == tenant_id, _tenants.c.credits > 0)
            .values(credits=_tenants.c.credits - amount)
            .returning(_tenants.c.credits)
        )
    ).scalar_one_or_none()
    if balance is None:
        raise InsufficientCredits(str(tenant_id))
    await session.exec(
        insert(_ledger).values(
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            amount=-amount,
            reason=reason,
            request_id=request_id,
        )
    )
    return balance


async def grant(session: AsyncSession, tenant_id: uuid.UUID, amount: int, *, reason: str) -> None:
    await session.exec(
        update(_tenants)
        .where(_tenants.c.id == tenant_id)
        .values(credits=_tenants.c.credits + amount)
    )
    await session.exec(
        insert(_ledger).values(id=uuid.uuid4(), tenant_id=tenant_id, amount=amount, reason=reason)
    )
