"""Projects inside one tenant and environment. Every query is scoped by the caller's
principal, never by a parameter: another tenant's or environment's project does not exist."""

from __future__ import annotations

import uuid

import sqlalchemy
from sqlalchemy import Row
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.api.pagination import Position, newest_first
from strongroom.auth.principal import Principal
from strongroom.vault.models import Project
from strongroom.vault.schemas import CreateProject

_projects = Project.__table__


def _scoped(principal: Principal):
    return select(Project).where(
        Project.tenant_id == principal.tenant_id,
        Project.environment == principal.environment.value,
    )


async def create_project(
    session: AsyncSession, principal: Principal, request: CreateProject
) -> Project:
    project = Project(
        tenant_id=principal.tenant_id,
        environment=principal.environment.value,
        owner_id=principal.user_id,
        name=request.name,
        description=request.description,
        project_type=request.project_type.value,
        location=request.location,
    )
    session.add(project)
    await session.flush()
    return project


async def get_project(
    session: AsyncSession, principal: Principal, project_id: uuid.UUID
) -> Project | None:
    statement = _scoped(principal).where(Project.id == project_id)
    return (await session.exec(statement)).first()


async def list_projects(
    session: AsyncSession, principal: Principal, *, limit: int, after: Position | None
) -> tuple[list[Row], bool]:
    """Return up to `limit` projects after `after` (newest first) and whether more exist, as
    plain rows with the projects' columns: a page is only read and sent, so it skips the
    ORM's objects and identity map (issue 29)."""
    rows = sqlalchemy.select(_projects).where(  # rows, not sqlmodel's scalars
        _projects.c.tenant_id == principal.tenant_id,
        _projects.c.environment == principal.environment.value,
    )
    return await newest_first(session, rows, _projects.c, limit=limit, after=after)
