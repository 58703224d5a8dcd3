"""Routines (issue 43): the work behind the routes. Every query keeps to the caller's tenant
and environment: another's routine or run is 404, never 403 (D4).

A routine's references (its project, the documents and templates its steps name, its
workflows) are checked when it is saved, and again by the existing capabilities when a run
executes its steps (strongroom/routines/runner.py).
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from sqlalchemy import delete, func, update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.api.capability import Call
from strongroom.api.pagination import Position, newest_first
from strongroom.api.request_path import field_message
from strongroom.auth.principal import Principal
from strongroom.db.types import utcnow
from strongroom.jobs.models import Job, JobKind, JobStatus
from strongroom.problems import Problem
from strongroom.routines import schedule
from strongroom.routines.grant import granted
from strongroom.routines.models import Routine, RoutineRun, RunStatus, StepStatus
from strongroom.routines.schemas import (
    CreateRoutine,
    FireTime,
    Review,
    ScheduleTrigger,
    ScheduleView,
    StartRoutineRun,
    Step,
    TemplateFillStep,
    UpdateRoutine,
    WorkflowStep,
)
from strongroom.services import Services, queue_at_commit
from strongroom.tenants.partition import Partition
from strongroom.vault import documents, projects
from strongroom.workflows.catalogue import WORKFLOWS, CompareInputs, DocumentSetInputs

MAX_ROUTINES = 100  # per tenant and environment
_STEPS: TypeAdapter[list[Step]] = TypeAdapter(list[Step])


def _invalid(field: str, message: str, detail: str = "The routine is invalid.") -> Problem:
    return Problem("validation_error", detail, errors=[{"field": field, "message": message}])


# --- saving a routine -------------------------------------------------------------------


def checked_trigger(trigger: BaseModel) -> dict[str, Any]:
    """The trigger as stored; a schedule's cron normalised. Raises Problem 422 naming
    `trigger.cron` or `trigger.timezone`."""
    data = trigger.model_dump(mode="json", exclude_none=True)
    if isinstance(trigger, ScheduleTrigger):
        try:
            schedule.zone_of(trigger.timezone)
            data["cron"] = schedule.check_cron(trigger.cron)
        except schedule.BadSchedule as error:
            raise _invalid(f"trigger.{error.field}", error.message) from error
    return data


async def check_steps(
    session: AsyncSession,
    partition: Partition,
    steps: list[BaseModel],
    *,
    review: BaseModel | None,
) -> list[dict[str, Any]]:
    """The steps as stored. Raises Problem 404 naming a workflow, document or template that
    is not the caller's (or does not exist), 422 for a workflow's inputs or a review after
    the last step."""
    for index, step in enumerate(steps):
        field = f"steps.{index}"
        _check_handoff(step, index)
        if isinstance(step, WorkflowStep):
            workflow = WORKFLOWS.get(step.workflow_id)
            if workflow is None or not workflow.enabled:
                raise Problem("not_found", f"No such workflow: {step.workflow_id}.")
            try:
                inputs = workflow.inputs.model_validate(step.inputs)
            except ValidationError as error:
                raise Problem(
                    "validation_error",
                    "A step's inputs do not match its workflow's input_schema.",
                    errors=[
                        {
                            "field": ".".join([field, "inputs", *map(str, item["loc"])]),
                            "message": field_message(item, "inputs", workflow.inputs),
                        }
                        for item in error.errors(include_url=False)
                    ],
                ) from error
            for ids, name in _named_documents(inputs):
                await documents.require_documents(
                    session, partition, ids, field=f"{field}.inputs.{name}"
                )
        elif isinstance(step, TemplateFillStep):
            await documents.require_documents(
                session, partition, [step.template_id], field=f"{field}.template_id"
            )
            if step.document_ids:
                await documents.require_documents(
                    session, partition, step.document_ids, field=f"{field}.document_ids"
                )
    if review is not None and review.before_step > len(steps):  # type: ignore[attr-defined]
        raise _invalid("review.before_step", f"the routine has {len(steps)} steps")
    return [step.model_dump(mode="json", exclude_none=True) for step in steps]


def _check_handoff(step: BaseModel, index: int) -> None:
    """A step's `documents_from_step` names an earlier step, and the step can read a set of
    documents without naming them (strongroom/routines/handoff.py). Raises Problem 422."""
    source = step.documents_from_step  # type: ignore[attr-defined]
    if source is None:
        return
    field = f"steps.{index}.documents_from_step"
    if source > index:
        earlier = "the first step has none" if index == 0 else f"1 to {index}"
        raise _invalid(field, f"must name an earlier step ({earlier})")
    named = step.document_ids if isinstance(step, TemplateFillStep) else None
    if isinstance(step, WorkflowStep):
        workflow = WORKFLOWS.get(step.workflow_id)
        if workflow is not None and workflow.inputs is not DocumentSetInputs:
            raise _invalid(field, f"{step.workflow_id} reads the documents its inputs name")
        named = step.inputs.get("document_ids")
    if named:
        raise _invalid(field, "a step reads named documents or an earlier step's, not both")


def _named_documents(inputs: BaseModel) -> list[tuple[list[uuid.UUID], str]]:
    if isinstance(inputs, DocumentSetInputs) and inputs.document_ids:
        return [(inputs.document_ids, "document_ids")]
    if isinstance(inputs, CompareInputs):
        return [
            ([inputs.left_document_id], "left_document_id"),
            ([inputs.right_document_id], "right_document_id"),
        ]
    return []


def next_run(routine: Routine, after: datetime) -> datetime | None:
    """When an enabled scheduled routine fires next after `after`; None otherwise."""
    trigger = routine.trigger
    if not routine.enabled or trigger.get("type") != "schedule":
        return None
    return schedule.next_fire(
        trigger["cron"], schedule.saved_zone(trigger["timezone"]), after=after
    )


async def create(call: Call[Services], body: CreateRoutine) -> Routine:
    principal = call.principal
    count = select(func.count()).where(*_scoped(Routine, principal))
    if (await call.session.exec(count)).one() >= MAX_ROUTINES:
        raise _invalid(
            "name",
            f"the {MAX_ROUTINES} routines allowed exist",
            f"At most {MAX_ROUTINES} routines per tenant and environment; delete one first.",
        )
    grant = granted(principal, body.steps)
    trigger = checked_trigger(body.trigger)
    if await projects.get_project(call.session, principal, body.project_id) is None:
        raise Problem("not_found", f"No such project: {body.project_id}.")
    steps = await check_steps(call.session, principal, body.steps, review=body.review)
    routine = Routine(
        tenant_id=principal.tenant_id,
        environment=principal.environment.value,
        owner_id=principal.user_id,
        project_id=body.project_id,
        name=body.name,
        enabled=body.enabled,
        trigger=trigger,
        steps=steps,
        review=None if body.review is None else body.review.model_dump(),
        **grant,
    )
    routine.next_run_at = next_run(routine, utcnow())
    call.session.add(routine)
    await call.session.flush()
    return routine


async def change(call: Call[Services], routine: Routine, body: UpdateRoutine) -> Routine:
    """Only the fields sent change; the schedule is computed again from now. A change of what
    runs or when (steps, review, trigger, or enabling it) takes the grant from the caller
    again (grant.py): 403 `insufficient_scope` if the caller lacks a scope the steps need.
    Renaming or disabling keeps the grant."""
    sent = body.model_fields_set
    grant = None
    if {"steps", "review", "trigger"} & sent or body.enabled:
        grant = granted(call.principal, body.steps or routine.steps)
    if body.name is not None:
        routine.name = body.name
    if body.enabled is not None:
        routine.enabled = body.enabled
    if body.trigger is not None:
        routine.trigger = checked_trigger(body.trigger)
    if "review" in sent:
        routine.review = None if body.review is None else body.review.model_dump()
    if body.steps is not None or "review" in sent:
        steps = body.steps if body.steps is not None else _stored_steps(routine)
        review = body.review if "review" in sent else _stored_review(routine)
        routine.steps = await check_steps(call.session, call.principal, steps, review=review)
    if grant is not None:
        for name, value in grant.items():
            setattr(routine, name, value)
    routine.next_run_at = next_run(routine, utcnow())
    routine.updated_at = utcnow()
    call.session.add(routine)
    await call.session.flush()
    return routine


def _stored_steps(routine: Routine) -> list[BaseModel]:
    return _STEPS.validate_python(routine.steps)


def _stored_review(routine: Routine) -> BaseModel | None:
    return None if routine.review is None else Review.model_validate(routine.review)


async def remove(call: Call[Services], routine: Routine) -> None:
    """The routine goes with its runs and their unfinished jobs: a run in progress is
    cancelled (the runner stops a job whose row is gone, with the bounded work of the step
    it runs) and starts no further step."""
    runs = select(RoutineRun.job_id).where(col(RoutineRun.routine_id) == routine.id)
    unfinished = [JobStatus.PENDING.value, JobStatus.RUNNING.value]
    await call.session.exec(  # type: ignore[call-overload]
        delete(Job).where(
            col(Job.id).in_(runs.scalar_subquery()),
            col(Job.kind) == JobKind.ROUTINE_RUN.value,
            col(Job.status).in_(unfinished),
        )
    )
    await call.session.exec(  # type: ignore[call-overload]
        delete(RoutineRun).where(col(RoutineRun.routine_id) == routine.id)
    )
    await call.session.delete(routine)
    await call.session.flush()


def _scoped(model: Any, partition: Partition) -> tuple[Any, Any]:
    return (
        col(model.tenant_id) == partition.tenant_id,
        col(model.environment) == partition.environment.value,
    )


async def find(call: Call[Services], routine_id: uuid.UUID) -> Routine:
    return await _find(call, Routine, routine_id, "No such routine.")


async def find_own(call: Call[Services], routine_id: uuid.UUID) -> Routine:
    """The caller's routine, to change, delete or start: only its owner (any of the owner's
    keys) may, since it acts as its owner. Another user of the tenant, who may read it, gets
    403 `permission_denied` (D4: the credential is valid but may not do this); another
    tenant's or environment's routine is 404, never 403 (D4)."""
    routine = await find(call, routine_id)
    if routine.owner_id != call.principal.user_id:
        raise Problem(
            "permission_denied",
            "Only the routine's owner may change, delete or start it: it acts as its owner.",
        )
    return routine


async def _find(call: Call[Services], model: Any, row_id: uuid.UUID, missing: str) -> Any:
    """The caller's row of `model` (routine or run) with this id; Problem 404 `missing`."""
    statement = select(model).where(col(model.id) == row_id, *_scoped(model, call.principal))
    found = (await call.session.exec(statement)).first()
    if found is None:
        raise Problem("not_found", missing)
    return found


