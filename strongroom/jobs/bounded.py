"""A job's blocking work (a parser) in a warm child process with its own memory and CPU
limits (issues 18, 28, 41).

Why child processes, and not threads:
- a thread shares the worker's heap: a parser that takes 8 GB takes it from the worker (or
  the API process, in the embedded default), and a thread cannot be stopped;
- `resource.setrlimit` acts on a whole process, so the limits must be set in a process that
  runs nothing else: RLIMIT_AS (address space) makes an allocation past the limit fail with
  MemoryError instead of growing the process, RLIMIT_CPU ends the process with SIGXCPU once
  it has used its CPU seconds.

Why warm ones (issue 41): a new interpreter importing the parsers costs about a second of
CPU, which every small document paid (30 small documents took 25 times their text as one).
So each process that runs jobs keeps `worker_concurrency` children started, parsers
imported, each serving one call at a time (strongroom/jobs/child.py):
- every call gets its own CPU budget: before each call the child sets its RLIMIT_CPU to the
  CPU time it has used plus `job_cpu_limit_seconds`;
- RLIMIT_AS holds for the child's whole life, and a child whose resident memory has grown
  `job_child_memory_mark_bytes` past its size after the imports, or that has served
  `job_child_max_calls` calls, or whose call raised, answers and exits: the next call gets a
  fresh one. A child that died (past a limit, a crash in C code) or was killed (its job timed
  out or was cancelled) is never reused either;
- the child is a new interpreter (`python -m strongroom.jobs.child`), not a fork: forking the
  worker would copy its threads' locks and its event loop, and multiprocessing's spawn and
  forkserver run the parent's main module again in every child.
A child that dies of either limit fails its job with `job_resource_limit` (not retried: it
would die again); the worker itself is untouched. A job timeout or cancellation kills the
child at once, so a hung parser no longer runs on after its job has ended. Waiting for the
child is asynchronous: it holds no thread.

The function and its arguments cross the process boundary by pickle (module-level functions
and plain values only: the child trusts its parent); its result or exception comes back in
the data-only format of strongroom/jobs/wire.py (issue 52): a parser compromised by a hostile
file must not run code in this process, which holds the secrets the child was stripped of. An
answer that is not that format, or holds a type wire.ANSWER_TYPES does not list, is refused:
BoundedWorkDied, and the child is killed. Both framed on the child's stdin and stdout
(strongroom/jobs/frames.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from strongroom.jobs import wire
from strongroom.jobs.frames import FrameTooLarge, header, read_frame_async
from strongroom.jobs.wire import AnswerRefused
from strongroom.settings import Settings

T = TypeVar("T")
log = logging.getLogger("strongroom.jobs")

OUT_OF_MEMORY = 86  # the child's exit status when its work ran out of memory
MAX_ANSWER_BYTES = 1024**3  # an answer is bounded by its work's own limits far below this


@dataclass(frozen=True)
class JobLimits:
    memory_bytes: int
    cpu_seconds: float
    memory_mark_bytes: int
    max_calls: int

    @classmethod
    def from_settings(cls, settings: Settings) -> JobLimits:
        return cls(
            settings.job_memory_limit_bytes,
            settings.job_cpu_limit_seconds,
            settings.job_child_memory_mark_bytes,
            settings.job_child_max_calls,
        )


class ResourceLimitExceeded(Exception):
    """The work used more memory or CPU time than its job may: fail the job, no retry."""


class BoundedWorkDied(Exception):
    """The child process ended without an answer for another reason (a crash in C code)."""


class WorkInterrupted(Exception):
    """The call was stopped, its child killed, because its job is giving a borrowed slot
    back to another tenant's job, or was cancelled (strongroom/jobs/runner.py)."""


# The interrupts of the jobs the current task runs, outermost first: a job run inside another
# (jobs.runner.run_now, a routine's step) is stopped by its own and by its caller's.
_INTERRUPTS: ContextVar[tuple[asyncio.Event, ...]] = ContextVar("strongroom_interrupts", default=())


@contextlib.contextmanager
def interruptible(interrupt: asyncio.Event) -> Iterator[None]:
    """Within it, a call of any WorkPool is stopped (WorkInterrupted) once `interrupt`, or an
    enclosing `interruptible`'s, is set: the calls are where a job spends its long seconds
    with no transaction open."""
    token = _INTERRUPTS.set((*_INTERRUPTS.get(), interrupt))
    try:
        yield
    finally:
        _INTERRUPTS.reset(token)


def raise_if_interrupted() -> None:
    """Raise WorkInterrupted if the current job's work (or an enclosing job's) was stopped:
    what work done in pieces in this process (a document's vectors) checks between pieces."""
    if any(interrupt.is_set() for interrupt in _INTERRUPTS.get()):
        raise WorkInterrupted("the job's work was stopped")


