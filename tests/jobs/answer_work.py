"""Work for the children of tests/jobs/test_answers_are_data.py (issue 52): results of
every kind, and a child that answers as a compromised parser would. No heavy imports."""

from __future__ import annotations

import os
import pickle
import stat
from pathlib import Path
from typing import Any

from strongroom.ingest.limits import UnreadableDocument
from strongroom.jobs.frames import header


def echo(value: Any) -> Any:
    return value


def raise_(error: BaseException) -> None:
    raise error


class Evil:
    """Unpickling it creates a file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


class ReaderQuirk(UnreadableDocument):
    """A parser's own kind of unreadable document, which no list names."""


class ParserBug(Exception):
    pass


def evil(path: str) -> Evil:
    return Evil(path)


def a_function() -> Any:
    return echo


def unlisted_error(message: str) -> None:
    raise ParserBug(message)


def reader_quirk(message: str) -> None:
    raise ReaderQuirk(message)


def answer_with_a_pickle(path: str) -> int:
    """As a parser compromised by its file: write a pickled answer (whose unpickling would
    create `path`) on the child's answer pipe itself, before the child's own answer."""
    answers = _answer_pipe()
    payload = pickle.dumps(("ok", Evil(path), True))
    os.write(answers, header(len(payload)) + payload)
    return os.getpid()


def _answer_pipe() -> int:
    """The child's answer pipe: its stdout once, kept under another descriptor (fd 1 is
    stderr's now)."""
    taken = {os.fstat(fd).st_ino for fd in (0, 1, 2)}
    for fd in sorted(int(name) for name in os.listdir("/proc/self/fd")):
        try:
            status = os.fstat(fd)
        except OSError:
            continue
        if fd > 2 and stat.S_ISFIFO(status.st_mode) and status.st_ino not in taken:
            return fd
    raise LookupError("no answer pipe")
