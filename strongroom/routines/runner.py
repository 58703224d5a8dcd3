"""Running a routine's steps (issue 43) as a job of kind `routine_run` (D46).

Each step is a call of the capability a client would make (workflows.start_run,
templates.fill_stored, chat.ask), through its own handler as the routine's owner in the
run's tenant and environment, with the scopes the routine was granted and its key still
holds, once the owner checks pass as the step starts (strongroom/routines/grant.py; a
failed check fails the step, nothing started nor billed, and may pause the routine) and
the capability's own scope check (`authorise`, the request path's): the handler checks the
step's references again (a document of another tenant is 404 at run time as at save time),
and the call is billed its cost as if called directly (D19, D21: live only), in the
transaction that starts the step and records its result id, so a retried run neither starts
a step twice nor bills it twice. A
step that starts a job (a workflow run, a template fill) runs that job here, in this job's
slot (`jobs.runner.run_now`), and the routine goes on once it has ended.

A review (`before_step`) stops the run `waiting_for_review`; its job ends there, and an
approval queues a new job that goes on from that step. A run whose worker died is run again
from its first unfinished step. The run's end (its state, its event in the outbox, its
count) is written with its job's end (`settle`), in one transaction.

Every write of the run by its job is fenced by the job's attempt (`hold_claim`, in the
write's transaction): an attempt whose claim was taken (it was silent past its lease) and
that goes on with a step it read as not started neither starts it (its call's answer,
workflow run or fill rolled back, nothing billed) nor changes the run; the runner that
took the job runs the step once (issue 52, item 5).
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import ValidationError
from sqlalchemy import update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.api.billing import settled, write_debit
from strongroom.api.capability import Call
from strongroom.api.request_path import authorise, field_message
from strongroom.auth.principal import Principal
from strongroom.billing.credits import InsufficientCredits
from strongroom.db.types import utcnow
from strongroom.jobs.bounded import WorkInterrupted
from strongroom.jobs.models import Job, JobStatus
from strongroom.jobs.runner import (
    JobContext,
    JobFailed,
    hold_claim,
    run_now,
)
from strongroom.jobs.turns import turn_of
from strongroom.problems import Problem
from strongroom.routines.events import record_run_event
from strongroom.routines.grant import CALLS, acting, pause
from strongroom.routines.handoff import cited_documents
from strongroom.routines.models import Routine, RoutineRun, RunStatus, StepStatus
from strongroom.services import Services
from strongroom.tenants.partition import DataPartition, Environment
from strongroom.workflows.catalogue import WORKFLOWS, DocumentSetInputs
from strongroom.workflows.models import WorkflowRun, parse_run_id


async def run_routine(context: JobContext[Services]) -> None:
    services = context.services
    async with services.sessions() as session:
        run = await session.get(RoutineRun, context.job.subject_id)
        routine = None if run is None else await session.get(Routine, run.routine_id)
    if run is None or routine is None:
        raise JobFailed("not_found", "The routine run, or its routine, no longer exists.")
    if run.job_id != context.job.id or RunStatus(run.status).finished:
        return  # a job of an earlier turn, or a run that has ended
    now = utcnow()
    holder = context.job
    started_at = run.started_at or now
    await _save(services, holder, run.id, status=RunStatus.RUNNING.value, started_at=started_at)
    steps = [dict(step) for step in run.steps]
    for index, step in enumerate(steps):
        if step["status"] == StepStatus.SUCCEEDED.value:
            continue
        review = run.review
        if review and review["before_step"] == index + 1 and review.get("decision") != "approved":
            await _save(services, holder, run.id, status=RunStatus.WAITING_FOR_REVIEW.value)
            return
        await _run_step(services, holder, run, routine, steps, index)
        await context.progress((index + 1) / len(steps))


async def _run_step(
    services: Services,
    holder: Job,
    run: RoutineRun,
    routine: Routine,
    steps: list[dict[str, Any]],
    index: int,
) -> None:
    """Start the step (unless a previous attempt did) as the routine's owner, if its owner
    checks pass now; wait for its job, record its end. Raises JobFailed when the step fails,
    ClaimLost when `holder` (the routine's job's attempt) no longer holds its job."""
    step = steps[index]
    if step.get("result_id") is None:
        principal = await _owner(services, holder, run, routine, steps, index)
        step |= {"status": StepStatus.RUNNING.value, "started_at": utcnow().isoformat()}
        await _start(services, holder, run, routine, principal, steps, index)
    job_id = step.get("job_id")
    if job_id is not None:
        try:
            await run_now(services, uuid.UUID(job_id))
        except WorkInterrupted:
            await _hand_over(services, run, uuid.UUID(job_id))
            raise
        async with services.sessions() as session:
            job = await session.get(Job, uuid.UUID(job_id))
        if job is None or job.status != JobStatus.SUCCEEDED.value:
            error = (job.error if job is not None else None) or {
                "code": "not_found",
                "detail": "The step's job is gone.",
            }
            await _fail(services, holder, run, steps, index, error)
    step |= {"status": StepStatus.SUCCEEDED.value, "finished_at": utcnow().isoformat()}
    await _save(services, holder, run.id, steps=steps)


async def _owner(
    services: Services,
    holder: Job,
    run: RoutineRun,
    routine: Routine,
    steps: list[dict[str, Any]],
    index: int,
) -> Principal:
    """Who the step acts as, checked as it starts (strongroom/routines/grant.py): the owner,
    with the scopes granted and still held, allowed the step's capability. A failed check
    fails the step (and the run) with its problem, nothing started nor billed, and pauses
    the routine when it lasts (a revoked or expired key, a deactivated owner)."""
    capability = CALLS[steps[index]["type"]][0]
    async with services.sessions() as session:
        current = await session.get(Routine, routine.id, populate_existing=True)
        try:
            if current is None:
                raise Problem("not_found", "The routine no longer exists.")
            principal = await acting(session, current)
            authorise(capability, principal)
        except Problem as problem:
            if current is not None and await pause(session, current.id, problem):
                await session.commit()
            failure = _problem(problem.code, problem.detail)
            missing = problem.extensions.get("missing_scopes")
            if missing:
                failure["missing_scopes"] = missing
            await _fail(services, holder, run, steps, index, failure)
    return principal


async def _hand_over(services: Services, run: RoutineRun, step_job_id: uuid.UUID) -> None:
    """The routine's job was stopped in the middle of a step's job, which is left `pending`:
    cancelled (the routine, or the run, was deleted), so the queue runs the step's job, in
    its tenant's turn. The workflow run or fill it makes is the tenant's, billed, and
    visible at its own endpoint: it ends as any other would. (A routine's job never borrows
    a slot, so it is never stopped to give one back; if its row is still there, its next
    turn runs the step's job.)"""
    async with services.sessions() as session:
        routine_job = await session.get(Job, run.job_id) if run.job_id is not None else None
    if routine_job is None:
        await _queue_in_turn(services, step_job_id)


async def _queue_in_turn(services: Services, job_id: uuid.UUID) -> None:
    async with services.sessions() as session:
        priority = await turn_of(session, job_id)
    await services.jobs.enqueue(job_id, priority=priority)


async def _start(
    services: Services,
    holder: Job,
    run: RoutineRun,
    routine: Routine,
    principal: Principal,
    steps: list[dict[str, Any]],
    index: int,
) -> None:
    """Call the step's capability as its client would, billed as such, and record the
    result's id in the same transaction, while `holder` still holds its job. Raises
    JobFailed with the problem it answered, ClaimLost (nothing committed) when `holder` no
    longer holds its job."""
    step = steps[index]
    before = dict(step)  # what stays recorded if nothing commits
    capability, handler = CALLS[step["type"]]
    call: Call[Services] = Call(principal=principal, services=services)
    try:
        try:
            _prepare(call, step, routine, await _documents_for(services, steps, index, run))
            result = await handler(call)
        except ValidationError as error:
            raise Problem("validation_error", _said(error, capability.body)) from error
        step |= _result_of(step["type"], result)
        if step["type"] == "workflow":
            found = await call.session.get(WorkflowRun, parse_run_id(step["result_id"]))
            assert found is not None, "the handler has just added it"
            step["job_id"] = str(found.job_id)
        if step["type"] == "chat":
            step |= {"status": StepStatus.SUCCEEDED.value, "finished_at": utcnow().isoformat()}
        statement = update(RoutineRun).where(col(RoutineRun.id) == run.id)
        recorded = await call.session.exec(statement.values(steps=steps, updated_at=utcnow()))  # type: ignore[call-overload]
        if recorded.rowcount == 0:  # deleted with its routine: no step starts, none is billed
            raise JobFailed("not_found", "The routine run no longer exists.")
        # Only while this attempt holds the routine's job (the run's row before the job's, as
        # the job's end takes them): one that lost it to another runner starts nothing.
        await hold_claim(call.session, holder)
        debit_id = "rr_" + uuid.uuid5(run.id, str(index)).hex  # once per run and step
        debit = write_debit(principal, capability, debit_id)
        if debit is None:
            await call.commit()
        else:
            (balance,) = await call.commit(debit)
            await settled(services, principal, capability, balance)
    except Problem as problem:
        failure = _problem(problem.code, problem.detail)
    except InsufficientCredits:
        detail = "The tenant's credits are spent: the step was not started."
        failure = _problem("payment_required", detail)
    else:
        failure = None
    finally:
        await call.close()  # rolls back what was not committed
    if failure is not None:
        step.clear()
        step.update(before)  # no result: the call's work was rolled back
        await _fail(services, holder, run, steps, index, failure)


async def _documents_for(
    services: Services, steps: list[dict[str, Any]], index: int, run: RoutineRun
) -> list[uuid.UUID] | None:
    """What the step reads when it names no documents: those an earlier step's result cites
    (`documents_from_step`), else the trigger's document; None: the project's. Raises
    Problem when the earlier step's result cites none still there. Read in a session of its
    own: the call's would hold its transaction open through the step's work (an answer)."""
    source = steps[index].get("documents_from_step")
    if source is None:
        return [run.document_id] if run.document_id is not None else None
    partition = DataPartition(run.tenant_id, Environment(run.environment))
    async with services.sessions() as session:
        cited = await cited_documents(session, partition, steps[source - 1])
    if not cited:
        raise Problem(
            "not_found", f"Step {source}'s result cites no document for step {index + 1} to read."
        )
    return cited


def _prepare(
    call: Call[Services],
    step: dict[str, Any],
    routine: Routine,
    documents: list[uuid.UUID] | None,
) -> None:
    """The call's path and validated body for the step, reading `documents` unless it names
    its own; raises ValidationError."""
    from strongroom.chat.schemas import ChatRequest
    from strongroom.templates.schemas import StoredTemplateFill
    from strongroom.workflows.schemas import StartRun

    if step["type"] == "workflow":
        inputs = dict(step.get("inputs") or {})
        workflow = WORKFLOWS.get(step["workflow_id"])
        if (
            workflow is not None
            and workflow.inputs is DocumentSetInputs
            and documents
            and not inputs.get("document_ids")
        ):
            inputs["document_ids"] = [str(i) for i in documents]
        call.path = {"workflow_id": step["workflow_id"]}
        call.body = StartRun(inputs=inputs, project_id=routine.project_id)
    elif step["type"] == "template_fill":
        call.body = StoredTemplateFill(
            template_document_id=step["template_id"],
            project_id=routine.project_id,
            document_ids=step.get("document_ids") or documents,
        )
    else:
        call.body = ChatRequest(
            query=step["query"], project_ids=[routine.project_id], document_ids=documents
        )


def _said(error: ValidationError, model: Any) -> str:
    """A step that cannot be called, said as the request path says a body's fault (issue 19):
    each field with its message in the client's terms, no class or pydantic's links."""
    faults = [
        f"{'.'.join(str(part) for part in item['loc']) or 'body'}: "
        f"{field_message(item, 'body', model)}"
        for item in error.errors(include_url=False)
    ]
    return "The step cannot be called: " + "; ".join(faults) + "."


def _result_of(step_type: str, result: Any) -> dict[str, Any]:
    if step_type == "workflow":
        return {"result_type": "workflow_run", "result_id": result.run_id}
    if step_type == "template_fill":
        job_id = str(result.job_id)
        return {"result_type": "template_fill", "result_id": job_id, "job_id": job_id}
    return {
        "result_type": "chat_message",
        "result_id": str(result.message_id),
        "conversation_id": str(result.conversation_id),
    }


def _problem(code: str, detail: str) -> dict[str, Any]:
    return {"code": code, "detail": detail}


async def _fail(
    services: Services,
    holder: Job,
    run: RoutineRun,
    steps: list[dict[str, Any]],
    index: int,
    error: dict[str, Any],
) -> None:
    """Record the step's failure and fail the job (so the run) with its problem."""
    steps[index] |= {
        "status": StepStatus.FAILED.value,
        "error": error,
        "finished_at": utcnow().isoformat(),
    }
    await _save(services, holder, run.id, steps=steps)
    code = str(error.get("code") or "internal_error")
    raise JobFailed(code, f"Step {index + 1} failed: {error.get('detail') or code}")


async def _save(services: Services, holder: Job, run_id: uuid.UUID, **values: Any) -> None:
    """Change the run, if `holder` still holds its job (else nothing: ClaimLost)."""
    async with services.sessions() as session:
        statement = update(RoutineRun).where(col(RoutineRun.id) == run_id)
        await session.exec(statement.values(**values, updated_at=utcnow()))  # type: ignore[call-overload]
        await hold_claim(session, holder)
        await session.commit()


async def settle(session: AsyncSession, job: Job, problem: dict[str, Any] | None) -> None:
    """The run's state at its job's end, and its event, in the job's transaction: failed
    with the job's problem, succeeded once every step has, or still waiting for review."""
    statement = select(RoutineRun).where(col(RoutineRun.id) == job.subject_id)
    run = (await session.exec(statement.execution_options(populate_existing=True))).first()
    if run is None or run.job_id != job.id:
        return
    now = utcnow()
    if problem is not None:
        run.status = RunStatus.FAILED.value
        run.error = problem
        run.steps = [
            step | {"status": StepStatus.FAILED.value, "finished_at": now.isoformat()}
            if step["status"] == StepStatus.RUNNING.value
            else step
            for step in run.steps
        ]
        run.finished_at = now
    elif run.status in {RunStatus.RUNNING.value, RunStatus.QUEUED.value}:
        run.status = RunStatus.SUCCEEDED.value
        run.finished_at = now
    elif run.status != RunStatus.WAITING_FOR_REVIEW.value:
        return
    run.updated_at = now
    session.add(run)
    await session.flush()
    await record_run_event(session, run)
