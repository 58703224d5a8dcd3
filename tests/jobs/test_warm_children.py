"""Issue 41: a job's bounded work runs in warm children that serve many calls, each call
with every bound of issues 18 and 28 (strongroom/jobs/bounded.py, strongroom/jobs/child.py).
These tests count processes and calls, never seconds."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from strongroom.jobs.bounded import ResourceLimitExceeded, WorkPool
from strongroom.settings import Settings
from tests.jobs.bounded_work import allocate, fail, leak, pid, spin, warn

MiB = 1024 * 1024


def pool_of(settings: Settings, **limits) -> WorkPool:
    values = {
        "job_memory_limit_bytes": 512 * MiB,
        "job_cpu_limit_seconds": 1.0,
        "worker_concurrency": 2,
        "job_warm_children_at_start": True,
    }
    return WorkPool(settings.model_copy(update=values | limits))


@pytest.fixture
async def pool(settings):
    work = pool_of(settings)
    yield work
    await work.close()


async def test_a_child_serves_call_after_call_without_starting_again(pool):
    pids = [await pool.run(pid) for _ in range(5)]
    assert len(set(pids)) == 1 and pids[0] != os.getpid()


async def test_every_call_gets_its_own_cpu_budget(pool):
    """Three calls of 0.6 CPU s each in one child, whose budget per call is 1 s: the child's
    life used 1.8 s, more than one budget, and none was stopped."""
    pids = set()
    for _ in range(3):
        await pool.run(spin, 0.6)
        pids.add(await pool.run(pid))
    assert len(pids) == 1


async def test_a_call_past_its_cpu_budget_is_stopped_and_the_child_replaced(pool):
    first = await pool.run(pid)
    with pytest.raises(ResourceLimitExceeded, match="CPU time limit of 1 seconds"):
        await pool.run(spin, 30.0)
    assert await pool.run(pid) != first


async def test_a_call_past_the_memory_limit_fails_and_the_next_gets_a_new_child(pool):
    first = await pool.run(pid)
    with pytest.raises(ResourceLimitExceeded, match="memory limit"):
        await pool.run(allocate, 1024)
    assert await pool.run(allocate, 16) == 16 * MiB
    assert await pool.run(pid) != first


async def test_a_child_whose_call_raised_is_not_reused(pool):
    first = await pool.run(pid)
    with pytest.raises(ValueError, match="bad input"):
        await pool.run(fail, "bad input")
    assert await pool.run(pid) != first


async def test_a_child_grown_past_its_memory_mark_is_replaced(settings):
    pool = pool_of(settings, job_child_memory_mark_bytes=32 * MiB)
    try:
        kept = await pool.run(leak, 8)
        assert await pool.run(pid) == kept  # 8 MiB past its start: under the mark
        grown = await pool.run(leak, 64)  # answered, then ended: past the mark
        assert grown == kept
        assert await pool.run(pid) != kept
    finally:
        await pool.close()


async def test_a_child_is_replaced_after_its_most_calls(settings):
    pool = pool_of(settings, job_child_max_calls=3)
    try:
        pids = [await pool.run(pid) for _ in range(7)]
        assert [len(set(pids[i : i + 3])) for i in (0, 3)] == [1, 1]
        assert len(set(pids)) == 3
    finally:
        await pool.close()


async def test_a_cancelled_call_kills_its_child(pool, tmp_path):
    first = await pool.run(pid)
    call = asyncio.create_task(pool.run(spin, 0.9))
    await asyncio.sleep(0.2)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert not _running(first)
    assert await pool.run(pid) != first


def _running(process: int) -> bool:
    return Path(f"/proc/{process}").exists()


async def test_warming_starts_the_children_before_any_call(settings):
    pool = pool_of(settings, worker_concurrency=3)
    try:
        pool.warm()
        async with asyncio.timeout(30):
            while len(pool._idle) < 3:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        started = {child.process.pid for child in pool._idle}
        pids = await asyncio.gather(*(pool.run(pid) for _ in range(3)))
        assert set(pids) <= started  # no call started a child of its own
    finally:
        await pool.close()


async def test_a_warm_pool_replaces_a_child_that_ended(settings):
    pool = pool_of(settings)
    try:
        pool.warm()
        with pytest.raises(ValueError):
            await pool.run(fail, "bad input")
        assert pool.children == 2  # the one that ended is being replaced
    finally:
        await pool.close()


async def test_closing_ends_every_child(settings):
    pool = pool_of(settings)
    pool.warm()
    pids = set(await asyncio.gather(pool.run(pid), pool.run(pid)))
    await pool.close()
    assert not any(_running(process) for process in pids)
    assert pool.children == 0


async def test_the_log_quota_holds_for_each_call(pool, capfd):
    """Issue 28's quota (20 records of a logger, then one line) counts each call afresh."""
    assert await pool.run(warn, 100) == 100
    assert await pool.run(warn, 100) == 100
    lines = capfd.readouterr().err.splitlines()
    assert len([line for line in lines if "pypdf._reader" in line]) == 2 * 21


async def test_a_child_killed_while_it_waited_is_not_given_a_call(pool):
    idle = await pool.run(pid)
    os.kill(idle, signal.SIGKILL)
    async with asyncio.timeout(30):
        while pool._idle[0].alive:  # noqa: ASYNC110 (the event loop notices the exit)
            await asyncio.sleep(0.01)
    assert await pool.run(pid) not in {idle, os.getpid()}
