"""One supervisor for background work (issue 54, strongroom/background.py): each task
declared once, a failing round retried after a back-off, a killed task started again and
shown, one shutdown path. Counts rounds, never seconds (bounded waits only)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from strongroom.background import TASKS, Process, Supervisor, Task

PERIOD = 0.01
FAILING_ROUNDS = 3
rounds: dict[str, int] = {}
services: list[Service] = []


async def flaky(_runtime) -> None:
    """Fails its first FAILING_ROUNDS rounds, then succeeds."""
    rounds["flaky"] = rounds.get("flaky", 0) + 1
    if rounds["flaky"] <= FAILING_ROUNDS:
        raise ConnectionError("the database went away: postgresql://user:hunter2@db/x")


async def flood(_runtime) -> bool | int:
    """Asks for another round at once twice, then answers a count (not True): waits."""
    rounds["flood"] = rounds.get("flood", 0) + 1
    return True if rounds["flood"] <= 2 else 5


class Service:
    def __init__(self, _runtime) -> None:
        self.stopped = asyncio.Event()
        self.ended_its_round = False
        services.append(self)

    async def run(self) -> None:
        await self.stopped.wait()
        self.ended_its_round = True

    def stop(self) -> None:
        self.stopped.set()


def task(name: str, **kwargs) -> Task:
    return Task(name, frozenset({Process.WORKER}), every=lambda _settings: PERIOD, **kwargs)


@pytest.fixture(autouse=True)
def fresh():
    rounds.clear()
    services.clear()


def supervisor(*tasks: Task) -> Supervisor:
    return Supervisor(SimpleNamespace(settings=None), tasks=tasks)  # type: ignore[arg-type]


async def until(condition) -> None:
    async with asyncio.timeout(10):  # a bound, not a measurement
        while not condition():  # noqa: ASYNC110  polls what the supervisor's tasks change
            await asyncio.sleep(PERIOD)


async def test_a_failing_round_is_tried_again_and_its_failures_show_until_one_succeeds():
    watched = supervisor(task("flaky", round=f"{__name__}:flaky"))
    watched.start("flaky")
    await until(lambda: watched.state()["flaky"]["failures"] == FAILING_ROUNDS)
    failing = watched.state()["flaky"]
    assert failing["last_error"] == "ConnectionError"  # the type, never the text
    assert failing["last_success_at"] is None
    await until(lambda: watched.state()["flaky"]["last_success_at"] is not None)
    assert watched.state()["flaky"]["failures"] == 0
    assert watched.state()["flaky"]["last_error"] is None
    await watched.stop()


async def test_the_back_off_doubles_from_the_period_up_to_its_cap():
    watched = supervisor(task("flaky", round=f"{__name__}:flaky"))
    watched.start("flaky")
    state = watched._watched["flaky"].state
    delays = []
    for failures in (1, 2, 3, 20):
        state.failures = failures
        delays.append(watched._backoff(watched._watched["flaky"]))
    assert delays == [PERIOD, 2 * PERIOD, 4 * PERIOD, 10.0]
    await watched.stop()


async def test_a_round_that_answers_true_is_followed_by_another_and_any_other_answer_waits():
    watched = supervisor(task("flood", round=f"{__name__}:flood"))
    watched.start("flood")
    await until(lambda: rounds.get("flood", 0) >= 4)
    await watched.stop()
    assert watched.state() == {}  # stopped: nothing left running


async def test_a_killed_task_is_started_again_and_shows_its_restart():
    watched = supervisor(task("flood", round=f"{__name__}:flood"))
    watched.start("flood")
    await until(lambda: rounds.get("flood", 0) >= 1)
    first = watched._watched["flood"].running
    first.cancel()  # killed from outside: nothing stopped the supervisor
    await until(lambda: watched._watched["flood"].running is not first)
    assert watched.state()["flood"]["restarts"] == 1
    counted = rounds["flood"]
    await until(lambda: rounds["flood"] > counted)  # and it runs its rounds again
    await watched.stop()


async def test_a_service_whose_loop_ends_is_started_again():
    watched = supervisor(task("service", service=f"{__name__}:Service"))
    watched.start("service")
    await until(lambda: len(services) == 1)
    services[0].stop()  # its loop returns though the supervisor did not stop it
    await until(lambda: len(services) == 2)
    assert watched.state()["service"]["restarts"] == 1
    await watched.stop()


async def test_stop_asks_services_to_end_their_round_then_cancels_every_task():
    watched = supervisor(
        task("service", service=f"{__name__}:Service"), task("flood", round=f"{__name__}:flood")
    )
    watched.start("service", "flood")
    await until(lambda: len(services) == 1 and rounds.get("flood", 0) >= 1)
    running = [w.running for w in watched._watched.values()]
    await watched.stop()
    assert services[0].ended_its_round  # asked, not cut off
    assert all(each.done() for each in running)
    assert len(services) == 1  # nothing started again after the stop


def test_each_process_runs_its_declared_tasks_and_every_task_resolves():
    names = {task.name for task in TASKS}
    assert len(names) == len(TASKS)
    by_process = {
        process: {task.name for task in TASKS if process in task.processes} for process in Process
    }
    assert by_process[Process.API] == {"key_cache_invalidations"}
    assert by_process[Process.WORKER] == names - {"key_cache_invalidations"}
    assert by_process[Process.EMBEDDED] == names - {"job_sweep"}
    for each in TASKS:
        assert (each.round is None) != (each.service is None)
        assert callable(each.resolve())
