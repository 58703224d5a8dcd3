"""A job whose row is deleted while it runs is cancelled (issue 42: "a running ingestion job
for it is cancelled" when its document is deleted): its bounded work is stopped, its child
killed, and its end changes nothing: no `finished` hook runs for a job that is gone. A
job run inside it (`run_now`, a routine's step) is stopped with it and left to run again."""

from __future__ import annotations

import asyncio
import os

import sqlalchemy
from sqlmodel import col

from strongroom.jobs.models import Job, JobStatus
from strongroom.jobs.runner import run_job, run_now
from strongroom.runtime import Runtime
from tests.jobs.bounded_work import pid, sleep_and_report
from tests.jobs.kinds import kind
from tests.jobs.test_job_timeout import new_job, reloaded
from tests.jobs.test_tenant_fairness import running

PARSING, QUICK, OUTER = "test_cancel_parsing", "test_cancel_quick", "test_cancel_outer"
_CHILDREN: list[int] = []  # the pids of the children parsing for PARSING jobs
_ENDED: list[str] = []  # the kinds whose `finished` hook ran


async def ended(session, job, problem) -> None:
    _ENDED.append(job.kind)


@kind(PARSING, finished=ended)
async def parsing(context) -> None:
    """As a long parse: bounded work that would run 60 s, its child's pid recorded."""
    _CHILDREN.append(await context.services.work.run(pid))
    await context.services.work.run(sleep_and_report, os.devnull, 60.0)


@kind(QUICK, finished=ended)
async def quick(context) -> None:
    await context.services.work.run(pid)


@kind(OUTER, finished=ended)
async def outer(context) -> None:
    """As a routine whose step starts a job and runs it itself: the job is its subject."""
    await run_now(context.services, context.job.subject_id)


async def delete_row(runtime: Runtime, job: Job) -> None:
    async with runtime.sessions() as session:
        await session.exec(sqlalchemy.delete(Job).where(col(Job.id) == job.id))
        await session.commit()


async def cancel_while_parsing(runtime: Runtime, job: Job) -> None:
    """Run `job`, delete its row once a PARSING child runs, and wait for the runner to stop
    (within 30 s: not the 60 s of the parse)."""
    task = asyncio.create_task(run_job(runtime, job.id))
    async with asyncio.timeout(60):
        while not _CHILDREN:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    await delete_row(runtime, job)
    async with asyncio.timeout(30):
        await task


async def test_a_running_job_whose_row_is_deleted_is_stopped_and_changes_nothing(settings):
    runtime = Runtime.create(settings)
    _CHILDREN.clear()
    _ENDED.clear()
    try:
        job = await new_job(runtime, PARSING)
        await cancel_while_parsing(runtime, job)
        assert not running(_CHILDREN[0])  # its child was killed
        assert _ENDED == []  # no hook of an ending
    finally:
        await runtime.close()


async def test_a_job_that_runs_to_its_end_still_ends(settings):
    """The control: the same runner, the row kept, the hook runs once."""
    runtime = Runtime.create(settings)
    _ENDED.clear()
    try:
        job = await new_job(runtime, QUICK)
        async with asyncio.timeout(60):
            await run_job(runtime, job.id)
        assert _ENDED == [QUICK]
    finally:
        await runtime.close()


async def test_a_job_run_inside_a_cancelled_job_stops_with_it_and_waits_to_run_again(settings):
    """Issue 43: deleting a routine cancels its run's job; the step's job it runs (run_now)
    had its own interrupt only, so its parse went on for its full length. Now the outer
    job's interrupt reaches it: the child is killed, the inner job is `pending` again with
    that attempt not counted, and neither ends."""
    runtime = Runtime.create(settings)
    _CHILDREN.clear()
    _ENDED.clear()
    try:
        inner = await new_job(runtime, PARSING)
        outer_job = await new_job(runtime, OUTER)
        async with runtime.sessions() as session:
            found = await session.get(Job, outer_job.id)
            found.subject_id = inner.id
            await session.commit()
        await cancel_while_parsing(runtime, outer_job)
        assert not running(_CHILDREN[0])
        assert _ENDED == []
        left = await reloaded(runtime, inner)
        assert (left.status, left.attempts) == (JobStatus.PENDING.value, 0)
        await delete_row(runtime, inner)  # not left pending to decide a later test's borrowing
    finally:
        await runtime.close()
