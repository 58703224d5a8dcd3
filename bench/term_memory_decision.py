"""What deciding whether a tenant's terms fit costs (issue 44.4): one tenant's N passages of
vault_bench's contract prose, a TermMemory of `--mb` MiB, and its first search's refresh (in
the background past 2,000 passages) awaited: the peak of what Python allocated meanwhile
(tracemalloc), the process's RSS high-water mark over it (reset first, Linux), whether the
tenant was held, and the size of its whole index (held by a second, unbounded TermMemory
afterwards). Prints one line per backend for bench/RESULTS.md.

    .venv/bin/python bench/term_memory_decision.py --chunks 37476 --mb 32
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from stack import deployment, issue_credential
from vault_bench import seed_chunks

from strongroom.retrieval.term_memory import TermMemory
from strongroom.runtime import Runtime
from strongroom.tenants.partition import DataPartition, Environment


def rss_mib() -> tuple[int, int]:
    """(high-water mark, now) of the process's resident memory, MiB."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return int(status["VmHWM"].split()[0]) // 1024, int(status["VmRSS"].split()[0]) // 1024


def reset_rss_peak() -> int:
    """The high-water mark back to the resident memory now (MiB), which it returns."""
    Path("/proc/self/clear_refs").write_text("5")
    return rss_mib()[1]


async def refreshed(runtime: Runtime, memory: TermMemory, partition: DataPartition) -> None:
    async with runtime.sessions() as session:
        await memory.current(session, (partition.tenant_id, "test"), partition)
    await memory.settled()


async def run(deployed, chunks: int, mb: int) -> str:
    runtime = Runtime.create(deployed.settings)
    try:
        credential = await issue_credential(runtime, "decide")
        await seed_chunks(runtime, credential, chunks, 10, 21)
        partition = DataPartition(credential.tenant_id, Environment.TEST)
        memory = TermMemory(mb * 2**20, runtime.sessions)
        await refreshed(runtime, memory, DataPartition(credential.tenant_id, Environment.LIVE))
        before = reset_rss_peak()
        tracemalloc.start()
        started = time.perf_counter()
        await refreshed(runtime, memory, partition)
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        high = rss_mib()[0]
        whole = TermMemory(2**40, runtime.sessions)
        await refreshed(runtime, whole, partition)
        held = "held" if memory.partitions() else "not held"
        return (
            f"| {deployed.backend} | {chunks:,} | {mb} | {whole.nbytes / 2**20:.1f} | {held} | "
            f"{peak / 2**20:.1f} | +{high - before} | {seconds:.1f} |"
        )
    finally:
        await runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=37_476)
    parser.add_argument("--mb", type=int, default=32, help="the TermMemory's bound, MiB")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    args = parser.parse_args()
    print(
        "| database | passages | bound MiB | whole index MiB | result | tracemalloc peak MiB "
        "| RSS high-water MiB | seconds (traced) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for backend in ("postgresql", "sqlite") if args.backend == "both" else (args.backend,):
        with deployment(backend, "decide") as deployed:
            print(asyncio.run(run(deployed, args.chunks, args.mb)), flush=True)


if __name__ == "__main__":
    main()