async def until_interrupted(answer: Awaitable[T]) -> T:
    """`answer`, unless the current job's work is stopped first (WorkInterrupted): a child's
    call (WorkPool.run then kills the child), or work this process hands to a thread (a piece
    of embedding), waited for no longer: the thread ends its piece, which is bounded, and its
    result is dropped."""
    interrupts = _INTERRUPTS.get()
    if not interrupts:
        return await answer
    answering = asyncio.ensure_future(answer)
    interrupted = [asyncio.ensure_future(interrupt.wait()) for interrupt in interrupts]
    try:
        await asyncio.wait({answering, *interrupted}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in interrupted:
            waiting.cancel()
        if not answering.done():
            answering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await answering
    if answering.cancelled():
        raise WorkInterrupted("the job's work was stopped")
    return answering.result()


class _Child:
    """One child process and its pipes."""

    def __init__(self, process: asyncio.subprocess.Process, limits: JobLimits) -> None:
        self.process = process
        self.limits = limits

    @classmethod
    async def start(cls, limits: JobLimits, modules: tuple[str, ...]) -> _Child:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "strongroom.jobs.child",
            str(limits.memory_bytes),
            str(limits.cpu_seconds),
            str(limits.memory_mark_bytes),
            str(limits.max_calls),
            *modules,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=_child_environment(),
        )
        return cls(process, limits)

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def call(self, payload: bytes) -> tuple[str, Any, bool]:
        """Send one call, wait for its answer; raises BoundedWorkDied or
        ResourceLimitExceeded when the child ended without one."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(header(len(payload)) + payload)
            await stdin.drain()
            answer = await read_frame_async(stdout, MAX_ANSWER_BYTES)
        except (BrokenPipeError, ConnectionResetError, asyncio.IncompleteReadError):
            returncode = await self.process.wait()
            raise _died(returncode, self.limits) from None
        except FrameTooLarge as error:
            raise BoundedWorkDied(f"The job's work process answered {error}.") from None
        try:
            return wire.loads(answer)  # data only: the child may be the hostile file's now
        except AnswerRefused as refused:
            said = f"The job's work process answered what it may not: {refused}."
            raise BoundedWorkDied(said) from None

    async def kill(self) -> None:
        if self.alive:
            self.process.kill()
        await asyncio.shield(self.process.wait())


class WorkPool:
    """Warm bounded children of one process (a worker, the embedded default's server).

    Children are started on demand, or ahead of need by `warm()` (the processes that run
    jobs call it at start); after a call that kept it, a child waits for the next, up to
    `size` idle children. Once warmed, the pool starts a new child in the background for
    each one that ends, so `size` stay ready."""

    def __init__(self, settings: Settings, modules: tuple[str, ...] = ()) -> None:
        self.limits = JobLimits.from_settings(settings)
        self.size = settings.worker_concurrency
        self.warm_at_start = settings.job_warm_children_at_start
        self.modules = modules  # imported by every child before its first call
        self._idle: list[_Child] = []
        self._busy: set[_Child] = set()
        self._starting: set[asyncio.Task[None]] = set()
        self._warm = False
        self._closed = False

    async def run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`function(*args, **kwargs)` in a child limited to the settings'
        `job_memory_limit_bytes` and `job_cpu_limit_seconds`. Its exceptions are raised here;
        raises ResourceLimitExceeded past a limit, BoundedWorkDied if the child crashed."""
        payload = pickle.dumps((function, args, kwargs))
        child = await self._take()
        self._busy.add(child)
        try:
            outcome, value, keep = await until_interrupted(child.call(payload))
        except BaseException:
            await child.kill()  # died, or cancelled (a job timeout): the work stops with it
            raise
        else:
            if keep and not self._closed and len(self._idle) < self.size:
                self._idle.append(child)
            else:
                await child.kill()  # idle, or ending itself: nothing of it to lose
        finally:
            self._busy.discard(child)
            self._replenish()
        if outcome == "ok":
            return value
        raise value

    async def _take(self) -> _Child:
        """An idle child that is still alive (one killed while it waited, by the kernel's
        OOM killer say, must not fail an innocent document), else a new one."""
        while self._idle:
            child = self._idle.pop()
            if child.alive:
                return child
            await child.kill()  # reaped
        return await _Child.start(self.limits, self.modules)

    def warm(self) -> None:
        """Start `size` children now, parsers imported before the first job needs them, and
        keep `size` ready from now on (unless `job_warm_children_at_start` is off)."""
        self._warm = self.warm_at_start
        self._replenish()

    @property
    def children(self) -> int:
        """Children of this pool now running or starting (idle or busy)."""
        return len(self._idle) + len(self._busy) + len(self._starting)

    def _replenish(self) -> None:
        if not self._warm or self._closed:
            return
        self._idle = [child for child in self._idle if child.alive]
        for _ in range(self.size - self.children):
            task = asyncio.create_task(self._start_idle())
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _start_idle(self) -> None:
        try:
            child = await _Child.start(self.limits, self.modules)
        except OSError:
            log.exception("could not start a parsing child; the next job starts its own")
            return
        if self._closed:
            await child.kill()
        else:
            self._idle.append(child)

    async def close(self) -> None:
        """Kill every child: an idle one holds nothing, a busy one's job has been cancelled
        by now."""
        self._closed = True
        for task in list(self._starting):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        children, self._idle = [*self._idle, *self._busy], []
        await asyncio.gather(*(child.kill() for child in children))


_INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")


def _child_environment() -> dict[str, str]:
    """What the child needs and nothing more: the parent's module path, and no secret
    (keys, peppers, cloud credentials) within reach of a parser fed hostile bytes."""
    kept = {name: os.environ[name] for name in _INHERITED if name in os.environ}
    return kept | {"PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}


def _died(returncode: int | None, limits: JobLimits) -> Exception:
    if returncode == OUT_OF_MEMORY:
        return ResourceLimitExceeded(
            f"The job needed more than its memory limit of {limits.memory_bytes} bytes."
        )
    if returncode == -signal.SIGXCPU:
        return ResourceLimitExceeded(
            f"The job used more than its CPU time limit of {limits.cpu_seconds:g} seconds."
        )
    if returncode == -signal.SIGKILL:
        return ResourceLimitExceeded(
            "The job's work process was killed (the node's or container's memory, most likely)."
        )
    return BoundedWorkDied(f"The job's work process ended unexpectedly (exit status {returncode}).")
