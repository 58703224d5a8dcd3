"""Running a workflow (D47) as a job (D46): its steps in order, each recorded in the run's
`steps` as it starts and ends, the job's progress after each, the output at the end. A run
whose worker died starts again from its first step (steps are idempotent reads)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.db.types import utcnow
from strongroom.jobs.models import Job
from strongroom.jobs.runner import JobContext, JobFailed
from strongroom.services import Services
from strongroom.tenants.partition import DataPartition
from strongroom.workflows.catalogue import WORKFLOWS, RunContext
from strongroom.workflows.models import WorkflowRun


def fresh_steps(workflow_id: str) -> list[dict[str, Any]]:
    return [
        {"name": step.name, "status": "pending", "started_at": None, "finished_at": None}
        for step in WORKFLOWS[workflow_id].steps
    ]


async def run_workflow(context: JobContext[Services]) -> None:
    services = context.services
    async with services.sessions() as session:
        run = await session.get(WorkflowRun, context.job.subject_id)
    if run is None:
        raise JobFailed("not_found", "The workflow run's record is missing.")
    workflow = WORKFLOWS.get(run.workflow_id)
    if workflow is None:
        raise JobFailed("not_found", f"The workflow {run.workflow_id} no longer exists.")
    run_context = RunContext(
        services=services,
        partition=DataPartition.of(run),
        inputs=workflow.inputs.model_validate(run.inputs),
        project_id=run.project_id,
    )
    steps = fresh_steps(workflow.id)
    await _save(services, run, steps=steps, output=None)  # a retry starts from the first step
    for index, step in enumerate(workflow.steps):
        steps[index] |= {"status": "running", "started_at": utcnow().isoformat()}
        await _save(services, run, steps=steps)
        await step.run(run_context)
        steps[index] |= {"status": "succeeded", "finished_at": utcnow().isoformat()}
        last = index == len(workflow.steps) - 1
        await _save(services, run, steps=steps, **({"output": run_context.output} if last else {}))
        if not last:
            await context.progress((index + 1) / len(workflow.steps))


async def _save(services, run: WorkflowRun, **values: Any) -> None:
    async with services.sessions() as session:
        statement = update(WorkflowRun).where(col(WorkflowRun.id) == run.id)
        await session.exec(statement.values(**values, updated_at=utcnow()))  # type: ignore[call-overload]
        await session.commit()


async def mark_failed_step(session: AsyncSession, job: Job, problem: dict[str, Any] | None) -> None:
    """A failed run shows which step it failed in."""
    if problem is None:
        return
    run = (await session.exec(select(WorkflowRun).where(WorkflowRun.id == job.subject_id))).first()
    if run is None:
        return
    now = utcnow().isoformat()
    run.steps = [
        step | {"status": "failed", "finished_at": now} if step["status"] == "running" else step
        for step in run.steps
    ]
    run.updated_at = utcnow()
    session.add(run)
