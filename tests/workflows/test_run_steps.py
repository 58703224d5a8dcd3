"""How a run's steps are recorded (D47) when it fails, and when its process dies in the middle
of it and the job runs again (D46). The workflows are declared here, as any workflow is
declared in the catalogue; the jobs are run by the same `run_job` a worker calls. Killing a
real `strongroom worker` is tested with ingestion (tests/vault/test_worker.py) and template
fills (tests/templates/test_template_fill_worker.py): the same machinery."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from strongroom.jobs.models import Job, JobKind
from strongroom.jobs.runner import run_job
from strongroom.runtime import Runtime
from strongroom.workflows.catalogue import RunContext, Step
from strongroom.workflows.models import WorkflowRun
from strongroom.workflows.runner import fresh_steps
from tests.workflows.registered import register

FAILING = "wf_test_fails_in_second_step"
INTERRUPTED = "wf_test_interrupted_once"


async def gather(context: RunContext) -> None:
    context.state["gathered"] = True


async def analyse(context: RunContext) -> None:
    raise RuntimeError("the analysis broke")


async def report(context: RunContext) -> None:
    context.output = {"never": "reached"}


async def new_run(runtime: Runtime, credential, workflow_id: str) -> WorkflowRun:
    """A run accepted as `POST /workflows/{id}/runs` accepts one, not yet queued."""
    job = Job(
        tenant_id=credential.tenant.id,
        environment=credential.api_key.environment,
        kind=JobKind.WORKFLOW_RUN.value,
        subject_id=uuid.uuid4(),
    )
    run = WorkflowRun(
        id=job.subject_id,
        tenant_id=credential.tenant.id,
        environment=credential.api_key.environment,
        owner_id=credential.user.id,
        workflow_id=workflow_id,
        job_id=job.id,
        inputs={},
        steps=fresh_steps(workflow_id),
    )
    async with runtime.sessions() as session:
        session.add(job)
        await session.flush()
        session.add(run)
        await session.commit()
    return run


@pytest.fixture
def failing_workflow(monkeypatch):
    steps = (Step("gather", gather), Step("analyse", analyse), Step("report", report))
    return register(
        monkeypatch, FAILING, *steps, name="Fails in its second step", reads_document_set=False
    )


async def test_a_failed_run_marks_the_step_it_failed_in(
    settings, client, make_credential, failing_workflow
):
    credential = await make_credential()
    runtime = Runtime.create(settings.model_copy(update={"job_max_attempts": 1}))
    try:
        run = await new_run(runtime, credential, FAILING)
        await run_job(runtime, run.job_id)
    finally:
        await runtime.close()

    response = await client.get(
        f"/api/v2/workflows/runs/{run.public_id}", headers=credential.headers
    )
    assert response.status_code == 200
    view = await response.get_json()
    assert view["status"] == "failed"
    assert view["error"]["code"] == "internal_error"
    assert [(step["name"], step["status"]) for step in view["steps"]] == [
        ("gather", "succeeded"),
        ("analyse", "failed"),
        ("report", "pending"),
    ]
    assert view["steps"][1]["finished_at"] is not None
    assert view["output"] is None


class Interruption:
    """A second step that hangs on its first run (until its process 'dies') and passes after."""

    def __init__(self) -> None:
        self.runs = 0
        self.hanging = asyncio.Event()

    async def analyse(self, context: RunContext) -> None:
        self.runs += 1
        if self.runs == 1:
            self.hanging.set()
            await asyncio.Event().wait()
        context.state["analysed"] = True

    async def report(self, context: RunContext) -> None:
        context.output = {"gathered": context.state["gathered"], "runs": self.runs}


async def test_a_run_whose_process_died_starts_again_from_its_first_step_and_succeeds(
    settings, client, make_credential, monkeypatch
):
    interruption = Interruption()
    steps = (
        Step("gather", gather),
        Step("analyse", interruption.analyse),
        Step("report", interruption.report),
    )
    register(monkeypatch, INTERRUPTED, *steps, name="Interrupted once", reads_document_set=False)
    credential = await make_credential()
    runtime = Runtime.create(settings)
    try:
        run = await new_run(runtime, credential, INTERRUPTED)
        path = f"/api/v2/workflows/runs/{run.public_id}"
        dying = asyncio.create_task(run_job(runtime, run.job_id))
        async with asyncio.timeout(10):
            await interruption.hanging.wait()
        dying.cancel()  # the process is gone: nothing more of this attempt is written
        await asyncio.gather(dying, return_exceptions=True)
        midway = await (await client.get(path, headers=credential.headers)).get_json()
        await run_job(runtime, run.job_id)  # the next worker picks the job up
    finally:
        await runtime.close()

    assert midway["status"] == "running"
    assert [step["status"] for step in midway["steps"]] == ["succeeded", "running", "pending"]
    view = await (await client.get(path, headers=credential.headers)).get_json()
    assert view["status"] == "succeeded"
    assert [step["status"] for step in view["steps"]] == ["succeeded"] * 3
    assert view["output"] == {"gathered": True, "runs": 2}
