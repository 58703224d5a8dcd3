"""Project endpoints (spec 4, D41)."""

from __future__ import annotations

from strongroom.api.capability import Call, Capability, Routes
from strongroom.api.pagination import PageQuery
from strongroom.auth.scopes import Scope
from strongroom.problems import Problem
from strongroom.vault import projects
from strongroom.vault.schemas import CreateProject, ProjectDetail, ProjectPage, ProjectSummary

routes = Routes()

VAULT_READ = frozenset({Scope.VAULT_READ.value})
VAULT_WRITE = frozenset({Scope.VAULT_WRITE.value})


@routes.capability(
    Capability(
        name="vault.list_projects",
        method="GET",
        path="/api/v2/vault/projects",
        summary="List projects, newest first",
        tag="vault",
        scopes=VAULT_READ,
        cost=1,
        query=PageQuery,
        response=ProjectPage,
    )
)
async def list_projects(call: Call) -> ProjectPage:
    query: PageQuery = call.query
    scope = "vault.list_projects"
    after = call.runtime.cursors.decode(scope, query.cursor) if query.cursor else None
    rows, has_more = await projects.list_projects(
        call.session, call.principal, limit=query.page_size, after=after
    )
    next_cursor = None
    if has_more:
        next_cursor = call.runtime.cursors.encode(scope, (rows[-1].created_at, rows[-1].id))
    return ProjectPage(
        data=[ProjectSummary.model_validate(row) for row in rows],
        next_cursor=next_cursor,
        has_more=has_more,
    )


@routes.capability(
    Capability(
        name="vault.get_project",
        method="GET",
        path="/api/v2/vault/projects/<uuid:project_id>",
        summary="Get a project",
        tag="vault",
        scopes=VAULT_READ,
        cost=1,
        response=ProjectDetail,
    )
)
async def get_project(call: Call) -> ProjectDetail:
    project = await projects.get_project(call.session, call.principal, call.path["project_id"])
    if project is None:
        raise Problem("not_found", "No such project.")
    return ProjectDetail.model_validate(project)


@routes.capability(
    Capability(
        name="vault.create_project",
        method="POST",
        path="/api/v2/vault/projects",
        summary="Create a project",
        description="Idempotency-Key optional (spec 4.1).",
        tag="vault",
        scopes=VAULT_WRITE,
        cost=2,
        oauth=False,
        status=201,
        body=CreateProject,
        response=ProjectDetail,
    )
)
async def create_project(call: Call) -> ProjectDetail:
    project = await projects.create_project(call.session, call.principal, call.body)
    return ProjectDetail.model_validate(project)
