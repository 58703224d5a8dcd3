"""Issue 28: one tenant's slow jobs cannot hold up another's. Two slow uploads by one tenant
held both of a worker's slots and another tenant's 44-byte text file failed with
`job_timeout`. In a process that runs jobs, one tenant holds at most `worker_concurrency -
job_slots_kept_for_other_tenants` slots; its next job waits, `pending`, unclaimed."""

from __future__ import annotations

import asyncio

import pytest

from strongroom.jobs.fairness import TenantSlots, tenant_share
from strongroom.jobs.models import Job
from strongroom.jobs.queue import InProcessQueue
from strongroom.jobs.runner import job_kind, run_job
from strongroom.runtime import Runtime
from tests.jobs.test_job_timeout import new_job, reloaded

SLOW, QUICK = "test_fair_slow", "test_fair_quick"
_RELEASE: dict[str, asyncio.Event] = {}


@job_kind(SLOW)
async def slow(context) -> None:
    await _RELEASE["slow"].wait()  # as a hostile document being parsed


@job_kind(QUICK)
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
    yield runtime
    await runtime.close()


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
        mine = [await reloaded(runtime, job) for job in (first, second)]
        assert sorted(job.status for job in mine) == ["pending", "running"]
        [waiting] = [job for job in mine if job.status == "pending"]
        assert waiting.attempts == 0  # never claimed
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
