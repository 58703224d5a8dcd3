"""`python -m strongroom.jobs.child MEMORY_BYTES CPU_SECONDS MARK_BYTES MAX_CALLS [MODULE...]`:
a warm child process of strongroom/jobs/bounded.py's WorkPool (issue 41).

It limits its address space (RLIMIT_AS) first, imports the MODULEs (the parsers) within one
call's CPU budget, then serves calls read from stdin, one at a time, each a frame
(strongroom.jobs.frames) holding a pickled `(function, args, kwargs)`. Before each call it
sets RLIMIT_CPU to the CPU time it has used plus CPU_SECONDS, so every call has its own CPU
budget however long the child has lived; the answer frame is `(outcome, value, keep)` with
outcome `"ok"` (value: the result) or `"error"` (value: the exception), in the data-only
format of strongroom/jobs/wire.py, never pickle (issue 52: the parent holds the secrets this
process was stripped of, and a parser compromised by a hostile file writes what it likes
here). A result or exception of a type an answer may not hold is answered as
BoundedWorkDied. Running out of memory exits with `OUT_OF_MEMORY`; passing the CPU budget is
SIGXCPU.

`keep` says whether the child serves another call. It does not after an error (a parser
that raised may have left something half-built), once it has served MAX_CALLS, or once its
resident memory has grown past its size after the imports by MARK_BYTES (what one document
left behind is not lent to the next); it then exits after answering, and the pool starts
another. End of stdin ends it too.

What the work logs (parsers warn about what they meet in a hostile file: a PDF of 50,000
nested dictionaries made pypdf write 33,013 warnings, 5.7 MB, to the service's log) goes
to stderr, at most `LOGGED_PER_LOGGER` records of each logger in each call, then one line
saying the rest were dropped (issue 28)."""

from __future__ import annotations

import gc
import importlib
import logging
import math
import os
import pickle
import resource
import sys
from typing import Any

from strongroom.jobs import wire
from strongroom.jobs.bounded import OUT_OF_MEMORY, BoundedWorkDied
from strongroom.jobs.frames import read_frame, write_frame


def limit_memory(memory_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))


def limit_cpu(cpu_seconds: float) -> None:
    """SIGXCPU once this process has used `cpu_seconds` more CPU time than it has so far.
    The hard limit is left as it is: a process may raise its soft limit up to the hard one,
    never the hard one itself, and the next call needs a higher soft limit."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    seconds = math.ceil(used.ru_utime + used.ru_stime + cpu_seconds)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        seconds = min(seconds, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, hard))


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


LOGGED_PER_LOGGER = 20


class AtMostPerLogger(logging.Filter):
    """Lets through the first `limit` records of each logger, and a note for the next."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.seen: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        count = self.seen[record.name] = self.seen.get(record.name, 0) + 1
        if count == self.limit + 1:
            record.msg, record.args = "further records of %s dropped (issue 28)", (record.name,)
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            return True
        return count <= self.limit


def _log_sparingly() -> AtMostPerLogger:
    quota = AtMostPerLogger(LOGGED_PER_LOGGER)
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(quota)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    return quota


def _serve_one(call: bytes) -> tuple[str, Any]:
    try:
        function, args, kwargs = pickle.loads(call)  # noqa: S301 (from the parent)
        return "ok", function(*args, **kwargs)
    except MemoryError:
        os._exit(OUT_OF_MEMORY)
    except Exception as error:
        try:
            return "error", wire.sendable_error(error)
        except MemoryError:
            os._exit(OUT_OF_MEMORY)


def _answer(outcome: str, value: Any, keep: bool) -> list[bytes]:
    try:
        return wire.dumps(outcome, value, keep)
    except MemoryError:
        os._exit(OUT_OF_MEMORY)
    except Exception as error:  # AnswerRefused; RecursionError for a value nested too deep
        said = str(error) if isinstance(error, wire.AnswerRefused) else repr(error)
        return wire.dumps("error", BoundedWorkDied(f"The job's work {said}."), False)


def main() -> None:
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything the work prints goes to stderr, not into the answers
    calls = sys.stdin.buffer
    quota = _log_sparingly()
    memory, cpu, mark, most = (
        int(sys.argv[1]),
        float(sys.argv[2]),
        int(sys.argv[3]),
        int(sys.argv[4]),
    )
    limit_memory(memory)
    limit_cpu(cpu)
    try:
        for module in sys.argv[5:]:
            importlib.import_module(module)
    except MemoryError:
        os._exit(OUT_OF_MEMORY)
    gc.collect()
    gc.freeze()  # the imports' objects: never scanned again, never copied by a collection
    start = resident_bytes()
    for served in range(1, most + 1):
        call = read_frame(calls)
        if call is None:
            return  # the pool closed our stdin
        limit_cpu(cpu)
        quota.seen.clear()
        outcome, value = _serve_one(call)
        del call
        gc.collect()
        keep = outcome == "ok" and served < most and resident_bytes() - start < mark
        write_frame(answers, _answer(outcome, value, keep))
        del value
        if not keep:
            return


if __name__ == "__main__":
    main()
