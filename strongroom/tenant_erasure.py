"""Erasing a deleted tenant's data (issue 42, item 5; docs/decisions.md, "Erasure").

A tenant marked deleted (the operator's Tenant deletion: strongroom.tenants.service) is due
for erasure `tenant_erasure_days` later. Every process that runs jobs (the embedded default,
`strongroom worker`) looks for due tenants every `tenant_erasure_check_seconds`; `strongroom
tenants erase NAME` erases one at once. Erased, in both environments: documents with their
passages, vectors, index terms and stored files (strongroom.vault.erase, a batch per
transaction); template fills and their files; workflow runs; every job; conversations and
their messages; projects; webhook endpoints, events and deliveries; then anything else stored
under the tenant's directory of the blob store. Kept for audit: the tenant's row (stamped
`erased_at`), its users, its API key records and its credit ledger.

No transaction stays open across an erasure (issue 52, item 6). Every table goes a batch
(ERASE_BATCH rows) per short transaction, and the stored files a batch names are removed
after that batch has committed, outside any transaction (a file whose removal fails is left
to the listing of the tenant's directory at the end, or to the blob sweep). Each batch's
transaction first holds the tenant's row (`FOR NO KEY UPDATE`, which rows referring to the
tenant do not wait for) and checks it is still deleted: a tenant restored meanwhile keeps
what is left, and its restore waits for one batch at most, not for the whole erasure.

Two processes may find the same tenant due. The one that erases holds a claim: on
PostgreSQL a session-level advisory lock (`pg_try_advisory_lock`) on a connection of its
own, which holds no transaction and is released when the erasure ends or its process dies
(its connection closes); on SQLite (one process, the embedded default) a mark in this
process. Another erasure skips a tenant so claimed, or, for the command, waits for it. Every
step is idempotent, so an erasure cut off (a kill, a restart) is taken up where it stopped
at the next check: the stamp comes last.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy
from sqlalchemy.sql import ColumnElement
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.chat.models import Conversation, Message
from strongroom.corpus.models import Document
from strongroom.db.types import utcnow
from strongroom.jobs.models import Job
from strongroom.outbox.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from strongroom.services import Services
from strongroom.templates.models import TemplateFill
from strongroom.tenants.models import Tenant
from strongroom.tenants.service import find_tenant
from strongroom.vault.erase import ERASE_BATCH, erase_documents, remove_blobs
from strongroom.vault.models import Project
from strongroom.workflows.models import WorkflowRun

log = logging.getLogger("strongroom.tenant_erasure")


class NotDeletedError(Exception):
    """Only a deleted tenant's data may be erased."""


class _Restored(Exception):
    """The tenant was restored (or removed) in the middle of its erasure: what is left stays."""


@dataclasses.dataclass
class Erasure:
    """What one erasure removed (rows and stored files)."""

    tenant_id: uuid.UUID
    name: str
    documents: int = 0
    template_fills: int = 0
    workflow_runs: int = 0
    jobs: int = 0
    conversations: int = 0
    projects: int = 0
    webhook_endpoints: int = 0
    webhook_events: int = 0
    other_files: int = 0  # template files and any file left under the tenant's directory

    def counts(self) -> dict[str, int]:
        return {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if field.type == "int"
        }


async def erase_due_tenants(services: Services) -> list[Erasure]:
    """Erase every deleted tenant whose erasure is due and not done (a tenant another process
    is erasing is skipped); what each erasure removed."""
    now = utcnow()
    due = (
        select(Tenant.id)
        .where(
            col(Tenant.deleted_at).is_not(None),
            col(Tenant.erased_at).is_(None),
            col(Tenant.erasure_due_at) <= now,
        )
        .order_by(col(Tenant.erasure_due_at))
    )
    async with services.sessions() as session:
        tenant_ids = (await session.exec(due)).all()
    done = []
    for tenant_id in tenant_ids:
        erasure = await erase_tenant(services, tenant_id, due_by=now)
        if erasure is not None:
            done.append(erasure)
    return done


