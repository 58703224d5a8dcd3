"""Issue 52, item 5: a job is run by one holder at a time. A claim is a conditional update
(`pending` -> `running`, or a `running` job whose holder is known dead), its attempt number
the claim's token; every write of a holder (progress, the end and its hooks) is fenced by
that attempt, so a holder whose claim was taken changes nothing. A killed holder's job is
still claimed again; a retried attempt releases its claim. On PostgreSQL and SQLite."""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta

import pytest
import sqlalchemy
from sqlmodel import col

from strongroom.db.types import utcnow
from strongroom.jobs import runner
from strongroom.jobs.models import Job, JobStatus
from strongroom.jobs.runner import RetryJob, finish, run_job, run_now
from strongroom.runtime import Runtime
from tests.jobs.bounded_work import sleep_and_report
from tests.jobs.kinds import kind
from tests.jobs.test_job_timeout import new_job, reloaded

COUNTED, FLAKY, PARSING = "test_claim_counted", "test_claim_flaky", "test_claim_parsing"
_RUNS: list[str] = []  # one entry per attempt's work that started
_ENDED: list[str] = []  # one entry per `finished` hook that ran


async def ended(session, job, problem) -> None:
    _ENDED.append(job.kind)


@kind(COUNTED, finished=ended)
async def counted(context) -> None:
    """A side effect per run, and long enough for a second claim to come meanwhile."""
    _RUNS.append(COUNTED)
    await asyncio.sleep(0.5)


@kind(FLAKY, finished=ended)
async def flaky(context) -> None:
    _RUNS.append(FLAKY)
    if context.job.attempts == 1:
        raise ConnectionError("the first attempt fails")


@kind(PARSING, finished=ended)
async def parsing(context) -> None:
    _RUNS.append(PARSING)
    await context.services.work.run(sleep_and_report, os.devnull, 60.0)


async def forget_jobs(runtime: Runtime) -> None:
    """No job of these kinds is left behind for a later start of the embedded default."""
    async with runtime.sessions() as session:
        kinds = [COUNTED, FLAKY, PARSING]
        await session.exec(sqlalchemy.delete(Job).where(col(Job.kind).in_(kinds)))
        await session.commit()


@pytest.fixture
async def runtime(settings):
    """A process's runtime of its own (this module's, in place of the app's)."""
    runtime = Runtime.create(settings)
    _RUNS.clear()
    _ENDED.clear()
    yield runtime
    await forget_jobs(runtime)
    await runtime.close()


class _Elsewhere(set):
    """In place of runner._HELD: every claim as if from a process of its own."""

    def __contains__(self, item) -> bool:
        return False


async def as_if_its_holder_died(runtime: Runtime, job: Job) -> None:
    """What another process sees of a holder that died: on PostgreSQL its claim not renewed
    for longer than the lease; in the embedded default (one process) a job this process does
    not hold."""
    runner._HELD.discard(job.id)
    if runtime.settings.is_embedded:
        return
    lease = timedelta(seconds=runner.lease_seconds(runtime.settings) + 1)
    async with runtime.sessions() as session:
        await session.exec(
            sqlalchemy.update(Job).where(col(Job.id) == job.id).values(updated_at=utcnow() - lease)
        )
        await session.commit()


async def test_two_concurrent_deliveries_of_one_job_run_it_once(runtime):
    job = await new_job(runtime, COUNTED)
    async with asyncio.timeout(30):
        await asyncio.gather(run_job(runtime, job.id), run_job(runtime, job.id))
    ended = await reloaded(runtime, job)
    assert _RUNS == [COUNTED]
    assert _ENDED == [COUNTED]
    assert (ended.status, ended.attempts) == ("succeeded", 1)


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
async def test_concurrent_claims_from_many_processes_take_a_job_once(runtime, monkeypatch):
    """The claim's condition itself, as processes of their own would race (this process's
    record of what it holds set aside): one claim of ten wins."""
    monkeypatch.setattr(runner, "_HELD", _Elsewhere())
    job = await new_job(runtime, COUNTED)
    claims = await asyncio.gather(*(runner._claim(runtime, job.id) for _ in range(10)))
    won = [claim for claim in claims if claim is not None]
    assert len(won) == 1 and won[0].attempts == 1
    # A running job whose holder renews its claim is not taken either.
    assert await runner._claim(runtime, job.id) is None


async def test_a_finish_by_a_holder_whose_claim_was_taken_changes_nothing(runtime):
    job = await new_job(runtime, COUNTED)
    stale = await runner._claim(runtime, job.id)
    assert stale is not None and stale.attempts == 1
    await as_if_its_holder_died(runtime, stale)
    holder = await runner._claim(runtime, job.id)
    assert holder is not None and holder.attempts == 2
    try:
        # The first holder comes back (it was only silent) and writes its ending.
        await runner.JobContext(runtime, stale).progress(0.9)
        await finish(runtime, stale, problem=runner._problem("internal_error", "stale"))
        after_stale = await reloaded(runtime, job)
        assert (after_stale.status, after_stale.attempts) == ("running", 2)
        assert after_stale.error is None and after_stale.progress == 0.0
        assert _ENDED == []  # its hook did not run either

        await finish(runtime, holder, problem=None)
    finally:
        runner._HELD.discard(job.id)
    ended = await reloaded(runtime, job)
    assert (ended.status, ended.attempts, ended.error) == ("succeeded", 2, None)
    assert _ENDED == [COUNTED]


