"""The embedded default's job queue stops gracefully: a running job is let finish within the
grace period, a job past it is cancelled (and left for the next start), and nothing waiting is
started once closing has begun. A job's run is short (50 ms): closing begins while it runs,
whatever its length, as the test waits for it to start and then closes."""

from __future__ import annotations

import asyncio
import uuid

from strongroom.jobs.queue import InProcessQueue
from strongroom.jobs.runner import RetryJob


class Recorder:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started: list[uuid.UUID] = []
        self.finished: list[uuid.UUID] = []
        self.first_started = asyncio.Event()

    async def run(self, job_id: uuid.UUID) -> None:
        self.started.append(job_id)
        self.first_started.set()
        await asyncio.sleep(self.seconds)
        self.finished.append(job_id)


async def test_closing_lets_a_running_job_finish_within_the_grace_period():
    recorder = Recorder(seconds=0.05)
    queue = InProcessQueue(concurrency=1, shutdown_grace_seconds=5)
    await queue.start(recorder.run, [])
    job_id = uuid.uuid4()
    await queue.enqueue(job_id)
    await recorder.first_started.wait()
    await queue.close()
    assert recorder.finished == [job_id]


async def test_closing_starts_no_waiting_job():
    recorder = Recorder(seconds=0.05)
    queue = InProcessQueue(concurrency=1, shutdown_grace_seconds=5)
    first, second = uuid.uuid4(), uuid.uuid4()
    await queue.start(recorder.run, [first, second])
    await recorder.first_started.wait()
    await queue.close()
    assert recorder.started == [first]
    assert recorder.finished == [first]


async def test_a_job_running_past_the_grace_period_is_cancelled():
    recorder = Recorder(seconds=60)
    queue = InProcessQueue(concurrency=2, shutdown_grace_seconds=0.1)
    await queue.start(recorder.run, [uuid.uuid4()])
    await recorder.first_started.wait()
    async with asyncio.timeout(5):
        await queue.close()
    assert recorder.finished == []


async def test_closing_during_a_retry_wait_does_not_start_the_job_again():
    attempts = 0
    failed_once = asyncio.Event()

    async def fails(job_id: uuid.UUID) -> None:
        nonlocal attempts
        attempts += 1
        failed_once.set()
        raise RetryJob(str(job_id))

    queue = InProcessQueue(concurrency=1, shutdown_grace_seconds=5)
    queue.RETRY_DELAY_SECONDS = 0.05
    await queue.start(fails, [uuid.uuid4()])
    await failed_once.wait()
    await queue.close()  # while it waits to retry
    assert attempts == 1
