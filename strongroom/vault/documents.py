"""Documents inside one tenant and environment (D42): accepting an upload, listing, fetching.

An upload is accepted in one transaction: the bytes go to the blob store, the document row
and its ingestion job (D46) are written, and once that commits the job is queued. Should the
transaction roll back, the stored blob is removed again; should the queueing fail, the job
stays `pending` and a worker's sweep queues it (strongroom.worker).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import sqlalchemy
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.api.capability import Call
from strongroom.api.multipart import SpooledFile
from strongroom.api.pagination import NewestFirst, Position
from strongroom.auth.principal import Principal
from strongroom.corpus.kinds import DOCUMENT_DELETING, READ_FORMATS
from strongroom.corpus.models import Document, DocumentMeaning, DocumentStatus
from strongroom.db.types import utcnow
from strongroom.ingest.detect import detect
from strongroom.jobs.models import Job, JobKind, JobStatus
from strongroom.problems import Problem
from strongroom.services import Services, queue_at_commit
from strongroom.tenants.partition import Partition
from strongroom.vault import projects
from strongroom.vault.erase import DOCUMENT_JOBS, delete_document_rows, remove_blobs
from strongroom.vault.schemas import DocumentView

SUPPORTED = READ_FORMATS

_documents = Document.__table__
_listed = sqlalchemy.select(  # what a page shows (vault.schemas.DocumentView)
    *(
        _documents.c[name]
        for name in (
            "id", "project_id", "name", "document_type", "content_type", "size_bytes",
            "sha256", "page_count", "ocr_page_count", "empty_page_count", "status",
            "meaning", "error", "ingestion_job_id", "created_at", "updated_at",
        )
    )
).where(
    _documents.c.tenant_id == sqlalchemy.bindparam("tenant_id"),
    _documents.c.environment == sqlalchemy.bindparam("environment"),
    _documents.c.status != sqlalchemy.bindparam("deleting"),
)  # fmt: skip
_pages = NewestFirst(_listed, _documents.c)
_project_pages = NewestFirst(
    _listed.where(_documents.c.project_id == sqlalchemy.bindparam("project_id")),
    _documents.c,
)


def _scoped(principal: Principal):
    """The caller's documents, but for those of a project being deleted."""
    return select(Document).where(
        Document.tenant_id == principal.tenant_id,
        Document.environment == principal.environment.value,
        Document.status != DOCUMENT_DELETING,
    )


async def accept_upload(
    call: Call[Services], project_id: uuid.UUID, name: str, file: SpooledFile
) -> Document:
    """Store `file` as a new document of the project and queue its ingestion.

    Raises Problem: 404 `not_found` (no such project for this caller), 422
    `validation_error` (an empty file), 400 `unsupported_file_type`."""
    principal, services = call.principal, call.services
    if await projects.get_project(call.session, principal, project_id) is None:
        raise Problem("not_found", "No such project.")
    if file.size == 0:
        raise Problem(
            "validation_error",
            "The upload form is invalid.",
            errors=[{"field": "file", "message": "the file is empty"}],
        )
    detected = await asyncio.to_thread(detect, file.path, file.filename)
    if detected is None:
        raise Problem(
            "unsupported_file_type",
            f"The file is not a document Strongroom reads ({SUPPORTED}); its type is told "
            "from its content, not its name.",
        )
    document_id, job_id = uuid.uuid4(), uuid.uuid4()
    blob_key = f"{principal.tenant_id}/{principal.environment.value}/{document_id}"
    await services.blobs.put_file(blob_key, file.path)
    call.undo_unless_committed(lambda: services.blobs.delete(blob_key))
    document = Document(
        id=document_id,
        tenant_id=principal.tenant_id,
        environment=principal.environment.value,
        project_id=project_id,
        owner_id=principal.user_id,
        name=name,
        document_type=detected.type.value,
        content_type=detected.content_type,
        size_bytes=file.size,
        sha256=file.sha256,
        blob_key=blob_key,
        ingestion_job_id=job_id,
        meaning=meaning_to_come(services),
    )
    job = Job(
        id=job_id,
        tenant_id=principal.tenant_id,
        environment=principal.environment.value,
        kind=JobKind.INGESTION.value,
        subject_id=document_id,
    )
    call.session.add_all([document, job])
    # The project looked up again, its row held until the commit (issue 52, item 7): a
    # deletion of it waits for this upload and takes its document too; one that came first
    # answers this upload 404, as does a project whose row its deletion already removed.
    try:
        await call.session.flush()  # on SQLite, the write lock: no deletion commits now
    except sqlalchemy.exc.IntegrityError:
        raise Problem("not_found", "No such project.") from None
    if await projects.get_project(call.session, principal, project_id, lock="share") is None:
        raise Problem("not_found", "No such project.")
    await queue_at_commit(call, job)
    return document


