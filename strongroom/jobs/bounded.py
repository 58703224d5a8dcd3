"""A job's blocking work (a parser) in a child process with its own memory and CPU limits
(issue 18).

Why a fresh child process per call, and not a thread or a shared pool:
- a thread shares the worker's heap: a parser that takes 8 GB takes it from the worker (or
  the API process, in the embedded default), and a thread cannot be stopped;
- `resource.setrlimit` acts on a whole process, so the limits must be set in a process that
  runs nothing else: RLIMIT_AS (address space) makes an allocation past the limit fail with
  MemoryError instead of growing the process, RLIMIT_CPU ends the process with SIGXCPU once
  it has used its CPU seconds;
- RLIMIT_CPU counts a process's whole life, so a pooled process would carry one job's CPU
  time into the next: a fresh process per call gives each call its own budget;
- the child is a new interpreter (`python -m strongroom.jobs.child`), not a fork: forking the
  worker would copy its threads' locks and its event loop, and multiprocessing's spawn and
  forkserver run the parent's main module again in every child. Starting one costs a few
  hundred milliseconds, small beside the parsing it bounds.
A child that dies of either limit fails its job with `job_resource_limit` (not retried: it
would die again); the worker itself is untouched. A job timeout or cancellation kills the
child at once, so a hung parser no longer runs on after its job has ended. Waiting for the
child is asynchronous: it holds no thread.

The function, its arguments, its result and its exceptions cross the process boundary by
pickle (module-level functions and plain values only): the call on the child's stdin, the
answer on its stdout (strongroom/jobs/child.py).
"""

from __future__ import annotations

import asyncio
import os
import pickle
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from strongroom.settings import Settings

T = TypeVar("T")

OUT_OF_MEMORY = 86  # the child's exit status when its work ran out of memory
_CPU_SIGNALS = {-signal.SIGXCPU, -signal.SIGKILL}


@dataclass(frozen=True)
class JobLimits:
    memory_bytes: int
    cpu_seconds: float


class ResourceLimitExceeded(Exception):
    """The work used more memory or CPU time than its job may: fail the job, no retry."""


class BoundedWorkDied(Exception):
    """The child process ended without an answer for another reason (a crash in C code)."""


async def run_bounded(
    settings: Settings, function: Callable[..., T], *args: Any, **kwargs: Any
) -> T:
    """`function(*args, **kwargs)` in a fresh child process limited to the settings'
    `job_memory_limit_bytes` and `job_cpu_limit_seconds`. Its exceptions are raised here;
    raises ResourceLimitExceeded past a limit, BoundedWorkDied if the child crashed."""
    limits = JobLimits(settings.job_memory_limit_bytes, settings.job_cpu_limit_seconds)
    call = pickle.dumps((function, args, kwargs))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "strongroom.jobs.child",
        str(limits.memory_bytes),
        str(limits.cpu_seconds),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=_child_environment(),
    )
    try:
        answer, _ = await process.communicate(call)
    finally:
        if process.returncode is None:
            process.kill()  # cancelled (a job timeout): the work stops with its job
            await asyncio.shield(process.wait())
    if process.returncode == 0 and answer:
        # Written by our own child.py (the hostile bytes are its input, never its answer).
        outcome, value = pickle.loads(answer)  # noqa: S301
        if outcome == "ok":
            return value
        raise value
    return _died(process.returncode, limits)


_INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")


def _child_environment() -> dict[str, str]:
    """What the child needs and nothing more: the parent's module path, and no secret
    (keys, peppers, cloud credentials) within reach of a parser fed hostile bytes."""
    kept = {name: os.environ[name] for name in _INHERITED if name in os.environ}
    return kept | {"PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}


def _died(returncode: int | None, limits: JobLimits) -> Any:
    if returncode == OUT_OF_MEMORY:
        raise ResourceLimitExceeded(
            f"The job needed more than its memory limit of {limits.memory_bytes} bytes."
        )
    if returncode in _CPU_SIGNALS:
        raise ResourceLimitExceeded(
            f"The job used more than its CPU time limit of {limits.cpu_seconds:g} seconds."
        )
    raise BoundedWorkDied(f"The job's work process ended unexpectedly (exit status {returncode}).")
