"""Hostile ingestion benchmark (issue 18): peak memory and time of the ingestion path
(extraction and chunking, what the worker runs in a thread) for the small files that cost
most, before and after the bounds. Prints a Markdown table; `--record` appends it, with the
machine and the date, to bench/RESULTS.md.

`--job-path` (issue 28) measures instead what the ingestion job costs the service process
(the worker, or the API process in the embedded default) for issue 28's inputs: before, the
job read, chunked and indexed the file in a thread of that process; after, in a bounded
child process (`run_bounded`, default limits; since issue 41 a warm child of `WorkPool`).
The service's peak memory above its resident size, its own CPU seconds and its children's.

Each file is read in a fresh process (`python -c`, the venv's interpreter) with the code of
one tree on its path: "before" is a git worktree of `--before` (default: the commit before
the bounds), "after" this checkout. Peak memory is the process's VmHWM minus its VmRSS once
the modules are imported. Each read runs under an address-space cap (`--memory-cap-gib`, so
the machine survives the "before" column) and a time cap (`--timeout`): past them the cell
says so.

    .venv/bin/python bench/hostile_bench.py [--before REF] [--record]
    .venv/bin/python bench/hostile_bench.py --job-path --before 6bfc42d [--record]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.documents import make_docx  # noqa: E402
from tests.unit.ingest.hostile import (  # noqa: E402
    bold_html,
    docx_of_empty_paragraphs,
    docx_of_long_text_nodes,
    one_letter_csv,
    one_paragraph,
    pdf_sharing_one_stream,
    xlsx_sharing_one_string,
)

MiB = 1024 * 1024
BEFORE = "5347241"  # the last commit before the ingestion bounds (issue 18)

PROBE = r"""
import json, sys, time
from pathlib import Path

def kib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])

from strongroom.corpus.models import DocumentType
kind, path = DocumentType(sys.argv[1]), Path(sys.argv[2])
try:
    from strongroom.ingest.limits import IngestLimits
    from strongroom.ingest.passages import read_passages

    def run():
        return len(read_passages(path, kind, limits=IngestLimits()).chunks)
except ImportError:  # the code before the bounds
    from strongroom.ingest.chunking import chunk_pages
    from strongroom.ingest.extract import extract_pages

    def run():
        return len(chunk_pages(extract_pages(path, kind, max_unzipped=512 * 1024 * 1024)))

resident = kib("VmRSS")
started = time.perf_counter()
try:
    outcome, passages = "ok", run()
except MemoryError:
    outcome, passages = "MemoryError", 0
except Exception as error:
    outcome, passages = type(error).__name__, 0
print(json.dumps({"outcome": outcome, "passages": passages,
                  "seconds": time.perf_counter() - started,
                  "peak_mib": (kib("VmHWM") - resident) / 1024}))
"""

# What the ingestion job runs in the service process (issue 28): the file read in a thread
# of it (before) or in a bounded child process (after). One line of JSON.
JOB_PROBE = r"""
import asyncio, json, os, resource, sys, time
from pathlib import Path
from types import SimpleNamespace

def kib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])

def cpu(who):
    used = resource.getrusage(who)
    return used.ru_utime + used.ru_stime

from strongroom.corpus.models import DocumentType
from strongroom.ingest.limits import IngestLimits
kind, path = DocumentType(sys.argv[1]), Path(sys.argv[2])
limits = IngestLimits()
settings = SimpleNamespace(
    job_memory_limit_bytes=1 << 30,
    job_cpu_limit_seconds=300.0,
    job_child_memory_mark_bytes=256 << 20,
    job_child_max_calls=500,
    worker_concurrency=2,
    job_warm_children_at_start=True,
)
try:
    from strongroom.ingest.passages import read_indexed_passages
    from strongroom.jobs.bounded import WorkPool

    async def job():  # a warmed pool, as the processes that run jobs have (issue 41)
        pool = WorkPool(settings, ("strongroom.ingest.passages",))
        pool.warm()
        try:
            return await pool.run(read_indexed_passages, path, kind, limits=limits)
        finally:
            await pool.close()
