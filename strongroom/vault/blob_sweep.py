"""The sweep of orphaned document blobs (issue 42). A document's stored file is removed
after the transaction that deletes the document has committed (strongroom.vault.documents):
a process killed between the two leaves the file behind, as does an upload whose
transaction never committed after its file was stored. The sweep lists the store a page at
a time and removes every document blob (`<tenant>/<environment>/<document id>`) whose
document no longer exists and that was written more than `grace_seconds` ago (an upload in
flight stores its file before its row commits). Template blobs (a path under a fill's
directory) are never touched. Run at start and every `blob_sweep_seconds` by each process
that runs jobs (the embedded default, `strongroom worker`): removing a blob twice is
harmless."""

from __future__ import annotations

import logging
import re
import time
import uuid

from sqlmodel import col, select

from strongroom.corpus.models import Document
from strongroom.services import Services

log = logging.getLogger("strongroom.vault")

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
DOCUMENT_KEY = re.compile(rf"^{_UUID}/(?:test|live)/({_UUID})$")  # as vault/documents.py names it
CHECKED_AT_ONCE = 500  # document ids looked up per statement


def grace_of(services: Services) -> float:
    """How old an orphan must be: longer than any upload takes to commit its row."""
    return services.settings.upload_timeout_seconds + 300.0


async def sweep_round(services: Services) -> None:
    """The `blob_sweep` background task's round (strongroom.background)."""
    await sweep_orphan_blobs(services, grace_of(services))


async def sweep_orphan_blobs(services: Services, grace_seconds: float) -> int:
    """Remove the document blobs whose document is gone; how many were removed."""
    cutoff = time.time() - grace_seconds
    removed, batch = 0, []
    async for key, written in services.blobs.listed():
        match = DOCUMENT_KEY.match(key)
        if match is None or written > cutoff:
            continue
        batch.append((key, uuid.UUID(match[1])))
        if len(batch) >= CHECKED_AT_ONCE:
            removed += await _remove_orphans(services, batch)
            batch = []
    if batch:
        removed += await _remove_orphans(services, batch)
    if removed:
        log.info("removed %d document blobs whose documents are gone", removed)
    return removed


async def _remove_orphans(services: Services, batch: list[tuple[str, uuid.UUID]]) -> int:
    statement = select(Document.id).where(col(Document.id).in_([i for _, i in batch]))
    async with services.sessions() as session:
        existing = set((await session.exec(statement)).all())
    orphans = [key for key, document_id in batch if document_id not in existing]
    if orphans:
        await services.blobs.delete_many(orphans)
    return len(orphans)
