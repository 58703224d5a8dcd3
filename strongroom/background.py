"""Background work, declared once and run by one supervisor (issue 54).

Every task a process runs beside its requests or jobs is a line of `TASKS`: its name, what
one round does (or, for a service, what runs until stopped), how often, and which processes
run it. A `Supervisor` starts a process's tasks, and:
- a round that raises is logged with the task's name and tried again after a back-off that
  doubles from the task's period up to `max(period, BACKOFF_CAP_SECONDS)`, then the period
  again once a round succeeds;
- a task that ends when nothing stopped it (cancelled from outside, a service whose loop
  returned or raised) is started again after the same back-off, and counted;
- `stop()` is the one shutdown path: services are asked to stop first (a webhook round ends
  rather than be cut off mid-statement), then every task is cancelled until done;
- `state()` is what `/readyz` shows for each task (its last round, last success, failures,
  restarts), and `strongroom_background_rounds_total` / `_restarts_total` count the same.

The work itself stays in its area (`routines.fire`, `outbox.dispatch`, `tenant_erasure`,
...), imported when a task starts, so a process that does not run a task never imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from strongroom.db.types import utcnow
from strongroom.metrics import BACKGROUND_RESTARTS, BACKGROUND_ROUNDS

if TYPE_CHECKING:
    from strongroom.settings import Settings


class Runtime(Protocol):
    """What the supervisor reads of the process's runtime (strongroom.runtime.Runtime, which
    holds the supervisor); the tasks' rounds take the whole of it."""

    settings: Settings


log = logging.getLogger("strongroom.background")

BACKOFF_CAP_SECONDS = 10.0  # a failing task with a shorter period waits at most this long


class Process(StrEnum):
    """The processes that run background work."""

    API = "api"  # `strongroom serve` on PostgreSQL: requests only
    EMBEDDED = "embedded"  # the embedded default's one process: requests and jobs
    WORKER = "worker"  # `strongroom worker`: jobs


class Running(Protocol):
    """A service: runs until `stop()` (or cancelled)."""

    async def run(self) -> None: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class Task:
    """One background task. Exactly one of `round` (periodic: one round; a round that
    answers True, not merely something true, is followed by another at once) and `service`
    (what runs until stopped) is given, each as "module:callable" taking the process's
    Runtime."""

    name: str
    processes: frozenset[Process]
    every: Callable[[Settings], float]  # seconds between rounds; a service's restart back-off
    round: str | None = None
    service: str | None = None
    first_round_waits: bool = False  # the first round after one period, not at start

    def resolve(self) -> Callable[[Runtime], Any]:
        module, _, name = (self.round or self.service or "").partition(":")
        return getattr(importlib.import_module(module), name)


def _seconds(value: float) -> Callable[[Settings], float]:
    return lambda _settings: value


TASKS = (
    Task(
        "key_cache_invalidations",  # revoked keys and spent credits reach every process (D16)
        frozenset({Process.API, Process.EMBEDDED}),
        every=_seconds(1.0),
        service="strongroom.auth.invalidation:KeyCacheListener",
    ),
    Task(
        "webhook_delivery",  # the outbox, where jobs run (their events among the rest)
        frozenset({Process.EMBEDDED, Process.WORKER}),
        every=_seconds(1.0),
        service="strongroom.outbox.dispatch:Dispatcher",
    ),
    Task(
        "routine_fires",  # due scheduled routines, each fire once (issue 43)
        frozenset({Process.EMBEDDED, Process.WORKER}),
        every=_seconds(1.0),
        round="strongroom.routines.fire:tick",
    ),
    Task(
        "job_sweep",  # a dead worker's jobs and lost pending jobs queued again (D46)
        frozenset({Process.WORKER}),
        every=lambda settings: settings.worker_sweep_seconds,
        round="strongroom.worker:sweep",
        first_round_waits=True,
    ),
    Task(
        "idempotency_expiry",  # durable Idempotency-Key records past the replay window
        frozenset({Process.EMBEDDED, Process.WORKER}),
        every=_seconds(3600.0),
        round="strongroom.idempotency.guard:delete_expired",
    ),
    Task(
        "blob_sweep",  # stored files a deletion killed half-way left (issue 42)
        frozenset({Process.EMBEDDED, Process.WORKER}),
        every=lambda settings: settings.blob_sweep_seconds,
        round="strongroom.vault.blob_sweep:sweep_round",
    ),
    Task(
        "tenant_erasure",  # deleted tenants' data, when due (issue 42)
        frozenset({Process.EMBEDDED, Process.WORKER}),
        every=lambda settings: settings.tenant_erasure_check_seconds,
        round="strongroom.tenant_erasure:erase_due_tenants",
    ),
)


@dataclass
class TaskState:
    """What one task has done in this process."""

    started_at: datetime
    last_round_at: datetime | None = None
    last_success_at: datetime | None = None
    failures: int = 0  # rounds that raised, in a row
    restarts: int = 0
    last_error: str | None = None  # the exception's type: never its text (it may hold a secret)

    def shown(self) -> dict[str, Any]:
        def at(moment: datetime | None) -> str | None:
            return moment.isoformat() if moment is not None else None

        return {
            "started_at": at(self.started_at),
            "last_round_at": at(self.last_round_at),
            "last_success_at": at(self.last_success_at),
            "failures": self.failures,
            "restarts": self.restarts,
            "last_error": self.last_error,
        }