async def page(
    call: Call[Services], *, limit: int, after: Position | None
) -> tuple[list[Routine], bool]:
    statement = select(Routine).where(*_scoped(Routine, call.principal))
    return await newest_first(call.session, statement, Routine, limit=limit, after=after)


async def preview(routine: Routine, *, after: datetime, count: int) -> ScheduleView:
    """The next `count` fire times after `after`, enabled or not. Raises Problem 422 for a
    routine without a schedule."""
    trigger = routine.trigger
    if trigger.get("type") != "schedule":
        raise _invalid("trigger", "the routine has no schedule", "The routine is not scheduled.")
    zone = schedule.saved_zone(trigger["timezone"])
    # Up to 500 croniter steps: tens of milliseconds, off the event loop.
    times = await asyncio.to_thread(
        schedule.fire_times, trigger["cron"], zone, after=after, count=count
    )
    return ScheduleView(
        routine_id=routine.id,
        cron=trigger["cron"],
        timezone=trigger["timezone"],
        enabled=routine.enabled,
        data=[
            FireTime(at=instant, local=schedule.local_time(instant, zone).isoformat())
            for instant in times
        ],
    )


# --- runs ---------------------------------------------------------------------------------


def new_run(
    routine: Routine,
    *,
    trigger_type: str,
    scheduled_for: datetime | None = None,
    document_id: uuid.UUID | None = None,
    status: RunStatus = RunStatus.QUEUED,
) -> tuple[RoutineRun, Job | None]:
    """A run of the routine's steps as they are now, and the job that will run them (none
    for a run recorded `skipped`). Not added to any session."""
    run_id = uuid.uuid4()
    fire_key = None
    if scheduled_for is not None:
        fire_key = f"schedule:{scheduled_for.astimezone(UTC).isoformat()}"
    elif document_id is not None and trigger_type == "document_ready":
        fire_key = f"document:{document_id}"
    job = None
    if status is RunStatus.QUEUED:
        job = Job(
            tenant_id=routine.tenant_id,
            environment=routine.environment,
            kind=JobKind.ROUTINE_RUN.value,
            subject_id=run_id,
        )
    steps = [
        step | {"status": StepStatus.PENDING.value, "result_type": None, "result_id": None}
        for step in routine.steps
    ]
    review = None
    if routine.review is not None and routine.review["before_step"] <= len(steps):
        review = {"before_step": routine.review["before_step"], "decision": None}
    now = utcnow()
    run = RoutineRun(
        id=run_id,
        routine_id=routine.id,
        tenant_id=routine.tenant_id,
        environment=routine.environment,
        job_id=None if job is None else job.id,
        status=status.value,
        trigger_type=trigger_type,
        fire_key=fire_key,
        scheduled_for=scheduled_for,
        document_id=document_id,
        steps=steps,
        review=review,
        created_at=now,
        updated_at=now,
        finished_at=now if status is RunStatus.SKIPPED else None,
    )
    return run, job