async def erase_tenant_named(services: Services, reference: str) -> tuple[Erasure, Tenant]:
    """Erase the deleted tenant `reference` (id or name) now, due or not, waiting for another
    process erasing it; also one erased already (what may have been left is taken). Returns
    what was removed and the tenant as stamped. Raises NotFoundError, NotDeletedError."""
    async with services.sessions() as session:
        tenant = await find_tenant(session, reference)
    if tenant.deleted_at is None:
        raise NotDeletedError(
            f"tenant {tenant.name!r} is not deleted: only a deleted tenant's data is erased "
            "(delete its Tenant resource first)"
        )
    erasure = await erase_tenant(services, tenant.id, wait=True)
    async with services.sessions() as session:
        stamped = await session.get(Tenant, tenant.id)
    if erasure is None or stamped is None:  # restored (or removed) meanwhile
        raise NotDeletedError(f"tenant {tenant.name!r} was restored meanwhile; nothing erased")
    return erasure, stamped


async def erase_tenant(
    services: Services,
    tenant_id: uuid.UUID,
    *,
    due_by: datetime | None = None,
    wait: bool = False,
) -> Erasure | None:
    """Claim the deleted tenant and erase its data, then stamp `erased_at` (kept if stamped
    before). With `due_by` only a tenant not yet erased and due by then is claimed. None when
    there is nothing to claim: not deleted, not due, or (without `wait`) held by another
    process's erasure."""
    conditions: list[ColumnElement[bool]] = [
        col(Tenant.id) == tenant_id,
        col(Tenant.deleted_at).is_not(None),
    ]
    if due_by is not None:
        conditions += [col(Tenant.erased_at).is_(None), col(Tenant.erasure_due_at) <= due_by]
    async with _claimed(services, tenant_id, wait=wait) as claimed:
        if not claimed:
            return None  # another process is erasing it
        async with services.sessions() as session:  # read once the claim is held
            tenant = (await session.exec(select(Tenant).where(*conditions))).first()
        if tenant is None:
            return None
        erasure = Erasure(tenant.id, tenant.name)
        try:
            await _erase(services, erasure)
        except _Restored:
            log.info("tenant %s was restored in the middle of its erasure", tenant_id)
            return None
        now = utcnow()
        async with services.sessions() as session:
            await session.exec(  # type: ignore[call-overload]
                sqlalchemy.update(Tenant)
                .where(
                    col(Tenant.id) == tenant.id,
                    col(Tenant.erased_at).is_(None),
                    col(Tenant.deleted_at).is_not(None),  # not restored meanwhile
                )
                .values(erased_at=now, updated_at=now)
            )
            await session.commit()
    log.info("erased the data of deleted tenant %s", tenant_id, extra={"erased": erasure.counts()})
    return erasure


# The advisory locks' first key (their second is the tenant's): strongroom's erasures.
_LOCK_SPACE = 0x5E_0A5E
_ERASING_HERE: set[uuid.UUID] = set()  # SQLite: the tenants this process is erasing
_WAIT_SECONDS = 0.2  # how often the command looks whether another erasure has ended


@contextlib.asynccontextmanager
async def _claimed(services: Services, tenant_id: uuid.UUID, *, wait: bool) -> AsyncIterator[bool]:
    """Claim the tenant's erasure for this process (whether it was claimed): with `wait`,
    once another process's claim ends. No transaction stays open while it is held."""
    if services.settings.is_embedded:
        while tenant_id in _ERASING_HERE:
            if not wait:
                yield False
                return
            await asyncio.sleep(_WAIT_SECONDS)
        _ERASING_HERE.add(tenant_id)
        try:
            yield True
        finally:
            _ERASING_HERE.discard(tenant_id)
        return
    keys = {"space": _LOCK_SPACE, "tenant": int.from_bytes(tenant_id.bytes[:4], signed=True)}
    take = sqlalchemy.text("SELECT pg_try_advisory_lock(:space, :tenant)")
    async with services.engine.connect() as connection:
        while True:  # tried, not waited for in a statement: no transaction open meanwhile
            taken = await connection.scalar(take, keys)
            await connection.commit()  # the lock is the session's: it outlives the transaction
            if taken or not wait:
                break
            await asyncio.sleep(_WAIT_SECONDS)
        if not taken:
            yield False
            return
        released = False
        try:
            yield True
        finally:
            try:
                await connection.execute(
                    sqlalchemy.text("SELECT pg_advisory_unlock(:space, :tenant)"), keys
                )
                await connection.commit()
                released = True
            finally:
                if not released:  # closed, not pooled: its lock goes with its session
                    await connection.invalidate()


def _still_deleted(tenant_id: uuid.UUID):
    """What each batch's transaction does first: hold the tenant's row and check it is still
    deleted (raises _Restored otherwise)."""

    async def check(session: AsyncSession) -> None:
        statement = (
            select(Tenant.id)
            .where(col(Tenant.id) == tenant_id, col(Tenant.deleted_at).is_not(None))
            .with_for_update(key_share=True)
        )
        if (await session.exec(statement)).first() is None:
            raise _Restored(str(tenant_id))

    return check


