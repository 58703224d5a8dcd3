"""A job still running after `job_timeout_seconds` is failed with `job_timeout`, not left
`running` for ever by its heartbeat, and not retried (what hung once would hang again). A
timeout inside the work itself (an upstream's, say) is an ordinary error and is retried."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from strongroom.answers.base import EngineError, EngineTimeout
from strongroom.jobs.models import Job
from strongroom.jobs.runner import RetryJob, run_job
from strongroom.runtime import Runtime
from tests.conftest import issue_credential
from tests.jobs.kinds import kind

HANGS = "test_hangs"
TIMES_OUT_INSIDE = "test_times_out_inside"
MODEL_FAILS = "test_model_fails"
MODEL_TIMES_OUT = "test_model_times_out"


@kind(HANGS)
async def hang(context) -> None:
    await asyncio.to_thread(time.sleep, 1.0)  # as a parser stuck in its thread
    await asyncio.Event().wait()


@kind(TIMES_OUT_INSIDE)
async def time_out_inside(context) -> None:
    async with asyncio.timeout(0.01):
        await asyncio.Event().wait()


@kind(MODEL_FAILS)
async def model_fails(context) -> None:
    raise EngineError("the answer engine returned an empty answer")


@kind(MODEL_TIMES_OUT)
async def model_times_out(context) -> None:
    raise EngineTimeout("no token in 30 s")


@pytest.fixture
async def short_timeout_runtime(settings):
    runtime = Runtime.create(settings.model_copy(update={"job_timeout_seconds": 0.3}))
    yield runtime
    await runtime.close()


async def new_job(runtime: Runtime, kind: str) -> Job:
    credential = await issue_credential(runtime)
    job = Job(
        tenant_id=credential.tenant.id,
        environment="test",
        kind=kind,
        subject_id=credential.tenant.id,
    )
    async with runtime.sessions() as session:
        session.add(job)
        await session.commit()
    return job


async def reloaded(runtime: Runtime, job: Job) -> Job:
    async with runtime.sessions() as session:
        found = await session.get(Job, job.id)
        assert found is not None
        return found


async def test_a_job_past_its_time_is_failed_with_job_timeout(short_timeout_runtime):
    runtime = short_timeout_runtime
    job = await new_job(runtime, HANGS)
    async with asyncio.timeout(10):
        await run_job(runtime, job.id)
    ended = await reloaded(runtime, job)
    assert ended.status == "failed"
    assert ended.error is not None
    assert ended.error["code"] == "job_timeout"
    assert "0.3 seconds" in ended.error["detail"]
    assert ended.attempts == 1


async def test_a_timeout_inside_the_work_is_retried_not_a_job_timeout(short_timeout_runtime):
    runtime = short_timeout_runtime
    job = await new_job(runtime, TIMES_OUT_INSIDE)
    with pytest.raises(RetryJob):
        await run_job(runtime, job.id)
    assert (await reloaded(runtime, job)).status == "running"


STUCK_IN_A_THREAD = "test_stuck_in_a_thread"
UNSTUCK = threading.Event()  # the test lets the stuck parser return, when it has seen enough


@kind(STUCK_IN_A_THREAD)
async def stuck_in_a_thread(context) -> None:
    await context.services.in_job_thread(UNSTUCK.wait, 30)  # a parser that will not return


async def test_a_parser_left_hanging_by_a_timeout_holds_only_a_job_thread(settings):
    """The timed-out job's thread runs on, in the jobs' own pool (one thread here): the
    next job's work waits for it, while the default executor (uploads, storage) does not."""
    runtime = Runtime.create(
        settings.model_copy(update={"job_timeout_seconds": 0.2, "worker_concurrency": 1})
    )
    UNSTUCK.clear()
    try:
        job = await new_job(runtime, STUCK_IN_A_THREAD)
        await run_job(runtime, job.id)
        assert (await reloaded(runtime, job)).error["code"] == "job_timeout"
        # Orders of events, not durations, so a slow machine cannot fail this (issue 44):
        # the default executor answers while the parser is still stuck ...
        async with asyncio.timeout(10):
            assert await asyncio.to_thread(int, "1") == 1
        assert not UNSTUCK.is_set()
        # ... and the next job's work waits for the stuck parser, until it returns.
        queued = asyncio.ensure_future(runtime.in_job_thread(int, "1"))
        done, _ = await asyncio.wait([queued], timeout=0.3)
        assert not done
        UNSTUCK.set()
        async with asyncio.timeout(10):
            assert await queued == 1
    finally:
        UNSTUCK.set()
        await runtime.close()


@pytest.mark.parametrize(
    ("kind", "code", "status"),
    [(MODEL_FAILS, "upstream_error", 502), (MODEL_TIMES_OUT, "upstream_timeout", 504)],
)
async def test_a_job_whose_answer_engine_fails_for_good_says_so_not_internal_error(
    settings, kind, code, status
):
    """A template fill whose model answered nothing on every attempt: the caller is told the
    upstream failed (retry later), not that the service broke."""
    runtime = Runtime.create(settings.model_copy(update={"job_max_attempts": 1}))
    try:
        job = await new_job(runtime, kind)
        await run_job(runtime, job.id)
        ended = await reloaded(runtime, job)
    finally:
        await runtime.close()
    assert ended.status == "failed"
    assert (ended.error["code"], ended.error["status"]) == (code, status)