async def start_manual(call: Call[Services], routine: Routine, body: StartRoutineRun) -> RoutineRun:
    """A manual run (whatever the trigger, enabled or not); its job is queued on commit.
    Raises Problem 404 for a document that is not the caller's."""
    if body.document_id is not None:
        await documents.require_documents(
            call.session, call.principal, [body.document_id], ready=True, field="document_id"
        )
        await documents.require_in_project(
            call.session, [body.document_id], routine.project_id, field="document_id"
        )
    run, job = new_run(routine, trigger_type="manual", document_id=body.document_id)
    assert job is not None
    call.session.add(job)
    call.session.add(run)
    await queue_at_commit(call, job)
    return run


async def find_run(call: Call[Services], run_id: uuid.UUID) -> RoutineRun:
    return await _find(call, RoutineRun, run_id, "No such routine run.")


async def runs_page(
    call: Call[Services], routine: Routine, *, limit: int, after: Position | None
) -> tuple[list[RoutineRun], bool]:
    statement = select(RoutineRun).where(col(RoutineRun.routine_id) == routine.id)
    return await newest_first(call.session, statement, RoutineRun, limit=limit, after=after)


def _not_waiting(status: str) -> Problem:
    return _invalid(
        "status",
        f"the run is {status}, not waiting_for_review",
        "Only a run waiting for review can be approved or rejected.",
    )


