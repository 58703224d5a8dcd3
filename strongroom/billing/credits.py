"""Debiting and granting credits. Both change the balance and append to the ledger in the
caller's transaction: the request path commits a debit together with the handler's work,
so a call is never done without being billed, nor billed without being done.

Every live call of a tenant takes the same row lock, the tenant's balance, and holds it
until its transaction commits; so on PostgreSQL the lock is held only while PostgreSQL runs
the debit, never across a round trip to a busy worker (issue 29):

- a write's debit is the last statement of its transaction and travels with the COMMIT
  (`WriteDebit`: the function `strongroom_debit`, strongroom/db/together.py);
- a read has no transaction: its debit is one statement in autocommit, the UPDATE and the
  ledger's INSERT in one data-modifying WITH (`_DEBITS`), and the reads of one tenant that
  a worker bills while that tenant's statement runs share the next one (`_ReadDebits`),
  rather than each wait in turn for the one before to flush its commit to disk.

Billed in a transaction of its own per call (BEGIN, UPDATE, INSERT, COMMIT), 64 concurrent
live reads of one tenant ran at 0.08 of the bare route, p99 0.55 s, and live creates at
0.03 (bench/RESULTS.md). SQLite (the embedded default: one process, one writer at a time)
takes two statements in the call's transaction (`debit`).
"""

from __future__ import annotations

import asyncio
import functools
import uuid
import weakref
from typing import Any, NamedTuple

