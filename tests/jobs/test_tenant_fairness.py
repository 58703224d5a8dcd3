"""Issue 28: one tenant's slow jobs cannot hold up another's. Two slow uploads by one tenant
held both of a worker's slots and another tenant's 44-byte text file failed with
`job_timeout`. In a process that runs jobs, one tenant holds at most `worker_concurrency -
job_slots_kept_for_other_tenants` slots while another tenant's job waits; its next job waits,
`pending`, unclaimed.

Issue 41: a tenant alone borrows the kept slots (its folder of documents is not read one at a
time on an idle worker), and gives a borrowed slot back, its bounded work stopped and the
job queued again, as soon as another tenant's job waits."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import pytest
import sqlalchemy
from sqlmodel import col

from strongroom.jobs import runner
from strongroom.jobs.fairness import DEFER_SECONDS, JobDeferred, TenantSlots, tenant_share
from strongroom.jobs.models import Job
from strongroom.jobs.queue import InProcessQueue
from strongroom.jobs.runner import run_job
from strongroom.jobs.turns import in_turn
from strongroom.runtime import Runtime
from tests.jobs.bounded_work import pid, sleep_and_report
from tests.jobs.kinds import kind
from tests.jobs.test_job_timeout import new_job, reloaded

SLOW, QUICK, PARSING = "test_fair_slow", "test_fair_quick", "test_fair_parsing"
NESTING = "test_fair_nesting"
_RELEASE: dict[str, asyncio.Event] = {}
_PARSING: list[int] = []  # the pids of the children parsing for PARSING jobs


@kind(SLOW)
async def slow(context) -> None:
    await _RELEASE["slow"].wait()  # as a hostile document being parsed


@kind(PARSING)
async def parsing(context) -> None:
    """As a long parse: bounded work that would run 60 s, its child's pid recorded."""
    if _PARSING:  # run again after giving its slot back: done at once
        return
    _PARSING.append(await context.services.work.run(pid))
    await context.services.work.run(sleep_and_report, os.devnull, 60.0)


@kind(QUICK)
async def quick(context) -> None:
    return None


async def another_job_of(runtime: Runtime, job: Job, kind: str) -> Job:
    same_tenant = Job(
        tenant_id=job.tenant_id, environment=job.environment, kind=kind, subject_id=job.subject_id
    )
    async with runtime.sessions() as session:
        session.add(same_tenant)
        await session.commit()
    return same_tenant


@pytest.fixture
async def two_slots(settings):
    runtime = Runtime.create(settings.model_copy(update={"worker_concurrency": 2}))
    await no_other_pending_jobs(runtime)
    yield runtime
    await runtime.close()


async def no_other_pending_jobs(runtime: Runtime) -> None:
    """End the jobs earlier test files of this process left pending in its database (a
    routine run nobody ran, say): borrowing depends on whether another tenant's job waits,
    anywhere, so theirs would decide these tests."""
    async with runtime.sessions() as session:
        await session.exec(
            sqlalchemy.update(Job).where(col(Job.status) == "pending").values(status="failed")
        )
        await session.commit()


async def test_a_tenants_slow_jobs_leave_a_slot_to_another_tenant(two_slots):
    runtime = two_slots
    _RELEASE["slow"] = asyncio.Event()
    first = await new_job(runtime, SLOW)
    second = await another_job_of(runtime, first, SLOW)
    other = await new_job(runtime, QUICK)  # another tenant's
    queue = InProcessQueue(2)
    await queue.start(lambda job_id: run_job(runtime, job_id), [])
    try:
        for job in (first, second, other):
            await queue.enqueue(job.id)
        async with asyncio.timeout(10):
            while (await reloaded(runtime, other)).status != "succeeded":  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        done = await reloaded(runtime, other)
        mine = [await reloaded(runtime, job) for job in (first, second)]
        running = [job for job in mine if job.started_at and job.started_at < done.finished_at]
        assert len(running) == 1  # the other slot went to the other tenant's job first
        _RELEASE["slow"].set()
        async with asyncio.timeout(10):
            await queue.idle()
        assert {(await reloaded(runtime, job)).status for job in mine} == {"succeeded"}
    finally:
        _RELEASE["slow"].set()
        await queue.close()


def test_a_tenant_holds_all_slots_but_those_kept_for_others_and_at_least_one():
    assert tenant_share(2, 1) == 1
    assert tenant_share(8, 1) == 7
    assert tenant_share(1, 1) == 1
    assert tenant_share(4, 0) == 4
    slots = TenantSlots()
    tenant = new_tenant = object()
    assert slots.take(tenant, 1) and not slots.take(tenant, 1)
    slots.give_back(tenant)
    assert slots.take(new_tenant, 1)


async def test_a_tenant_alone_borrows_the_slot_kept_for_others(two_slots):
    runtime = two_slots
    _RELEASE["slow"] = asyncio.Event()
    first = await new_job(runtime, SLOW)
    second = await another_job_of(runtime, first, SLOW)
    queue = InProcessQueue(2)
    await queue.start(lambda job_id: run_job(runtime, job_id), [])
    try:
        for job in (first, second):
            await queue.enqueue(job.id)
        async with asyncio.timeout(30):
            while not await both_running(runtime, first, second):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
    finally:
        _RELEASE["slow"].set()
        await queue.close()


async def both_running(runtime: Runtime, *jobs: Job) -> bool:
    return {(await reloaded(runtime, job)).status for job in jobs} == {"running"}


def running(process: int) -> bool:
    return Path(f"/proc/{process}").exists()