async def _erase(services: Services, erasure: Erasure) -> None:
    tenant_id = erasure.tenant_id
    guard = _still_deleted(tenant_id)
    erasure.documents = await erase_documents(
        services, col(Document.tenant_id) == tenant_id, first=guard
    )
    erasure.template_fills = await _erase_template_fills(services, erasure, guard)
    erasure.workflow_runs = await _delete_batches(
        services, WorkflowRun, col(WorkflowRun.tenant_id) == tenant_id, guard=guard
    )
    # Every other job (a project's deletion, one whose fill or run row was never written):
    # a running one whose row goes is cancelled (strongroom.jobs.runner).
    erasure.jobs = await _delete_batches(
        services, Job, col(Job.tenant_id) == tenant_id, guard=guard
    )
    erasure.conversations = await _delete_batches(
        services,
        Conversation,
        col(Conversation.tenant_id) == tenant_id,
        guard=guard,
        first=lambda ids: [sqlalchemy.delete(Message).where(col(Message.conversation_id).in_(ids))],
    )
    # Any document an upload added meanwhile goes with its project (the foreign key
    # cascades); its file is taken below.
    erasure.projects = await _delete_batches(
        services, Project, col(Project.tenant_id) == tenant_id, guard=guard
    )
    erasure.webhook_events = await _delete_batches(
        services,
        WebhookEvent,
        col(WebhookEvent.tenant_id) == tenant_id,
        guard=guard,
        first=lambda ids: [
            sqlalchemy.delete(WebhookDelivery).where(col(WebhookDelivery.event_id).in_(ids))
        ],
    )
    erasure.webhook_endpoints = await _delete_batches(
        services,
        WebhookEndpoint,
        col(WebhookEndpoint.tenant_id) == tenant_id,
        guard=guard,
        first=lambda ids: [
            sqlalchemy.delete(WebhookDelivery).where(col(WebhookDelivery.endpoint_id).in_(ids))
        ],
    )
    # Whatever else is stored under the tenant's directory: a template a process killed
    # before its row committed, a fill's result written as its row went, a document's file
    # whose removal failed.
    leftovers = [key async for key, _ in services.blobs.listed(f"{tenant_id}/")]
    await remove_blobs(services, leftovers)
    erasure.other_files += len(leftovers)


async def _erase_template_fills(services: Services, erasure: Erasure, guard: Any) -> int:
    """Delete the tenant's fills and their jobs a batch per transaction, and their stored
    template and result after each commit (the blob sweep never touches template files)."""
    erased = 0
    of_tenant = col(TemplateFill.tenant_id) == erasure.tenant_id
    while True:
        async with services.sessions() as session:
            await guard(session)
            statement = select(
                TemplateFill.id, TemplateFill.template_blob_key, TemplateFill.result_blob_key
            )
            rows = (await session.exec(statement.where(of_tenant).limit(ERASE_BATCH))).all()
            if not rows:
                return erased
            ids = [fill_id for fill_id, _, _ in rows]
            await session.exec(  # type: ignore[call-overload]
                sqlalchemy.delete(TemplateFill).where(col(TemplateFill.id).in_(ids))
            )
            await session.exec(sqlalchemy.delete(Job).where(col(Job.id).in_(ids)))  # type: ignore[call-overload]
            await session.commit()
        keys = [key for _, *stored in rows for key in stored if key]
        await remove_blobs(services, keys)
        erasure.other_files += len(keys)
        erased += len(rows)


async def _delete_batches(
    services: Services,
    model: Any,
    where: ColumnElement[bool],
    *,
    guard: Any,
    first: Any = None,
) -> int:
    """Delete the rows of `model` that `where` selects, ERASE_BATCH per transaction (each
    begun by `guard`), after the statements `first(ids)` gives (rows that refer to them);
    how many were deleted."""
    deleted = 0
    while True:
        async with services.sessions() as session:
            await guard(session)
            ids: Sequence[uuid.UUID] = (
                await session.exec(select(model.id).where(where).limit(ERASE_BATCH))
            ).all()
            if not ids:
                return deleted
            for statement in first(ids) if first else ():
                await session.exec(statement)
            await session.exec(sqlalchemy.delete(model).where(col(model.id).in_(ids)))
            await session.commit()
        deleted += len(ids)