@dataclass
class _Watched:
    task: Task
    state: TaskState
    running: asyncio.Task | None = None
    service: Running | None = None
    restart: asyncio.TimerHandle | None = None
    launched_at: float = 0.0  # the loop's clock when it was last started
    restarts_in_a_row: int = 0  # since its last good round (or a service's run of the cap)


@dataclass
class Supervisor:
    """Starts, watches and stops one process's background tasks."""

    runtime: Runtime
    tasks: tuple[Task, ...] = TASKS
    _watched: dict[str, _Watched] = field(default_factory=dict)
    _stopping: bool = False

    def start_for(self, process: Process) -> None:
        """Start every task `process` runs."""
        self.start(*(task.name for task in self.tasks if process in task.processes))

    def start(self, *names: str) -> None:
        """Start the named tasks (each once: a running task is left as it is)."""
        self._stopping = False
        for name in names:
            if name not in self._watched:
                (task,) = (task for task in self.tasks if task.name == name)
                watched = _Watched(task, TaskState(started_at=utcnow()))
                self._watched[name] = watched
                self._launch(watched)

    def state(self) -> dict[str, dict[str, Any]]:
        return {name: watched.state.shown() for name, watched in sorted(self._watched.items())}

    async def stop(self) -> None:
        """Ask the services to stop, give them 2 s to end their round, then cancel every
        task until it is done."""
        self._stopping = True
        for watched in self._watched.values():
            if watched.restart is not None:
                watched.restart.cancel()
            if watched.service is not None:
                watched.service.stop()
        services = {w.running for w in self._watched.values() if w.service and w.running}
        if services:
            await asyncio.wait(services, timeout=2)
        for watched in self._watched.values():
            if watched.running is not None:
                await _cancelled(watched.running)
        self._watched.clear()

    def _launch(self, watched: _Watched) -> None:
        watched.restart = None
        watched.launched_at = asyncio.get_running_loop().time()
        body = self._service if watched.task.service else self._periodic
        watched.running = asyncio.create_task(body(watched), name=watched.task.name)
        watched.running.add_done_callback(lambda _done: self._ended(watched))

    def _ended(self, watched: _Watched) -> None:
        """A task that ended while nothing stopped it is started again after a back-off."""
        if self._stopping or self._watched.get(watched.task.name) is not watched:
            return
        watched.state.restarts += 1
        BACKGROUND_RESTARTS.labels(watched.task.name).inc()
        loop = asyncio.get_running_loop()
        if loop.time() - watched.launched_at >= self._cap(watched):
            watched.restarts_in_a_row = 0  # it ran as long as the longest back-off: recovered
        watched.restarts_in_a_row += 1
        delay = self._backoff(watched)
        log.error("background task %s ended; starting it again in %.1f s", watched.task.name, delay)
        watched.restart = loop.call_later(delay, self._launch, watched)

    def _backoff(self, watched: _Watched) -> float:
        """Doubling from the period with the failures or restarts in a row, never past the cap.
        Restarts count only since the task last did well, so one restart long ago does not
        make every later failure wait the cap."""
        period = watched.task.every(self.runtime.settings)
        doublings = max(watched.state.failures, watched.restarts_in_a_row) - 1
        return min(period * 2 ** min(max(doublings, 0), 16), self._cap(watched))

    def _cap(self, watched: _Watched) -> float:
        return max(watched.task.every(self.runtime.settings), BACKOFF_CAP_SECONDS)

    async def _periodic(self, watched: _Watched) -> None:
        task, state = watched.task, watched.state
        round_of = task.resolve()
        if task.first_round_waits:
            await asyncio.sleep(task.every(self.runtime.settings))
        while True:
            state.last_round_at = utcnow()
            try:
                again = (await round_of(self.runtime)) is True
            except Exception as error:
                state.failures += 1
                state.last_error = type(error).__name__
                BACKGROUND_ROUNDS.labels(task.name, "failed").inc()
                delay = self._backoff(watched)
                log.exception("background task %s failed; trying again in %.1f s", task.name, delay)
            else:
                state.failures, state.last_error = 0, None
                watched.restarts_in_a_row = 0
                state.last_success_at = utcnow()
                BACKGROUND_ROUNDS.labels(task.name, "succeeded").inc()
                delay = 0.0 if again else task.every(self.runtime.settings)
            await asyncio.sleep(delay)

    async def _service(self, watched: _Watched) -> None:
        watched.service = watched.task.resolve()(self.runtime)
        watched.state.last_round_at = utcnow()
        try:
            await watched.service.run()
        except Exception as error:
            watched.state.last_error = type(error).__name__
            log.exception("background task %s failed", watched.task.name)
        finally:
            watched.service = None


async def _cancelled(task: asyncio.Task) -> None:
    # Cancel until done: on Python 3.11 a cancel that lands as redis-py's read timeout
    # fires can be turned into a TimeoutError and swallowed.
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=0.5)
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