async def get_document(
    call: Call[Services], document_id: uuid.UUID, *, lock: bool = False
) -> Document:
    """The caller's document; raises Problem 404 for any other. With `lock` its row is held
    until the transaction ends (PostgreSQL; SQLite has one writer at a time), read afresh:
    a lookup that waited for a deletion finds nothing."""
    statement = _scoped(call.principal).where(Document.id == document_id)
    if lock:
        statement = statement.with_for_update().execution_options(populate_existing=True)
    document = (await call.session.exec(statement)).first()
    if document is None:
        raise Problem("not_found", "No such document.")
    return document


async def delete_document(call: Call[Services], document_id: uuid.UUID) -> Document:
    """Delete the caller's document (issue 42) in the call's transaction, as
    strongroom.vault.erase does: its passages, its jobs (a running ingestion is cancelled),
    the document; a `document.deleted` event for subscribed endpoints; its stored file once
    the transaction has committed. Raises Problem 404 for any other document, and for one
    another call deleted since it was looked up (of concurrent DELETEs one answers 204).

    The passages go by statement before the document, and again by the foreign key's cascade
    with it: an ingestion running meanwhile updates the document's row before it writes any
    passage (strongroom.vault.ingestion), so on PostgreSQL this DELETE waits for it and
    cascades to what it wrote, and once the row is gone the ingestion writes nothing. The
    document's row is held from the lookup (PostgreSQL): a reprocess that updated it first
    commits its new ingestion job before this DELETE looks for the document's jobs."""
    # Imported by the call: an API process loads the outbox's tables when it first records.
    from strongroom.outbox.enums import EventType
    from strongroom.outbox.record import record_event

    document = await get_document(call, document_id, lock=True)
    view = DocumentView.model_validate(document).model_dump(mode="json")
    session = call.session
    if await delete_document_rows(session, [document.id]) == 0:
        raise Problem("not_found", "No such document.")  # SQLite: deleted since the lookup
    await record_event(
        session,
        tenant_id=document.tenant_id,
        environment=document.environment,
        event_type=EventType.DOCUMENT_DELETED,
        data=view,
    )
    await session.flush()
    services, blob_key = call.services, document.blob_key
    call.after_commit(lambda: remove_blobs(services, [blob_key]))
    return document


async def reprocess_document(call: Call[Services], document_id: uuid.UUID) -> Document:
    """Ingest the caller's document again from its stored file, keeping its id (issue 42):
    with today's parsers and embedding provider, say, or after a failure. The document is
    `processing` under a new ingestion job until that ends, and not searched meanwhile, as
    after an upload; an ingestion of it still to finish is cancelled (its row deleted: the
    runner stops it, strongroom.jobs.runner). Finished jobs are kept, each GET-able. Raises
    Problem 404 for any other document, and for one deleted (or whose project's deletion
    began) since it was looked up: the document is changed by a conditional update, which
    on PostgreSQL waits for a DELETE holding its row, so a DELETE that wins the race leaves
    nothing to reprocess."""
    document = await get_document(call, document_id)
    job = Job(
        tenant_id=document.tenant_id,
        environment=document.environment,
        kind=JobKind.INGESTION.value,
        subject_id=document.id,
    )
    marked = await call.session.exec(  # type: ignore[call-overload]
        sqlalchemy.update(Document)
        .where(col(Document.id) == document.id, col(Document.status) != DOCUMENT_DELETING)
        .values(
            status=DocumentStatus.PROCESSING.value,
            meaning=meaning_to_come(call.services),
            error=None,
            ingestion_job_id=job.id,
            updated_at=utcnow(),
        )
        .execution_options(synchronize_session=False)
    )
    if marked.rowcount == 0:
        raise Problem("not_found", "No such document.")
    await call.session.refresh(document)
    await call.session.exec(  # type: ignore[call-overload]
        sqlalchemy.delete(Job).where(
            col(Job.subject_id) == document.id,
            col(Job.kind).in_(DOCUMENT_JOBS),  # its vectors too: the new ingestion queues them
            col(Job.status).in_([JobStatus.PENDING.value, JobStatus.RUNNING.value]),
        )
    )
    call.session.add(job)
    await queue_at_commit(call, job)
    return document


