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


async def debit(
    session: AsyncSession, tenant_id: uuid.UUID, amount: int, *, reason: str, request_id: str
) -> int:
    """Bill `amount` credits for the request `request_id` (unique: never billed twice), and
    return the new balance.

    The balance may end below zero by the last call's cost: the work was done and is billed;
    the next live call of the tenant is refused with `payment_required`.
    """
    balance = await session.exec(
        update(_tenants)
        .where(_tenants.c.id == tenant_id)
        .values(credits=_tenants.c.credits - amount)
        .returning(_tenants.c.credits)
    )
    await session.exec(
        insert(_ledger).values(
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            amount=-amount,
            reason=reason,
            request_id=request_id,
        )
    )
    return balance.scalar_one()


async def grant(session: AsyncSession, tenant_id: uuid.UUID, amount: int, *, reason: str) -> None:
    await session.exec(
        update(_tenants)
        .where(_tenants.c.id == tenant_id)
        .values(credits=_tenants.c.credits + amount)
    )
    await session.exec(
        insert(_ledger).values(id=uuid.uuid4(), tenant_id=tenant_id, amount=amount, reason=reason)
    )
