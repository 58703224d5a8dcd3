"""Projects inside one tenant and environment. Every query is scoped by the caller's
principal, never by a parameter: another tenant's or environment's project does not exist."""

from __future__ import annotations

import uuid

from sqlalchemy import and_, or_
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.api.pagination import Position
from strongroom.auth.principal import Principal
from strongroom.vault.models import Project
from strongroom.vault.schemas import CreateProject


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
) -> tuple[list[Project], bool]:
    """Return up to `limit` projects after `after` (newest first) and whether more exist."""
    statement = _scoped(principal)
    if after is not None:
        created_at, project_id = after
        statement = statement.where(
            or_(
                col(Project.created_at) < created_at,
                and_(col(Project.created_at) == created_at, col(Project.id) < project_id),
            )
        )
    statement = statement.order_by(col(Project.created_at).desc(), col(Project.id).desc())
    rows = list((await session.exec(statement.limit(limit + 1))).all())
    return rows[:limit], len(rows) > limit
