"""Analyse every stored passage again (`strongroom reindex`): after strongroom.text.analysis
or the thesaurus changed, the index holds terms the search no longer asks for.

Passages are read in id order, BATCH at a time, analysed in the jobs' thread pool and written
back only where their terms changed, each batch in its own short transaction: safe to run
while the service serves (a passage ingested meanwhile is analysed by the new code already),
and to run again after it was interrupted.
"""

from __future__ import annotations

import uuid

from sqlalchemy import bindparam, select, update

from strongroom.corpus.models import DocumentChunk
from strongroom.services import Services
from strongroom.text.analysis import index_texts

BATCH = 500


async def reindex(services: Services) -> int:
    """Bring every passage's `index_terms` up to date; returns how many changed."""
    changed = 0
    after: uuid.UUID | None = None
    table = DocumentChunk.__table__
    while True:
        statement = select(table.c.id, table.c.content, table.c.index_terms).order_by(table.c.id)
        if after is not None:
            statement = statement.where(table.c.id > after)
        async with services.sessions() as session:
            rows = (await session.exec(statement.limit(BATCH))).all()  # type: ignore[call-overload]
        if not rows:
            return changed
        terms = await services.in_job_thread(index_texts, [row.content for row in rows])
        updates = [
            {"chunk_id": row.id, "index_terms": new}
            for row, new in zip(rows, terms, strict=True)
            if new != row.index_terms
        ]
        if updates:
            async with services.sessions() as session:
                connection = await session.connection()
                await connection.execute(
                    update(table).where(table.c.id == bindparam("chunk_id")), updates
                )
                await session.commit()
        changed += len(updates)
        after = rows[-1].id
