"""`python -m strongroom.jobs.child MEMORY_BYTES CPU_SECONDS`: the child process of
strongroom/jobs/bounded.py. It limits itself first, then runs the pickled call read from
stdin and writes the pickled answer, `("ok", result)` or `("error", exception)`, to stdout.
Running out of memory exits with `OUT_OF_MEMORY`; passing the CPU limit is SIGXCPU.

What the work logs (parsers warn about what they meet in a hostile file: a PDF of 50,000
nested dictionaries made pypdf write 33,013 warnings, 5.7 MB, to the service's log) goes
to stderr, at most `LOGGED_PER_LOGGER` records of each logger, then one line saying the
rest were dropped (issue 28)."""

from __future__ import annotations

import logging
import math
import os
import pickle
import resource
import sys

from strongroom.jobs.bounded import OUT_OF_MEMORY, BoundedWorkDied


def limit(memory_bytes: int, cpu_seconds: float) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    used = resource.getrusage(resource.RUSAGE_SELF)
    seconds = math.ceil(used.ru_utime + used.ru_stime + cpu_seconds)
    # SIGXCPU at the soft limit; SIGKILL a second later if it were caught.
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))


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


def _log_sparingly() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(AtMostPerLogger(LOGGED_PER_LOGGER))
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])


def main() -> None:
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything the work prints goes to stderr, not into the answer
    _log_sparingly()
    limit(int(sys.argv[1]), float(sys.argv[2]))
    try:
        function, args, kwargs = pickle.load(sys.stdin.buffer)  # noqa: S301 (from the parent)
        result = ("ok", function(*args, **kwargs))
    except MemoryError:
        os._exit(OUT_OF_MEMORY)
    except Exception as error:
        result = ("error", error)
    try:
        data = pickle.dumps(result)
    except MemoryError:
        os._exit(OUT_OF_MEMORY)
    except Exception as error:  # an exception or result that does not pickle
        data = pickle.dumps(("error", BoundedWorkDied(f"{type(error).__name__}: {error}")))
    answer.write(data)
    answer.close()


if __name__ == "__main__":
    main()
