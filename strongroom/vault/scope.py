"""The projects and documents a search or a question is narrowed to, checked to be the
caller's (issue 42). Before, ids that did not exist or were another tenant's matched nothing,
so a typo looked like "no results"; now every such id is named in a 404 `not_found`, as a
foreign id is everywhere else (so the change tells nobody more than a lookup does)."""

from __future__ import annotations

import uuid

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.corpus.kinds import DOCUMENT_DELETING
from strongroom.corpus.models import Document
from strongroom.problems import Problem
from strongroom.retrieval.filters import Filters
from strongroom.tenants.partition import Partition
from strongroom.vault.models import PROJECT_DELETING, Project

# The status that hides a row: a project being deleted, or one of its documents.
_DELETING = {Project: PROJECT_DELETING, Document: DOCUMENT_DELETING}


async def require_own_filters(
    session: AsyncSession, partition: Partition, filters: Filters
) -> None:
    """Raises Problem 404 naming every project and document id of `filters` that is not of
    the partition (its tenant and environment). An empty list names nothing."""
    missing = [
        f"No such {what}: {', '.join(str(i) for i in ids)}."
        for what, ids in (
            ("projects", await _unknown(session, partition, Project, filters.project_ids)),
            ("documents", await _unknown(session, partition, Document, filters.document_ids)),
        )
        if ids
    ]
    if missing:
        raise Problem("not_found", " ".join(missing))


async def _unknown(
    session: AsyncSession,
    partition: Partition,
    table: type[Project] | type[Document],
    ids: list[uuid.UUID] | None,
) -> list[uuid.UUID]:
    if not ids:
        return []
    found = set(await own_ids(session, partition, table, ids))
    return [i for i in dict.fromkeys(ids) if i not in found]


async def own_ids(
    session: AsyncSession,
    partition: Partition,
    table: type[Project] | type[Document],
    ids: list[uuid.UUID],
) -> list[uuid.UUID]:
    """Those of `ids` that are the partition's and not being deleted, in order, without
    repeats."""
    if not ids:
        return []
    statement = select(table.id).where(
        col(table.id).in_(ids),
        table.tenant_id == partition.tenant_id,
        table.environment == partition.environment.value,
        table.status != _DELETING[table],
    )
    found = set((await session.exec(statement)).all())
    return [i for i in dict.fromkeys(ids) if i in found]