except ImportError:
    try:  # issue 28: a new bounded child per call
        from strongroom.ingest.passages import read_indexed_passages
        from strongroom.jobs.bounded import run_bounded

        async def job():
            return await run_bounded(settings, read_indexed_passages, path, kind, limits=limits)
    except ImportError:  # before issue 28: in a thread of the service
        from strongroom.ingest.passages import read_passages
        from strongroom.text.analysis import index_texts

        def read():
            passages = read_passages(path, kind, limits=limits)
            return index_texts([chunk.content for chunk in passages.chunks])

        async def job():
            return await asyncio.to_thread(read)

resident, own, started = kib("VmRSS"), cpu(resource.RUSAGE_SELF), time.perf_counter()
try:
    asyncio.run(job())
    outcome = "ok"
except MemoryError:
    outcome = "MemoryError"
except Exception as error:
    outcome = type(error).__name__
print(json.dumps({"outcome": outcome, "seconds": time.perf_counter() - started,
                  "peak_mib": (kib("VmHWM") - resident) / 1024,
                  "service_cpu": cpu(resource.RUSAGE_SELF) - own,
                  "child_cpu": cpu(resource.RUSAGE_CHILDREN)}), flush=True)
os._exit(0)  # a thread still parsing would keep the process alive: it is counted above
"""


def job_inputs() -> list[tuple[str, str, bytes]]:
    """(row label, document type, bytes): issue 28's files."""
    return [
        ("PDF, 10,000 pages sharing one 64 KiB content stream", "pdf",
         pdf_sharing_one_stream(10_000, 64 * 1024)),
        ("XLSX, one 8 MB shared string in 10,000 cells", "xlsx",
         xlsx_sharing_one_string(8_000_000, 10_000)),
        ("DOCX, 53 text nodes of 9 MB", "docx", docx_of_long_text_nodes(53, 9_000_000)),
    ]  # fmt: skip


def inputs() -> list[tuple[str, str, bytes]]:
    """(row label, document type, bytes): the rows of issue 18's table."""
    return [
        ("DOCX, document.xml inflating to 100 MiB of `<w:p/>`", "docx",
         docx_of_empty_paragraphs(100 * MiB)),
        ("PDF, 100 pages sharing one 1 MiB content stream", "pdf",
         pdf_sharing_one_stream(100, MiB)),
        ("HTML, 10 MB of `<b>a</b>`", "html", bold_html(10 * MiB)),
        ("CSV, 10 MB of `a\\n`", "csv", one_letter_csv(10 * MiB)),
        ("text, one 5 MB paragraph without a sentence end", "text", one_paragraph(5 * MiB)),
        ("text, one 20 MB paragraph without a sentence end", "text", one_paragraph(20 * MiB)),
        ("DOCX, one 5 MB paragraph without a sentence end", "docx",
         make_docx([one_paragraph(5 * MiB).decode()])),
    ]  # fmt: skip


def _status_mib(pid: int, field: str) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def probe(
    tree: Path, kind: str, path: Path, timeout: float, cap_bytes: int, script: str = PROBE
) -> dict:
    """Read `path` in a fresh process running `tree`'s code. A read still running after
    `timeout` is killed; its peak so far (polled from /proc) is reported with it."""

    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    env = {**os.environ, "PYTHONPATH": str(tree)}
    process = subprocess.Popen(
        [sys.executable, "-c", script, kind, str(path)],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limit,  # no threads in this process: safe
    )
    deadline = time.monotonic() + timeout
    peak = 0.0
    while process.poll() is None and time.monotonic() < deadline:
        peak = max(peak, _status_mib(process.pid, "VmHWM") or 0.0)
        time.sleep(0.2)
    if process.poll() is None:
        process.kill()
        process.communicate()
        return {"outcome": f"stopped after {timeout:.0f} s", "peak_mib": peak}
    stdout, stderr = process.communicate()
    if process.returncode != 0 or not stdout.strip():
        return {"outcome": f"crashed ({stderr.strip().splitlines()[-1:]})", "peak_mib": peak}
    return json.loads(stdout.strip().splitlines()[-1])


def job_cell(result: dict) -> str:
    if "seconds" not in result:
        return f"{result['outcome']}, service peak {result['peak_mib']:,.0f} MiB so far"
    return (
        f"`{result['outcome']}` in {result['seconds']:.1f} s; service: peak "
        f"{result['peak_mib']:,.0f} MiB, {result['service_cpu']:.1f} CPU s; child "
        f"{result['child_cpu']:.1f} CPU s"
    )


