"""Run as `python -m tests.unit.ingest.measure TYPE PATH [LIMITS_JSON]`: read the file's
passages the way the ingestion job does, in this fresh process, and print one JSON line:
`outcome` (`ok` or the exception's name), `detail`, `passages`, and
`rss_growth_bytes`, how far reading raised the process's peak resident memory above its
resident memory once everything was imported (an upper bound: a peak left by the imports
themselves counts too)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from strongroom.corpus.models import DocumentType
from strongroom.ingest.limits import IngestLimits
from strongroom.ingest.passages import read_passages


def _status_kib(field: str) -> int:
    """VmRSS (resident now) or VmHWM (its peak) of this process. Not `ru_maxrss`: Linux
    keeps that across exec, so a child of a large process (pytest) starts with its peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def main() -> None:
    document_type, path = DocumentType(sys.argv[1]), Path(sys.argv[2])
    limits = IngestLimits(**json.loads(sys.argv[3])) if len(sys.argv) > 3 else IngestLimits()
    before = _status_kib("VmRSS")
    result = {"outcome": "ok", "detail": "", "passages": 0}
    try:
        result["passages"] = len(read_passages(path, document_type, limits=limits).chunks)
    except Exception as error:  # reported, not raised: the caller asserts on it
        result.update(outcome=type(error).__name__, detail=str(error))
    result["rss_growth_bytes"] = (_status_kib("VmHWM") - before) * 1024
    print(json.dumps(result))


if __name__ == "__main__":
    main()
