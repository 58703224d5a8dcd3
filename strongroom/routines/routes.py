"""Routines (issue 43, docs/routines.md): workflows that run themselves on a schedule or when
a document becomes ready, wait for a person's review where asked, and say so.

Costs (D19's pattern): every read 1; creating a routine 2 (as creating a project);
changing, deleting, starting a run, approving or rejecting 1. A run's steps bill what they
call as if called directly (a workflow run 25, a template fill 25, a chat answer 10; live
only, D21). Writes need an API key (D15); reads take OAuth tokens with `routines:read`.
"""

from __future__ import annotations

from datetime import UTC, datetime

from quart import Response

from strongroom.api.capability import Call, Capability, Routes
from strongroom.api.pagination import PageQuery, page_of
from strongroom.auth.scopes import Scope
from strongroom.routines import service
from strongroom.routines.schemas import (
    CreateRoutine,
    Decision,
    RoutinePage,
    RoutineRunPage,
    RoutineRunView,
    RoutineView,
    ScheduleQuery,
    ScheduleView,
    StartRoutineRun,
    UpdateRoutine,
)
from strongroom.routines.views import run_view, view
from strongroom.services import Services

routes = Routes()

READ = frozenset({Scope.ROUTINES_READ.value})
WRITE = frozenset({Scope.ROUTINES_WRITE.value})
ROUTINES = "/api/v2/routines"
ROUTINE = ROUTINES + "/<uuid:routine_id>"
RUN = "/api/v2/routine-runs/<uuid:run_id>"


@routes.capability(
    Capability(
        name="routines.create",
        method="POST",
        path=ROUTINES,
        summary="Create a routine",
        description="A trigger (`schedule` with a five-field `cron` and an IANA `timezone`, "
        "`document_ready`, or `manual`), 1-10 steps (`workflow`, `template_fill`, `chat`) and "
        "an optional `review: {before_step}`. Documents, templates and workflows the steps "
        "name must be the caller's (404 names them). The routine acts as its owner with the "
        "scopes its steps need, granted by this key: a step needing a scope the key lacks is "
        "403 `insufficient_scope` naming it. At most 100 routines per tenant and environment.",
        tag="routines",
        scopes=WRITE,
        cost=2,
        oauth=False,
        status=201,
        body=CreateRoutine,
        response=RoutineView,
        problems=frozenset({"not_found"}),
    )
)
async def create_routine(call: Call[Services]) -> RoutineView:
    return view(await service.create(call, call.body))


@routes.capability(
    Capability(
        name="routines.list",
        method="GET",
        path=ROUTINES,
        summary="List routines, newest first",
        tag="routines",
        scopes=READ,
        cost=1,
        query=PageQuery,
        response=RoutinePage,
    )
)
async def list_routines(call: Call[Services]) -> RoutinePage:
    query: PageQuery = call.query
    scope = "routines.list"
    after = call.services.cursors.after(scope, query.cursor)
    rows, has_more = await service.page(call, limit=query.page_size, after=after)
    return page_of(RoutinePage, rows, has_more, cursors=call.services.cursors, scope=scope)


@routes.capability(
    Capability(
        name="routines.get",
        method="GET",
        path=ROUTINE,
        summary="Get a routine",
        tag="routines",
        scopes=READ,
        cost=1,
        response=RoutineView,
    )
)
async def get_routine(call: Call[Services]) -> RoutineView:
    return view(await service.find(call, call.path["routine_id"]))


@routes.capability(
    Capability(
        name="routines.update",
        method="PATCH",
        path=ROUTINE,
        summary="Change a routine",
        description="Only the fields sent change (`review: null` removes the review); "
        "`next_run_at` is computed again from now. Runs already made keep the steps they "
        "were made with. Only the routine's owner may change it (403 `permission_denied`); "
        "changing its steps, review or trigger, or enabling it, takes its grant from this "
        "key again (403 `insufficient_scope` for a scope the steps need that it lacks).",
        tag="routines",
        scopes=WRITE,
        cost=1,
        oauth=False,
        body=UpdateRoutine,
        response=RoutineView,
        problems=frozenset({"not_found", "permission_denied"}),
    )
)
async def update_routine(call: Call[Services]) -> RoutineView:
    routine = await service.find_own(call, call.path["routine_id"])
    return view(await service.change(call, routine, call.body))


@routes.capability(
    Capability(
        name="routines.delete",
        method="DELETE",
        path=ROUTINE,
        summary="Delete a routine and its runs",
        description="Only the routine's owner may delete it (403 `permission_denied`).",
        tag="routines",
        scopes=WRITE,
        cost=1,
        oauth=False,
        status=204,
        problems=frozenset({"permission_denied"}),
    )
)
async def delete_routine(call: Call[Services]) -> Response:
    await service.remove(call, await service.find_own(call, call.path["routine_id"]))
    return Response(b"", status=204)