def _waiting(run: RoutineRun) -> dict[str, Any]:
    if run.status != RunStatus.WAITING_FOR_REVIEW.value or run.review is None:
        raise _not_waiting(run.status)
    return dict(run.review)


def _decided(principal: Principal, review: dict[str, Any], decision: str, comment: str | None):
    return review | {
        "decision": decision,
        "comment": comment,
        "decided_by": str(principal.user_id),
        "decided_at": utcnow().isoformat(),
    }


async def _decide(
    call: Call[Services], run: RoutineRun, decision: str, comment: str | None, **values: Any
) -> None:
    """Take the review's decision once: a compare-and-set of the run's status, so of
    concurrent approvals and rejections exactly one changes the run and the others get 422
    naming `status`. On PostgreSQL the UPDATE waits for a concurrent decision's row lock and
    then finds the run no longer waiting; on SQLite the one writer does the same. Raises
    Problem 422 unless the run waits for review."""
    review = _decided(call.principal, _waiting(run), decision, comment)
    statement = (
        update(RoutineRun)
        .where(
            col(RoutineRun.id) == run.id,
            col(RoutineRun.status) == RunStatus.WAITING_FOR_REVIEW.value,
        )
        .values(review=review, updated_at=utcnow(), **values)
        .execution_options(synchronize_session=False)
    )
    taken = await call.session.exec(statement)  # type: ignore[call-overload]
    if taken.rowcount != 1:
        status = select(RoutineRun.status).where(col(RoutineRun.id) == run.id)
        now = (await call.session.exec(status)).first()
        raise _not_waiting(now or "gone")
    await call.session.refresh(run)


async def approve(call: Call[Services], run: RoutineRun, comment: str | None) -> RoutineRun:
    """Record the approval (once: `_decide`) and queue the job that runs the remaining steps.
    Raises Problem 422 unless the run waits for review."""
    job = Job(
        tenant_id=run.tenant_id,
        environment=run.environment,
        kind=JobKind.ROUTINE_RUN.value,
        subject_id=run.id,
    )
    await _decide(call, run, "approved", comment, status=RunStatus.QUEUED.value, job_id=job.id)
    call.session.add(job)
    await queue_at_commit(call, job)
    return run


async def reject(call: Call[Services], run: RoutineRun, comment: str | None) -> RoutineRun:
    """Record the rejection (once: `_decide`): the run ends `rejected`, its event recorded in
    this transaction. Raises Problem 422 unless the run waits for review."""
    # The outbox's tables at the first rejection, not at every start (issue 29).
    from strongroom.routines.events import record_run_event

    now = utcnow()
    await _decide(call, run, "rejected", comment, status=RunStatus.REJECTED.value, finished_at=now)
    await record_run_event(call.session, run)
    return run
