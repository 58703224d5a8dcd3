"""Issue 18: a job's blocking work runs in a child process with the job's memory and CPU
limits (strongroom/jobs/bounded.py). Work past a limit fails its job with
`job_resource_limit`, not retried, and the worker goes on running jobs; a job timeout kills
the child instead of leaving it running."""

from __future__ import annotations

import asyncio
import os
import resource
from pathlib import Path

import pytest

from strongroom.jobs.bounded import ResourceLimitExceeded
from strongroom.jobs.runner import run_job
from strongroom.runtime import Runtime
from tests.jobs.bounded_work import (
    allocate,
    environment,
    fail,
    sleep_and_report,
    spin,
    warn,
)
from tests.jobs.bounded_work import (
    pid as child_pid,
)
from tests.jobs.kinds import kind
from tests.jobs.test_job_timeout import new_job, reloaded

MiB = 1024 * 1024


GREEDY, SPINNING, HANGING, MODEST = "test_greedy", "test_spinning", "test_hanging", "test_modest"


@kind(GREEDY)
async def greedy(context) -> None:
    await context.services.work.run(allocate, 2048)


@kind(SPINNING)
async def spinning(context) -> None:
    await context.services.work.run(spin, 30.0)


@kind(MODEST)
async def modest(context) -> None:
    assert await context.services.work.run(allocate, 16) == 16 * MiB


_PID_FILE: dict[str, str] = {}


@kind(HANGING)
async def hanging(context) -> None:
    await context.services.work.run(sleep_and_report, _PID_FILE["path"], 60.0)


@pytest.fixture
async def limited(settings):
    runtime = Runtime.create(
        settings.model_copy(
            update={
                "job_memory_limit_bytes": 512 * MiB,
                "job_cpu_limit_seconds": 1.0,
                "job_timeout_seconds": 60.0,
            }
        )
    )
    yield runtime
    await runtime.close()


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def test_a_job_past_its_memory_limit_fails_with_job_resource_limit(limited):
    before = peak_rss_mib()
    job = await new_job(limited, GREEDY)
    await run_job(limited, job.id)
    ended = await reloaded(limited, job)
    assert ended.status == "failed"
    assert ended.error["code"] == "job_resource_limit"
    assert "memory limit" in ended.error["detail"]
    assert ended.attempts == 1  # not retried
    # The 2 GiB were asked of the child, never of this process (the worker).
    assert peak_rss_mib() - before < 256
    following = await new_job(limited, MODEST)
    await run_job(limited, following.id)
    assert (await reloaded(limited, following)).status == "succeeded"


async def test_a_job_past_its_cpu_limit_fails_with_job_resource_limit(limited):
    job = await new_job(limited, SPINNING)
    await run_job(limited, job.id)
    ended = await reloaded(limited, job)
    # The work asked for 30 s of CPU: the child was stopped by the 1 s limit (the detail
    # names it), not left to finish, and the job was not tried again.
    assert ended.status == "failed"
    assert ended.error["code"] == "job_resource_limit"
    assert "CPU time limit of 1 seconds" in ended.error["detail"]
    assert ended.attempts == 1


async def test_a_timed_out_job_kills_its_child_process(settings, tmp_path):
    runtime = Runtime.create(settings.model_copy(update={"job_timeout_seconds": 3.0}))
    _PID_FILE["path"] = str(tmp_path / "pid")
    try:
        # A child ready, parsers imported, so that the job's 3 s go to its work (issue 41).
        await runtime.work.run(child_pid)
        job = await new_job(runtime, HANGING)
        await run_job(runtime, job.id)
        assert (await reloaded(runtime, job)).error["code"] == "job_timeout"
        pid = int(await asyncio.to_thread(Path(_PID_FILE["path"]).read_text))
        async with asyncio.timeout(10):
            while _alive(pid):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
    finally:
        await runtime.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_the_works_own_exceptions_and_results_come_back(limited):
    with pytest.raises(ValueError, match="bad input"):
        await limited.work.run(fail, "bad input")
    assert await limited.work.run(allocate, 1) == MiB
    with pytest.raises(ResourceLimitExceeded):
        await limited.work.run(allocate, 1024)


async def test_the_child_gets_no_secret_from_the_environment(limited, monkeypatch):
    """The child parses hostile bytes: keys, peppers and cloud credentials stay out of it."""
    monkeypatch.setenv("STRONGROOM_KEY_PEPPER", "pepper-that-must-not-leak")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-that-must-not-leak")
    seen = await limited.work.run(environment)
    assert "STRONGROOM_KEY_PEPPER" not in seen and "AWS_SECRET_ACCESS_KEY" not in seen
    assert "PYTHONPATH" in seen


async def test_what_the_work_logs_is_rate_limited_per_logger(limited, capfd):
    """Issue 28: a PDF of 50,000 nested dictionaries made pypdf log 33,013 warnings."""
    assert await limited.work.run(warn, 10_000) == 10_000
    lines = capfd.readouterr().err.splitlines()
    warned = [line for line in lines if "pypdf._reader" in line]
    assert len(warned) == 21  # the first 20, then one saying the rest were dropped
    assert "dropped" in warned[-1]