@routes.capability(
    Capability(
        name="routines.schedule",
        method="GET",
        path=ROUTINE + "/schedule",
        summary="Preview a scheduled routine's next fire times",
        description="The next `count` (1-500) fire times after `after` (default now), each "
        "in UTC and on the routine's clock, whether or not the routine is enabled. A local "
        "time the zone skips does not fire; one it repeats fires once, at its first "
        "occurrence. 422 for a routine without a schedule.",
        tag="routines",
        scopes=READ,
        cost=1,
        query=ScheduleQuery,
        response=ScheduleView,
    )
)
async def routine_schedule(call: Call[Services]) -> ScheduleView:
    query: ScheduleQuery = call.query
    routine = await service.find(call, call.path["routine_id"])
    after = query.after or datetime.now(UTC)
    return await service.preview(routine, after=after, count=query.count)


@routes.capability(
    Capability(
        name="routines.start_run",
        method="POST",
        path=ROUTINE + "/runs",
        summary="Start a run of a routine now",
        description="Whatever its trigger, enabled or not. `document_id` (optional, a ready "
        "document of the routine's project) stands for the trigger's document. The steps "
        "run in the background; poll GET /api/v2/routine-runs/{id} or subscribe to the "
        "`routine.run.*` webhook events. Only the routine's owner may start it (403 "
        "`permission_denied`). The body may be left out (no Content-Type): `{}`.",
        tag="routines",
        scopes=WRITE,
        cost=1,
        oauth=False,
        status=202,
        body=StartRoutineRun,
        empty_body_is_object=True,
        response=RoutineRunView,
        problems=frozenset({"not_found", "permission_denied"}),
    )
)
async def start_run(call: Call[Services]) -> RoutineRunView:
    routine = await service.find_own(call, call.path["routine_id"])
    return run_view(await service.start_manual(call, routine, call.body))


@routes.capability(
    Capability(
        name="routines.list_runs",
        method="GET",
        path=ROUTINE + "/runs",
        summary="List a routine's runs, newest first",
        tag="routines",
        scopes=READ,
        cost=1,
        query=PageQuery,
        response=RoutineRunPage,
    )
)
async def list_runs(call: Call[Services]) -> RoutineRunPage:
    query: PageQuery = call.query
    routine = await service.find(call, call.path["routine_id"])
    scope = f"routines.list_runs:{routine.id}"
    after = call.services.cursors.after(scope, query.cursor)
    rows, has_more = await service.runs_page(call, routine, limit=query.page_size, after=after)
    return RoutineRunPage(
        data=[run_view(run) for run in rows],
        next_cursor=(
            call.services.cursors.encode(scope, (rows[-1].created_at, rows[-1].id))
            if has_more
            else None
        ),
        has_more=has_more,
    )


@routes.capability(
    Capability(
        name="routines.get_run",
        method="GET",
        path=RUN,
        summary="Get a routine run",
        description="Its status (queued, running, waiting_for_review, succeeded, failed, "
        "rejected, skipped), each step's status and its result's id, and the review.",
        tag="routines",
        scopes=READ,
        cost=1,
        response=RoutineRunView,
    )
)
async def get_run(call: Call[Services]) -> RoutineRunView:
    return run_view(await service.find_run(call, call.path["run_id"]))


@routes.capability(
    Capability(
        name="routines.approve_run",
        method="POST",
        path=RUN + "/approve",
        summary="Approve a run waiting for review",
        description="Recorded with who approved and when; the run goes on from the step it "
        "waited before. 422 unless the run is `waiting_for_review`: of concurrent "
        "decisions exactly one is taken. The body may be left out (no Content-Type).",
        tag="routines",
        scopes=WRITE,
        cost=1,
        oauth=False,
        body=Decision,
        empty_body_is_object=True,
        response=RoutineRunView,
    )
)
async def approve_run(call: Call[Services]) -> RoutineRunView:
    run = await service.find_run(call, call.path["run_id"])
    return run_view(await service.approve(call, run, call.body.comment))


@routes.capability(
    Capability(
        name="routines.reject_run",
        method="POST",
        path=RUN + "/reject",
        summary="Reject a run waiting for review",
        description="Recorded with who rejected, when and the comment; the run ends "
        "`rejected`. 422 unless the run is `waiting_for_review`: of concurrent decisions "
        "exactly one is taken. The body may be left out (no Content-Type).",
        tag="routines",
        scopes=WRITE,
        cost=1,
        oauth=False,
        body=Decision,
        empty_body_is_object=True,
        response=RoutineRunView,
    )
)
async def reject_run(call: Call[Services]) -> RoutineRunView:
    run = await service.find_run(call, call.path["run_id"])
    return run_view(await service.reject(call, run, call.body.comment))