def meaning_to_come(services: Services) -> str:
    """A document's `meaning` while it is read: `pending` (its vectors follow once it is
    ready, issue 50) where an embeddings provider is configured, else `off`."""
    if services.embeddings is None:
        return DocumentMeaning.OFF.value
    return DocumentMeaning.PENDING.value


async def list_documents(
    call: Call[Services], *, project_id: uuid.UUID | None, limit: int, after: Position | None
) -> tuple[list[Any], bool]:
    """Up to `limit` documents after `after`, newest first, and whether more exist: rows
    with a page's columns, read by statements built once (issue 29)."""
    principal = call.principal
    scope = {
        "tenant_id": principal.tenant_id,
        "environment": principal.environment.value,
        "deleting": DOCUMENT_DELETING,
    }
    if project_id is None:
        return await _pages.page(call.services.reads, scope, limit=limit, after=after)
    if await projects.get_project(call.session, principal, project_id) is None:
        raise Problem("not_found", "No such project.")
    scope["project_id"] = project_id
    return await _project_pages.page(call.services.reads, scope, limit=limit, after=after)


async def get_ingestion_job(call: Call[Services], job_id: uuid.UUID) -> Job:
    statement = select(Job).where(
        Job.id == job_id,
        Job.kind == JobKind.INGESTION.value,
        Job.tenant_id == call.principal.tenant_id,
        Job.environment == call.principal.environment.value,
    )
    job = (await call.session.exec(statement)).first()
    if job is None:
        raise Problem("not_found", "No such ingestion job.")
    return job


async def require_in_project(
    session: AsyncSession,
    document_ids: list[uuid.UUID],
    project_id: uuid.UUID,
    *,
    field: str = "document_ids",
) -> None:
    """Raises Problem 422 naming any of `document_ids` (already known to be the caller's)
    that is not of `project_id`: a run of one project does not read another's documents."""
    statement = select(Document.id).where(
        col(Document.id).in_(document_ids), Document.project_id != project_id
    )
    if elsewhere := [str(i) for i in (await session.exec(statement)).all()]:
        raise Problem(
            "validation_error",
            "Some documents are not of the run's project.",
            errors=[{"field": field, "message": f"not of project {project_id}: {i}"}
                    for i in elsewhere],
        )  # fmt: skip


async def require_documents(
    session: AsyncSession,
    partition: Partition,
    document_ids: list[uuid.UUID],
    *,
    ready: bool = False,
    field: str = "document_ids",
) -> None:
    """Raises Problem 404 naming any of `document_ids` that is not the partition's, and with
    `ready`, 422 naming any whose ingestion has not succeeded (nothing could be read)."""
    statement = select(Document.id, Document.status).where(
        col(Document.id).in_(document_ids),
        Document.tenant_id == partition.tenant_id,
        Document.environment == partition.environment.value,
        Document.status != DOCUMENT_DELETING,
    )
    found = dict((await session.exec(statement)).all())
    if missing := [str(i) for i in document_ids if i not in found]:
        raise Problem("not_found", f"No such documents: {', '.join(missing)}.")
    unready = [str(i) for i in document_ids if found[i] != DocumentStatus.READY.value]
    if ready and unready:
        raise Problem(
            "validation_error",
            "Some documents are not ready to be read.",
            errors=[
                {"field": field, "message": f"not ready (ingestion has not succeeded): {i}"}
                for i in unready
            ],
        )