async def test_a_borrowed_slot_is_given_back_when_another_tenant_waits(two_slots):
    """The borrowing job is in its bounded work (a parse that would take 60 s): stopped, its
    child killed, queued again with its attempt uncounted; the other tenant's job runs."""
    runtime = two_slots
    _RELEASE["slow"] = asyncio.Event()
    _PARSING.clear()
    first = await new_job(runtime, SLOW)
    second = await another_job_of(runtime, first, PARSING)
    queue = InProcessQueue(2)
    await queue.start(lambda job_id: run_job(runtime, job_id), [])
    try:
        await queue.enqueue(first.id)
        async with asyncio.timeout(30):
            while (await reloaded(runtime, first)).status != "running":  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        await queue.enqueue(second.id)
        async with asyncio.timeout(60):
            while len(_PARSING) < 1:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        other = await new_job(runtime, QUICK)  # another tenant's, while both slots are taken
        await queue.enqueue(other.id)
        async with asyncio.timeout(60):
            while (await reloaded(runtime, other)).status != "succeeded":  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        assert (await reloaded(runtime, second)).attempts <= 1  # the stopped one not counted
        assert (await reloaded(runtime, first)).status == "running"  # its own share: kept
        assert not running(_PARSING[0])  # the parse was stopped
    finally:
        _RELEASE["slow"].set()
        _PARSING.append(0)
        await queue.close()


async def test_each_tenants_next_job_goes_before_another_tenants_backlog(two_slots):
    """Issue 41: another tenant's document waited behind one tenant's 200 queued ones. Jobs
    are queued `in_turn` (priority: minus the tenant's other pending jobs), so that each
    tenant's next job is taken before any tenant's following one."""
    runtime = two_slots

    async def turn(job: Job) -> int:
        async with runtime.sessions() as session:
            return await in_turn(session, job)

    first = await new_job(runtime, QUICK)
    queued = [(first, await turn(first))]
    for _ in range(4):  # one tenant's uploads, each job queued as its upload commits
        job = await another_job_of(runtime, first, QUICK)
        queued.append((job, await turn(job)))
    other = await new_job(runtime, QUICK)  # another tenant's, uploaded last
    queued.append((other, await turn(other)))
    assert [priority for _, priority in queued] == [0, -1, -2, -3, -4, 0]
    queue = InProcessQueue(1)
    for job, priority in queued:
        await queue.enqueue(job.id, priority=priority)
    ran: list = []

    async def record(job_id):
        ran.append(job_id)
        await run_job(runtime, job_id)

    await queue.start(record, [])
    try:
        async with asyncio.timeout(30):
            await queue.idle()
    finally:
        await queue.close()
    mine = [job.id for job, _ in queued[:5]]
    assert ran == [mine[0], other.id, *mine[1:]]


async def test_a_deferred_job_goes_back_in_its_tenants_turn(two_slots):
    """A job put back because its tenant holds its share was queued again at priority 0,
    ahead of every other tenant's next job (priority 0 or below), to be fetched and put back
    again each second. It goes back in its tenant's turn: minus its other pending jobs."""
    runtime = two_slots
    _RELEASE["slow"] = asyncio.Event()
    first = await new_job(runtime, SLOW)
    backlog = [await another_job_of(runtime, first, QUICK) for _ in range(3)]
    other = await new_job(runtime, QUICK)  # another tenant's, waiting: no borrowing
    queued: list[tuple[uuid.UUID, float, int]] = []
    queue = InProcessQueue(2)
    real_enqueue = queue.enqueue

    async def enqueue(job_id, delay_seconds=0.0, priority=0):
        queued.append((job_id, delay_seconds, priority))
        return await real_enqueue(job_id, delay_seconds, priority)

    queue.enqueue = enqueue
    await queue.start(lambda job_id: run_job(runtime, job_id), [])
    try:
        await queue.enqueue(first.id)  # takes the tenant's one slot
        async with asyncio.timeout(30):
            while (await reloaded(runtime, first)).status != "running":  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        await queue.enqueue(backlog[0].id)
        async with asyncio.timeout(30):
            while len(queued) < 3:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        assert queued[2] == (backlog[0].id, DEFER_SECONDS, -2)  # two more of its tenant wait
        assert (await reloaded(runtime, other)).status == "pending"
    finally:
        _RELEASE["slow"].set()
        await queue.close()
        await no_other_pending_jobs(runtime)  # none left to decide a later test's borrowing


@kind(NESTING, runs_jobs_inside=True)
async def nesting(context) -> None:
    return None  # as a routine's run, whose steps' jobs run inside it (run_now)


async def test_a_job_that_runs_jobs_inside_it_never_borrows_a_slot(two_slots):
    """Giving a borrowed slot back would stop the job running inside it (a routine's step),
    left `pending` and unqueued meanwhile: the queue's sweep and the routine could then both
    take it. So such a job waits for its tenant's share; another kind, alone, borrows."""
    runtime = two_slots
    routine_like = await new_job(runtime, NESTING)
    plain = await another_job_of(runtime, routine_like, QUICK)
    share = tenant_share(2, runtime.settings.job_slots_kept_for_other_tenants)
    for _ in range(share):  # the tenant holds its share of this process's slots
        assert runner._SLOTS.take(routine_like.tenant_id, share)
    try:
        with pytest.raises(JobDeferred):
            await run_job(runtime, routine_like.id)
        await run_job(runtime, plain.id)  # no other tenant waits: it borrows
        assert (await reloaded(runtime, plain)).status == "succeeded"
        assert (await reloaded(runtime, routine_like)).status == "pending"
    finally:
        for _ in range(share):
            runner._SLOTS.give_back(routine_like.tenant_id)
        await no_other_pending_jobs(runtime)