async def test_the_job_of_a_holder_that_died_is_claimed_and_run_again(runtime):
    """The path of a worker killed mid-job (procrastinate delivers it again once the
    worker's heartbeat is stale) or of an embedded default restarted: the claim is taken."""
    job = await new_job(runtime, COUNTED)
    dead = await runner._claim(runtime, job.id)
    assert dead is not None
    await as_if_its_holder_died(runtime, dead)
    async with asyncio.timeout(30):
        await run_job(runtime, job.id)
    ended = await reloaded(runtime, job)
    assert (ended.status, ended.attempts) == ("succeeded", 2)
    assert _RUNS == [COUNTED]


async def test_a_job_held_by_a_live_holder_is_not_claimed(runtime):
    job = await new_job(runtime, COUNTED)
    holder = await runner._claim(runtime, job.id)
    assert holder is not None
    try:
        async with asyncio.timeout(30):
            await run_job(runtime, job.id)  # delivered again: held here, not run
        assert _RUNS == []
        assert (await reloaded(runtime, job)).attempts == 1
    finally:
        runner._HELD.discard(job.id)


async def test_a_retried_attempt_releases_its_claim_at_once(runtime):
    job = await new_job(runtime, FLAKY)
    with pytest.raises(RetryJob):
        await run_job(runtime, job.id)
    between = await reloaded(runtime, job)
    assert (between.status, between.attempts) == ("running", 1)
    async with asyncio.timeout(30):
        await run_job(runtime, job.id)  # the queue's retry, a second later: not a lease later
    ended = await reloaded(runtime, job)
    assert (ended.status, ended.attempts) == ("succeeded", 2)
    assert _RUNS == [FLAKY, FLAKY]


async def test_run_now_waits_for_the_queue_running_the_same_job(runtime):
    """A routine's retry after a restart runs its step's job (run_now) while the queue runs
    it too: it runs once, and run_now returns once it has ended."""
    job = await new_job(runtime, COUNTED)
    async with asyncio.timeout(30):
        queued = asyncio.create_task(run_job(runtime, job.id))
        while job.id not in runner._HELD:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        await run_now(runtime, job.id)
        assert (await reloaded(runtime, job)).status == "succeeded"
        await queued
    assert _RUNS == [COUNTED]
    assert _ENDED == [COUNTED]


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
async def test_a_holder_that_finds_its_claim_taken_stops_its_work_and_writes_nothing(
    settings,
):
    """Its claim renewed every heartbeat, a holder that finds another attempt holds the job
    (it was silent past its lease meanwhile) stops its bounded work, and its end writes
    nothing."""
    quick = settings.model_copy(
        update={"worker_heartbeat_seconds": 0.2, "worker_stalled_seconds": 2.0}
    )
    runtime = Runtime.create(quick)
    _RUNS.clear()
    _ENDED.clear()
    try:
        job = await new_job(runtime, PARSING)
        holding = asyncio.create_task(run_job(runtime, job.id))
        async with asyncio.timeout(60):
            while PARSING not in _RUNS:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)  # renewed meanwhile: still held
            assert (await reloaded(runtime, job)).attempts == 1
            async with runtime.sessions() as session:  # another runner's claim
                await session.exec(
                    sqlalchemy.update(Job)
                    .where(col(Job.id) == job.id)
                    .values(attempts=2, updated_at=utcnow())
                )
                await session.commit()
            await holding  # stopped within a check, not after the 60 s parse
        taken = await reloaded(runtime, job)
        assert (taken.status, taken.attempts) == (JobStatus.RUNNING.value, 2)
        assert _ENDED == []
    finally:
        await forget_jobs(runtime)
        await runtime.close()


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
async def test_a_delivery_finding_the_job_held_elsewhere_comes_back_when_the_claim_would_end(
    runtime, monkeypatch
):
    """Should its holder die without its own delivery being sent again, this one claims it:
    it is queued again for when the holder's claim runs out unless renewed."""
    job = await new_job(runtime, COUNTED)
    elsewhere = await runner._claim(runtime, job.id)
    assert elsewhere is not None
    runner._HELD.discard(job.id)  # held by another process
    queued: list[tuple] = []

    async def enqueue(job_id, delay_seconds=0.0, priority=0) -> bool:
        queued.append((job_id, delay_seconds))
        return True

    monkeypatch.setattr(runtime.jobs, "enqueue", enqueue)
    await run_job(runtime, job.id)
    assert _RUNS == []
    [(job_id, delay)] = queued
    lease = runner.lease_seconds(runtime.settings)
    assert job_id == job.id and lease - 5 < delay <= lease + runner.CANCEL_CHECK_SECONDS
