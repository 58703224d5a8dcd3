"""Projects inside one tenant and environment. Every query is scoped by the caller's
principal, never by a parameter: another tenant's or environment's project does not exist."""

from __future__ import annotations

import uuid
from typing import Any, Literal

import sqlalchemy
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.exc import StaleDataError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.api.pagination import NewestFirst, Position
from strongroom.auth.principal import Principal
from strongroom.db.reads import Reads
from strongroom.db.together import WritesAtCommit
from strongroom.db.types import utcnow
from strongroom.problems import Problem
from strongroom.vault.models import PROJECT_DELETING, Project, ProjectStatus, ProjectType
from strongroom.vault.schemas import CreateProject, UpdateProject

_projects = Project.__table__
_insert = sqlalchemy.insert(_projects)
_pages = NewestFirst(
    sqlalchemy.select(_projects).where(
        _projects.c.tenant_id == sqlalchemy.bindparam("tenant_id"),
        _projects.c.environment == sqlalchemy.bindparam("environment"),
        _projects.c.status != sqlalchemy.bindparam("deleting"),
    ),
    _projects.c,
)


def _scoped(principal: Principal):
    """The caller's projects, but for those being deleted."""
    return select(Project).where(
        Project.tenant_id == principal.tenant_id,
        Project.environment == principal.environment.value,
        Project.status != PROJECT_DELETING,
    )


def create_project(
    writes: WritesAtCommit, principal: Principal, request: CreateProject
) -> dict[str, Any]:
    """The new project's columns, its INSERT left to be sent with the call's commit: a
    statement built once and the row's values, not an ORM object and a flush (the ORM's
    unit of work cost more than the INSERT's round trip), and no round trip of its own
    (issue 29: strongroom/db/together.py)."""
    now = utcnow()
    project = {
        "id": uuid.uuid4(),
        "tenant_id": principal.tenant_id,
        "environment": principal.environment.value,
        "owner_id": principal.user_id,
        "name": request.name,
        "description": request.description,
        "project_type": request.project_type.value,
        "status": ProjectStatus.ACTIVE.value,
        "location": request.location,
        "created_at": now,
        "updated_at": now,
    }
    writes.write_at_commit(_insert, project)
    return project


async def update_project(
    session: AsyncSession, principal: Principal, project_id: uuid.UUID, request: UpdateProject
) -> Project:
    """The caller's project with the fields sent changed; raises Problem 404 for any other
    (also one deleted meanwhile: on SQLite, whose reads take no lock, its row may be gone
    by the time the change is written)."""
    project = await get_project(session, principal, project_id, lock="update")
    if project is None:
        raise Problem("not_found", "No such project.")
    for field in request.model_fields_set - {"status"}:
        value = getattr(request, field)
        setattr(project, field, value.value if isinstance(value, ProjectType) else value)
    project.updated_at = utcnow()
    session.add(project)
    try:
        await session.flush()
    except StaleDataError:
        raise Problem("not_found", "No such project.") from None
    if request.status is not None:
        # Only over a status of its own (issue 52): a deletion that marked the project
        # meanwhile (on SQLite the lookup above takes no lock) keeps its mark.
        changed = await session.exec(  # type: ignore[call-overload]
            sqlalchemy.update(Project)
            .where(col(Project.id) == project.id, col(Project.status) != PROJECT_DELETING)
            .values(status=request.status.value)
        )
        if changed.rowcount != 1:
            raise Problem("not_found", "No such project.")
        set_committed_value(project, "status", request.status.value)
    return project


async def get_project(
    session: AsyncSession,
    principal: Principal,
    project_id: uuid.UUID,
    *,
    lock: Literal["share", "update"] | None = None,
) -> Project | None:
    """The caller's project, unless it is being deleted. With `lock`, its row is held until
    the transaction ends (PostgreSQL; SQLite has one writer at a time and ignores it):
    `share` (an upload into it: a deletion waits for the upload's commit, uploads do not
    wait for each other), `update` (a change or its deletion). A lookup that waited for a
    deletion's commit finds the project `deleting`: None."""
    statement = _scoped(principal).where(Project.id == project_id)
    if lock is not None:
        statement = statement.with_for_update(read=lock == "share")
        # Read afresh: an object of this session's identity map keeps its loaded values.
        statement = statement.execution_options(populate_existing=True)
    return (await session.exec(statement)).first()


async def list_projects(
    reads: Reads, principal: Principal, *, limit: int, after: Position | None
) -> tuple[list[Any], bool]:
    """Return up to `limit` projects after `after` (newest first) and whether more exist, as
    plain rows with the projects' columns: a page is only read and sent, so it skips the
    ORM's objects and identity map, and its statements are built once (issue 29)."""
    scope = {
        "tenant_id": principal.tenant_id,
        "environment": principal.environment.value,
        "deleting": PROJECT_DELETING,
    }
    return await _pages.page(reads, scope, limit=limit, after=after)
