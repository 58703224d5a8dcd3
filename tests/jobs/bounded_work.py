"""Work for the child processes of tests/jobs/test_job_resource_limits.py. A module of its
own with no heavy imports: the child imports it, within its CPU limit."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

MiB = 1024 * 1024


def allocate(megabytes: int) -> int:
    """As a parser that builds a huge tree: memory it touches."""
    block = bytearray(megabytes * MiB)
    return len(block)


def spin(seconds: float) -> None:
    """As a parser stuck in a quadratic loop: CPU time."""
    deadline = time.process_time() + seconds
    while time.process_time() < deadline:
        pass


def fail(message: str) -> None:
    raise ValueError(message)


def sleep_and_report(pid_file: str, seconds: float) -> None:
    Path(pid_file).write_text(str(os.getpid()))
    time.sleep(seconds)


def environment() -> dict[str, str]:
    return dict(os.environ)


def warn(times: int) -> int:
    """Log `times` warnings as a parser does on a hostile file."""
    for _ in range(times):
        logging.getLogger("pypdf._reader").warning("Ignoring wrong pointing object")
    return times


def pid() -> int:
    return os.getpid()


_KEPT: list[bytearray] = []


def leak(megabytes: int) -> int:
    """As a parser's module that keeps what it read: memory that outlives the call."""
    _KEPT.append(bytearray(megabytes * MiB))
    return os.getpid()