from sqlalchemy import (
    ARRAY,
    Integer,
    String,
    Uuid,
    bindparam,
    func,
    insert,
    literal_column,
    select,
    true,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection, async_sessionmaker
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.billing.models import CreditEntry
from strongroom.db.reads import Reads
from strongroom.db.together import Statement
from strongroom.db.types import utcnow
from strongroom.tenants.models import Tenant

_tenants = Tenant.__table__
_ledger = CreditEntry.__table__
MAX_BATCH = 256  # reads billed in one statement, at most

# The guard is in the UPDATE itself, so concurrent calls cannot all pass on a stale
# balance: calls are billed only while the balance is above zero, which lets the last
# statement take it below zero by at most its own calls' cost.
# (Parameters are named apart from every column: one named after a column of the UPDATE's
# table would be added to its SET clause by SQLAlchemy.)
_take = (
    update(_tenants)
    .where(_tenants.c.id == bindparam("billed_tenant"), _tenants.c.credits > literal_column("0"))
    .values(credits=_tenants.c.credits - bindparam("billed_total"))
)


def _debits_statement():
    """One statement for the debits of calls: the UPDATE ... RETURNING as a WITH, the
    ledger's rows (one per call, from arrays) inserted only if it returned the tenant,
    the new balance selected. PostgreSQL runs every data-modifying WITH to completion."""
    taken = _take.returning(_tenants.c.id, _tenants.c.credits).cte("taken")
    calls = (
        func.unnest(
            bindparam("billed_entries", type_=ARRAY(Uuid())),
            bindparam("billed_amounts", type_=ARRAY(Integer())),
            bindparam("billed_reasons", type_=ARRAY(String())),
            bindparam("billed_requests", type_=ARRAY(String())),
        )
        .table_valued("id", "amount", "reason", "request_id")
        .render_derived(name="calls")
    )
    entries = (
        insert(_ledger)
        .from_select(
            ["id", "tenant_id", "amount", "reason", "request_id", "created_at"],
            select(
                calls.c.id,
                taken.c.id,
                -calls.c.amount,
                calls.c.reason,
                calls.c.request_id,
                bindparam("billed_at", type_=_ledger.c.created_at.type),
            )
            .select_from(taken)
            .join(calls, true()),
        )
        .cte("entries")
    )
    return select(taken.c.credits).add_cte(entries)


_DEBITS = _debits_statement()
# SQLite's two statements
_TAKE_BALANCE = _take.returning(_tenants.c.credits)
_ENTRY = insert(_ledger).values(
    id=bindparam("billed_entry"),
    tenant_id=bindparam("billed_tenant"),
    amount=-bindparam("billed_total"),
    reason=bindparam("billed_reason"),
    request_id=bindparam("billed_request"),
    created_at=bindparam("billed_at"),
)


class InsufficientCredits(Exception):
    """The tenant's balance was already at or below zero when the call was to be billed."""


class Debit(NamedTuple):
    amount: int
    reason: str
    request_id: str  # unique: a request is never billed twice


def _parameters(tenant_id: uuid.UUID, debits: list[Debit]) -> dict[str, Any]:
    return {
        "billed_tenant": tenant_id,
        "billed_total": sum(debit.amount for debit in debits),
        "billed_entries": [uuid.uuid4() for _ in debits],
        "billed_amounts": [debit.amount for debit in debits],
        "billed_reasons": [debit.reason for debit in debits],
        "billed_requests": [debit.request_id for debit in debits],
        "billed_at": utcnow(),
    }


def _one_call(tenant_id: uuid.UUID, debit: Debit) -> dict[str, Any]:
    return {
        "billed_tenant": tenant_id,
        "billed_total": debit.amount,
        "billed_entry": uuid.uuid4(),
        "billed_reason": debit.reason,
        "billed_request": debit.request_id,
        "billed_at": utcnow(),
    }


async def debit(
    session: AsyncSession, tenant_id: uuid.UUID, amount: int, *, reason: str, request_id: str
) -> int:
    """Bill `amount` credits for the request `request_id` in `session`'s transaction, in
    two statements (SQLite's way; on PostgreSQL the request path sends `WriteDebit` with
    the COMMIT), and return the new balance. Raises InsufficientCredits when the balance is
    at or below zero; the caller rolls back the call's work."""
    parameters = _one_call(tenant_id, Debit(amount, reason, request_id))
    return await _debit(await session.connection(), tenant_id, parameters)


async def _debit(
    connection: AsyncConnection, tenant_id: uuid.UUID, parameters: dict[str, Any]
) -> int:
    balance = (await connection.execute(_TAKE_BALANCE, parameters)).scalar_one_or_none()
    if balance is None:
        raise InsufficientCredits(str(tenant_id))
    await connection.execute(_ENTRY, parameters)
    return balance


# strongroom_debit (migration 0018): the UPDATE and the INSERT of `debit`, raising SR402
# instead of returning no row, so that it can travel with the COMMIT.
_DEBIT_FUNCTION = select(
    func.strongroom_debit(
        bindparam("billed_tenant", type_=Uuid()),
        bindparam("billed_total", type_=Integer()),
        bindparam("billed_entry", type_=Uuid()),
        bindparam("billed_reason", type_=String()),
        bindparam("billed_request", type_=String()),
        bindparam("billed_at", type_=_ledger.c.created_at.type),
    )
)
_INSUFFICIENT = "SR402"


class WriteDebit:
    """A write's debit, the last statement of its transaction (a `db.together.Closing`):
    on PostgreSQL sent with the call's writes and its COMMIT in one round trip, so the
    tenant's balance is locked only while PostgreSQL runs them, not while the worker's event
    loop comes back to the call between round trips (64 concurrent live creates of one
    tenant ran at 0.03 of the bare route with them apart: bench/RESULTS.md, issue 29).
    Its outcome is the new balance; at zero it raises InsufficientCredits, nothing of the
    call committed."""

    def __init__(self, tenant_id: uuid.UUID, amount: int, *, reason: str, request_id: str) -> None:
        self._tenant_id = tenant_id
        self._parameters = _one_call(tenant_id, Debit(amount, reason, request_id))
        refused = functools.partial(InsufficientCredits, str(tenant_id))
        self.statement = Statement(_DEBIT_FUNCTION, self._parameters, {_INSUFFICIENT: refused})

    async def elsewhere(self, connection: AsyncConnection) -> int:
        return await _debit(connection, self._tenant_id, self._parameters)

    def outcome(self, rows: list[Any]) -> int:
        return rows[0][0]


async def debit_alone(
    reads: Reads,
    sessions: async_sessionmaker[AsyncSession],
    tenant_id: uuid.UUID,
    amount: int,
    *,
    reason: str,
    request_id: str,
) -> int:
    """`debit` for a call that wrote nothing, committed before it returns: on PostgreSQL in
    autocommit on the driver (`reads`, whose connections are the primary's: runtime.py),
    in one statement with the other reads of the tenant billed at the same moment;
    elsewhere in a transaction of its own."""
    if reads.on_postgresql:
        batches = _batches.get(reads)
        if batches is None:
            batches = _batches[reads] = _ReadDebits(reads)
        return await batches.debit(tenant_id, Debit(amount, reason, request_id))
    async with sessions() as session:
        balance = await debit(session, tenant_id, amount, reason=reason, request_id=request_id)
        await session.commit()
        return balance


class _ReadDebits:
    """The debits of reads, one statement per tenant at a time: calls made while a
    tenant's statement runs wait for the next one, which bills them all. They share its
    outcome: the balance after it, or InsufficientCredits for each (the balance was at or
    below zero before it, so none of them is billed), or the error that failed it."""

    def __init__(self, reads: Reads) -> None:
        self._reads = reads
        self._pending: dict[uuid.UUID, list[tuple[Debit, asyncio.Future[int]]]] = {}
        self._senders: dict[uuid.UUID, asyncio.Task] = {}

    async def debit(self, tenant_id: uuid.UUID, debit: Debit) -> int:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._pending.setdefault(tenant_id, []).append((debit, future))
        if tenant_id not in self._senders:
            # A task, not this call: a caller cancelled (its client gone) must not cancel
            # the statement that bills the others with it.
            self._senders[tenant_id] = asyncio.create_task(self._send(tenant_id))
        return await future

    async def _send(self, tenant_id: uuid.UUID) -> None:
        try:
            while waiting := self._pending.pop(tenant_id, None):
                if len(waiting) > MAX_BATCH:
                    self._pending[tenant_id] = waiting[MAX_BATCH:]
                await self._bill(tenant_id, waiting[:MAX_BATCH])
        finally:  # no await between finding nothing pending and leaving: none is missed
            del self._senders[tenant_id]

    async def _bill(
        self, tenant_id: uuid.UUID, batch: list[tuple[Debit, asyncio.Future[int]]]
    ) -> None:
        try:
            rows = await self._reads.all(
                _DEBITS, _parameters(tenant_id, [debit for debit, _ in batch])
            )
        except BaseException as error:
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
            if isinstance(error, asyncio.CancelledError):
                raise
            return
        for _, future in batch:
            if future.done():  # its caller was cancelled
                continue
            if rows:
                future.set_result(rows[0].credits)
            else:
                future.set_exception(InsufficientCredits(str(tenant_id)))


_batches: weakref.WeakKeyDictionary[Reads, _ReadDebits] = weakref.WeakKeyDictionary()


async def grant(session: AsyncSession, tenant_id: uuid.UUID, amount: int, *, reason: str) -> None:
    await session.exec(
        update(_tenants)
        .where(_tenants.c.id == tenant_id)
        .values(credits=_tenants.c.credits + amount)
    )
    await session.exec(
        insert(_ledger).values(id=uuid.uuid4(), tenant_id=tenant_id, amount=amount, reason=reason)
    )
