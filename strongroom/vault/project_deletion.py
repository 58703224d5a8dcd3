"""Deleting a project (issue 42): `DELETE /api/v2/vault/projects/{id}` answers 202 at once and
a job removes what the project holds, since a project may hold thousands of documents.

In the request's transaction the project and its documents are marked `deleting` (so no list,
lookup, search or answer shows them from that commit on: the documents' trigger bumps the
partition's generation, which every process holding passages reads before a search), their
ingestion jobs are deleted (a running one is cancelled: strongroom.jobs.runner), the
`project.deleted` event is recorded with the project as its GET answered it, and the deletion
job is queued. The job removes the documents a batch per transaction, their files after each
commit (strongroom.vault.erase), then the project's row; run again after a crash, it carries
on where it stopped.

Deletions at once (issue 52, item 7): the project is marked by a conditional update (not
`deleting` yet), so of concurrent DELETEs one marks it and the others answer 404
`not_found`, on PostgreSQL (whose lookup holds the row, `FOR UPDATE`, and the losers' wait
ends on a project `deleting`) as on SQLite (whose reads take no lock: the losers' update
finds the project marked, or its row removed by the job). An upload into the project holds
its row (`FOR SHARE`) from its check to its commit (strongroom.vault.documents): a deletion
waits for it and takes its document too, or the upload, coming second, answers 404.
"""

from __future__ import annotations

import uuid

import sqlalchemy
from sqlmodel import col, select

from strongroom.api.capability import Call
from strongroom.corpus.kinds import DOCUMENT_DELETING
from strongroom.corpus.models import Document
from strongroom.db.types import utcnow
from strongroom.jobs.models import Job, JobKind
from strongroom.jobs.runner import JobContext
from strongroom.problems import Problem
from strongroom.services import Services, queue_at_commit
from strongroom.vault import projects
from strongroom.vault.erase import DOCUMENT_JOBS, erase_documents
from strongroom.vault.models import PROJECT_DELETING, Project
from strongroom.vault.schemas import ProjectDeletion, ProjectDetail


async def delete_project(call: Call[Services], project_id: uuid.UUID) -> ProjectDeletion:
    """Mark the caller's project and its documents `deleting` and queue their removal; raises
    Problem 404 for any other project (or one being deleted already)."""
    # Imported by the call: an API process loads the outbox's tables when it first records.
    from strongroom.outbox.enums import EventType
    from strongroom.outbox.record import record_event

    session = call.session
    project = await projects.get_project(session, call.principal, project_id, lock="update")
    if project is None:
        raise Problem("not_found", "No such project.")
    view = ProjectDetail.model_validate(project).model_dump(mode="json")
    marking = await session.exec(  # type: ignore[call-overload]
        sqlalchemy.update(Project)
        .where(col(Project.id) == project.id, col(Project.status) != PROJECT_DELETING)
        .values(status=PROJECT_DELETING, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if marking.rowcount == 0:  # another deletion marked it (or removed it) since the lookup
        raise Problem("not_found", "No such project.")
    of_project = col(Document.project_id) == project.id
    marked = await session.exec(  # type: ignore[call-overload]
        sqlalchemy.update(Document).where(of_project).values(status=DOCUMENT_DELETING)
    )
    await session.exec(  # type: ignore[call-overload]
        sqlalchemy.delete(Job).where(
            col(Job.kind).in_(DOCUMENT_JOBS),
            col(Job.subject_id).in_(select(Document.id).where(of_project)),
        )
    )
    await record_event(
        session,
        tenant_id=project.tenant_id,
        environment=project.environment,
        event_type=EventType.PROJECT_DELETED,
        data=view | {"document_count": marked.rowcount},
    )
    job = Job(
        tenant_id=project.tenant_id,
        environment=project.environment,
        kind=JobKind.PROJECT_DELETION.value,
        subject_id=project.id,
    )
    session.add(job)
    await queue_at_commit(call, job)
    return ProjectDeletion(project_id=project.id, document_count=marked.rowcount)


async def remove_project(context: JobContext[Services]) -> None:
    """Remove the project's documents, then the project; done already, nothing happens."""
    services, project_id = context.services, context.job.subject_id
    await erase_documents(services, col(Document.project_id) == project_id)
    async with services.sessions() as session:
        # An upload that read the project just before it was marked may have added a
        # document since: the project's foreign key cascades to it, and the sweep takes
        # its file.
        await session.exec(  # type: ignore[call-overload]
            sqlalchemy.delete(Project).where(
                col(Project.id) == project_id, col(Project.status) == PROJECT_DELETING
            )
        )
        await session.commit()
