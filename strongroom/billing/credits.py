"""Debiting and granting credits. Both change the balance and append to the ledger in the
caller's transaction: the request path commits a debit together with the handler's work,
so a call is never done without being billed, nor billed without being done.

On PostgreSQL a debit is one statement: the balance's UPDATE and the ledger's INSERT in one
data-modifying WITH. A call that wrote nothing runs it alone, in autocommit
(`debit_alone`), where it is atomic by itself. Every live call of a tenant takes the same
row lock, and holds it until its transaction ends: in a transaction of its own begun by the
worker (BEGIN, UPDATE, INSERT, COMMIT: four round trips, each waiting its turn on a busy
event loop), 64 concurrent live reads of one tenant ran at 0.08 of the bare route, p99
0.55 s (bench/RESULTS.md, issue 29); held only while one statement runs in PostgreSQL, the
lock no longer waits for the worker. SQLite (the embedded default: one process, one
writer at a time) has no data-modifying WITH and takes the two statements.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import bindparam, insert, literal_column, select, update
from sqlalchemy.ext.asyncio import async_sessionmaker
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.billing.models import CreditEntry
from strongroom.db.reads import Reads
from strongroom.db.types import utcnow
from strongroom.tenants.models import Tenant

_tenants = Tenant.__table__
_ledger = CreditEntry.__table__

# The guard is in the UPDATE itself, so concurrent calls cannot all pass on a stale
# balance: a call is billed only while the balance is above zero, which lets the last one
# take it below zero by at most its own cost.
_take = (
    update(_tenants)
    .where(_tenants.c.id == bindparam("billed_tenant"), _tenants.c.credits > literal_column("0"))
    .values(credits=_tenants.c.credits - bindparam("billed_amount"))
)
_take_balance = _take.returning(_tenants.c.credits)
_entry = insert(_ledger).values(
    id=bindparam("billed_entry"),
    tenant_id=bindparam("billed_tenant"),
    amount=-bindparam("billed_amount"),
    reason=bindparam("billed_reason"),
    request_id=bindparam("billed_request"),
    created_at=bindparam("billed_at"),
)


def _one_statement():
    """UPDATE ... RETURNING as a WITH, the ledger row inserted from what it returned (no
    row, no entry), the new balance selected: one statement, one round trip."""
    taken = _take.returning(_tenants.c.id, _tenants.c.credits).cte("taken")
    entry = (
        insert(_ledger)
        .from_select(
            ["id", "tenant_id", "amount", "reason", "request_id", "created_at"],
            select(
                bindparam("billed_entry", type_=_ledger.c.id.type),
                taken.c.id,
                -bindparam("billed_amount", type_=_ledger.c.amount.type),
                bindparam("billed_reason", type_=_ledger.c.reason.type),
                bindparam("billed_request", type_=_ledger.c.request_id.type),
                bindparam("billed_at", type_=_ledger.c.created_at.type),
            ),
        )
        .cte("entry")
    )
    # `entry` runs because it is part of the statement (PostgreSQL runs every data-modifying
    # WITH to completion, read or not); it adds no row to the answer.
    return select(taken.c.credits).add_cte(entry)


_debit = _one_statement()


class InsufficientCredits(Exception):
    """The tenant's balance was already at or below zero when the call was to be billed."""


def _parameters(tenant_id: uuid.UUID, amount: int, reason: str, request_id: str) -> dict[str, Any]:
    # Named apart from every column: a parameter named after a column of the UPDATE's table
    # would be added to its SET clause by SQLAlchemy (`created_at` was).
    return {
        "billed_tenant": tenant_id,
        "billed_amount": amount,
        "billed_entry": uuid.uuid4(),
        "billed_reason": reason,
        "billed_request": request_id,
        "billed_at": utcnow(),
    }


async def debit(
    session: AsyncSession, tenant_id: uuid.UUID, amount: int, *, reason: str, request_id: str
) -> int:
    """Bill `amount` credits for the request `request_id` (unique: never billed twice) in
    `session`'s transaction, and return the new balance. Raises InsufficientCredits when
    the balance is at or below zero; the caller rolls back the call's work."""
    connection = await session.connection()
    parameters = _parameters(tenant_id, amount, reason, request_id)
    if connection.dialect.name == "postgresql":
        balance = (await connection.execute(_debit, parameters)).scalar_one_or_none()
    else:
        balance = (await connection.execute(_take_balance, parameters)).scalar_one_or_none()
        if balance is not None:
            await connection.execute(_entry, parameters)
    if balance is None:
        raise InsufficientCredits(str(tenant_id))
    return balance


async def debit_alone(
    reads: Reads,
    sessions: async_sessionmaker[AsyncSession],
    tenant_id: uuid.UUID,
    amount: int,
    *,
    reason: str,
    request_id: str,
) -> int:
    """`debit` for a call that wrote nothing, committed before it returns: on PostgreSQL the
    one statement in autocommit, on the driver (`reads`); elsewhere in a session's
    transaction of its own."""
    if not reads.on_postgresql:
        async with sessions() as session:
            balance = await debit(session, tenant_id, amount, reason=reason, request_id=request_id)
            await session.commit()
            return balance
    rows = await reads.all(_debit, _parameters(tenant_id, amount, reason, request_id))
    if not rows:
        raise InsufficientCredits(str(tenant_id))
    return rows[0].credits


async def grant(session: AsyncSession, tenant_id: uuid.UUID, amount: int, *, reason: str) -> None:
    await session.exec(
        update(_tenants)
        .where(_tenants.c.id == tenant_id)
        .values(credits=_tenants.c.credits + amount)
    )
    await session.exec(
        insert(_ledger).values(id=uuid.uuid4(), tenant_id=tenant_id, amount=amount, reason=reason)
    )
