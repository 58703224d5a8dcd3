"""What reading one file costs in memory, each read in a process of its own but the imports
paid once (issue 54: a fresh interpreter per read was most of test_ingest_limits.py's time).

`python -m tests.unit.ingest.measure` is a warm reader: it imports what reading needs, then,
for each request line on stdin (JSON: `type`, `path`, `limits`), forks a child that reads the
file's passages the way the ingestion job does and prints one JSON line: `outcome` (`ok` or
the exception's name), `detail`, `passages`, and `rss_growth_bytes`, how far reading raised
the child's peak resident memory above its resident memory before it began. The child's peak
is reset when it starts (/proc/self/clear_refs), so no read sees another's memory or the
imports' own peak; a page of the warm process first touched by the child counts as growth (an
upper bound). `WarmReader` is the tests' side of it."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

from strongroom.corpus.models import DocumentType
from strongroom.ingest.limits import IngestLimits
from strongroom.ingest.passages import read_passages

ROOT = Path(__file__).resolve().parents[3]


def _status_kib(field: str) -> int:
    """VmRSS (resident now) or VmHWM (its peak) of this process. Not `ru_maxrss`: Linux
    keeps that across exec, so a child of a large process (pytest) starts with its peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _read(request: dict) -> dict:
    """One read in this (forked) process, its peak memory counted from now."""
    Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) reset to VmRSS
    document_type, path = DocumentType(request["type"]), Path(request["path"])
    limits = IngestLimits(**request.get("limits", {}))
    before = _status_kib("VmRSS")
    result = {"outcome": "ok", "detail": "", "passages": 0}
    try:
        result["passages"] = len(read_passages(path, document_type, limits=limits).chunks)
    except Exception as error:  # reported, not raised: the caller asserts on it
        result.update(outcome=type(error).__name__, detail=str(error))
    result["rss_growth_bytes"] = (_status_kib("VmHWM") - before) * 1024
    return result


def main() -> None:
    for line in sys.stdin:
        child = os.fork()
        if child == 0:
            try:
                answer = json.dumps(_read(json.loads(line)))
            except BaseException as error:  # a broken request: said, so the test fails
                answer = json.dumps({"outcome": "measure failed", "detail": repr(error)})
            os.write(sys.stdout.fileno(), f"{answer}\n".encode())
            os._exit(0)
        _, status = os.waitpid(child, 0)
        if status != 0:  # killed, or crashed before answering
            print(json.dumps({"outcome": "measure failed", "detail": f"status {status}"}))
            sys.stdout.flush()


class WarmReader:
    """The warm reader above as a child of the tests' process, started once and asked for
    one read at a time."""

    def __init__(self, timeout_seconds: float = 600) -> None:
        self.timeout_seconds = timeout_seconds
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.unit.ingest.measure"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def measure(self, path: Path, document_type: str, **limits: int) -> dict:
        request = {"type": document_type, "path": str(path), "limits": limits}
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], self.timeout_seconds)
        assert ready, f"no answer from the warm reader in {self.timeout_seconds} s"
        answer = self.process.stdout.readline()
        assert answer, f"the warm reader stopped (exit status {self.process.poll()})"
        return json.loads(answer)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


if __name__ == "__main__":
    main()
