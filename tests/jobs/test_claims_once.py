"""Issue 52, item 5: a job runs once. A holder whose claim was taken (it was silent past its
lease: its process stalled, its renewals failed) may be in the middle of its work when the
other runner runs the job; what it writes beside the job's own row must be fenced by its
attempt too, or the job's side effect happens twice. A routine's step is such a write: its
call (a chat answer, a workflow run, a fill) commits with the step's result id, and the
holder that read the run before the other runner recorded that id would start the step
again. Both backends; bench/claims_bench.py (retired; bench/RESULTS.md) counted the same
with real workers SIGKILLed."""

from __future__ import annotations

import asyncio
import uuid

from sqlmodel import col, func, select

from strongroom.chat.models import Conversation
from strongroom.jobs import runner
from strongroom.jobs.models import Job
from strongroom.jobs.runner import run_job
from strongroom.routines.grant import CALLS
from strongroom.routines.models import Routine, RoutineRun
from strongroom.routines.service import new_run
from tests.jobs.test_job_claims import as_if_its_holder_died
from tests.jobs.test_job_timeout import reloaded
from tests.routines.conftest import Routines, routines  # noqa: F401
from tests.vault.conftest import vault, worker  # noqa: F401

ASK = {"type": "chat", "query": "Who is the employer?"}


async def unqueued_run(routines: Routines, runtime) -> tuple[RoutineRun, Job]:  # noqa: F811
    """A run of a one-chat-step routine and its job, as a manual start makes them, but not
    queued: this test is the job's only runner."""
    project_id = await routines.vault.create_project()
    routine = await routines.create(
        name="Once", project_id=project_id, trigger={"type": "manual"}, steps=[ASK]
    )
    async with runtime.sessions() as session:
        row = await session.get(Routine, uuid.UUID(routine["id"]))
        assert row is not None
        run, job = new_run(row, trigger_type="manual")
        assert job is not None
        session.add(job)
        session.add(run)
        await session.commit()
    return run, job


async def conversations_of(runtime, tenant_id: uuid.UUID) -> int:
    statement = select(func.count()).where(col(Conversation.tenant_id) == tenant_id)
    async with runtime.sessions() as session:
        return (await session.exec(statement)).one()


async def test_a_holder_whose_claim_was_taken_mid_step_does_not_start_the_step_again(
    routines: Routines,  # noqa: F811
    runtime,
    monkeypatch,
):
    run, job = await unqueued_run(routines, runtime)
    capability, handler = CALLS["chat"]
    entered, release = asyncio.Event(), asyncio.Event()
    calls = 0

    async def held_once(call):
        """The chat step's own handler; the first holder's call waits inside it (it read the
        run, found the step not started, and is answering) until released. Only this run's
        tenant's calls are counted and held: a due routine another test left in the shared
        database may fire into this process's background work meanwhile (it once set
        `entered` before this job was claimed)."""
        nonlocal calls
        if call.principal.tenant_id != run.tenant_id:
            return await handler(call)
        calls += 1
        if calls == 1:
            entered.set()
            await release.wait()
        return await handler(call)

    monkeypatch.setitem(CALLS, "chat", (capability, held_once))
    async with asyncio.timeout(60):
        first = asyncio.create_task(run_job(runtime, job.id))
        await entered.wait()
        stale = await reloaded(runtime, job)
        assert (stale.status, stale.attempts) == ("running", 1)
        # Silent past its lease: another runner (of another process, with slots of its own)
        # takes the job and runs it to its end.
        await as_if_its_holder_died(runtime, stale)
        assert await runner._run_claimed(runtime, job.id, borrowing_for=None)
        second = await reloaded(runtime, job)
        assert (second.status, second.attempts) == ("succeeded", 2)
        assert await conversations_of(runtime, run.tenant_id) == 1
        # The first holder comes back and goes on with its step.
        release.set()
        await first
    runner._HELD.discard(job.id)

    assert calls == 2
    assert await conversations_of(runtime, run.tenant_id) == 1  # the step's answer, once
    async with runtime.sessions() as session:
        ended = await session.get(RoutineRun, run.id)
        assert ended is not None
        conversation = ended.steps[0]["conversation_id"]
        recorded = await session.get(Conversation, uuid.UUID(conversation))
    assert (ended.status, ended.steps[0]["status"]) == ("succeeded", "succeeded")
    assert recorded is not None and recorded.tenant_id == run.tenant_id
    assert (await reloaded(runtime, job)).status == "succeeded"