def cell(result: dict) -> str:
    if "seconds" not in result:  # stopped or crashed: the process's whole peak, imports too
        return f"{result['outcome']}, peak {result['peak_mib']:,.0f} MiB so far"
    outcome = result["outcome"]
    what = f"{result['passages']:,} passages" if outcome == "ok" else f"`{outcome}`"
    return f"{result['peak_mib']:,.0f} MiB, {result['seconds']:.2f} s, {what}"


@contextlib.contextmanager
def before_and_scratch(ref: str) -> Iterator[tuple[Path, Path]]:
    """A scratch directory holding a git worktree of `ref` (the "before" tree), removed after."""
    with tempfile.TemporaryDirectory(prefix="hostile-bench-") as scratch:
        before_tree = Path(scratch) / "before"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(before_tree), ref],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        try:
            yield before_tree, Path(scratch)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(before_tree)],
                cwd=ROOT, check=False, capture_output=True,
            )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default=BEFORE, help="git ref of the 'before' code")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per read")
    parser.add_argument("--memory-cap-gib", type=float, default=6.0)
    parser.add_argument("--record", action="store_true", help="append to bench/RESULTS.md")
    parser.add_argument(
        "--job-path", action="store_true", help="issue 28: the job's cost to the service"
    )
    args = parser.parse_args()
    if args.job_path:
        job_path(args)
        return
    cap = int(args.memory_cap_gib * 1024 * MiB)
    with before_and_scratch(args.before) as (before_tree, scratch):
        rows = []
        for label, kind, data in inputs():
            path = scratch / f"input-{len(rows)}"
            path.write_bytes(data)
            results = [probe(tree, kind, path, args.timeout, cap) for tree in (before_tree, ROOT)]
            size = f"{len(data) / 1024:,.1f} KB"
            rows.append(f"| {label} | {size} | {cell(results[0])} | {cell(results[1])} |")
            print(rows[-1], flush=True)
    after = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    table = "\n".join(
        [
            "| input | file | before: peak RSS, time, result | after: peak RSS, time, result |",
            "|---|---|---|---|",
            *rows,
        ]
    )
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f} at the end"
    )
    section = (
        f"\n## {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC: hostile ingestion "
        f"(issue 18), {machine}\n\n"
        f"`bench/hostile_bench.py`: extraction and chunking of each file in a fresh process, "
        f"before ({args.before}) and after ({after}) the bounds; peak RSS above the "
        f"process's resident size once imported; each read capped at "
        f"{args.memory_cap_gib:g} GiB of address space and {args.timeout:.0f} s. Default "
        f"limits (docs/configuration.md).\n\n{table}\n"
    )
    print(section)
    if args.record:
        with open(ROOT / "bench" / "RESULTS.md", "a") as results:
            results.write(section)


def job_path(args: argparse.Namespace) -> None:
    cap = int(args.memory_cap_gib * 1024 * MiB)
    with before_and_scratch(args.before) as (before_tree, scratch):
        rows = []
        for label, kind, data in job_inputs():
            path = scratch / f"input-{len(rows)}"
            path.write_bytes(data)
            before, after = (
                probe(tree, kind, path, args.timeout, cap, JOB_PROBE)
                for tree in (before_tree, ROOT)
            )
            size = f"{len(data) / 1024:,.1f} KB"
            rows.append(f"| {label} | {size} | {job_cell(before)} | {job_cell(after)} |")
            print(rows[-1], flush=True)
    after_ref = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    table = "\n".join(
        [
            "| input | file | before: in a thread of the service | after: in a bounded child |",
            "|---|---|---|---|",
            *rows,
        ]
    )
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    section = (
        f"\n## {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC: hostile documents' "
        f"cost to the service (issue 28), {machine}\n\n"
        f"`bench/hostile_bench.py --job-path --before {args.before}`: what the ingestion job "
        f"runs for each file, in a fresh process standing for the service, before "
        f"({args.before}) and after ({after_ref}); peak RSS of that process above its resident "
        f"size once imported, its own CPU seconds and its children's. Each capped at "
        f"{args.memory_cap_gib:g} GiB of address space and {args.timeout:.0f} s; default "
        f"limits.\n\n{table}\n"
    )
    print(section)
    if args.record:
        with open(ROOT / "bench" / "RESULTS.md", "a") as results:
            results.write(section)


if __name__ == "__main__":
    main()
