"""Issue 44, item 2: four ZIP uploads of about a million entries each (82 MB in the issue),
at once, to the embedded default (`strongroom dev`): how far the API process's resident
memory rises while it detects their type. Before, detection read each upload's whole
central directory in the API process (329 -> 752 MB for one); now it reads the end record
and refuses past an entry count before reading any entry (strongroom/ingest/detect.py).

    .venv/bin/python bench/zip_index_bench.py [--entries 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from stack import api_server, deployment, issue_credential, running_processes

from strongroom.runtime import Runtime


def many_entries(path: Path, entries: int) -> None:
    """A ZIP of `entries` empty members (ZIP64 past 65,535, as Python writes it)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for index in range(entries):
            archive.writestr(f"{index:07d}", b"")


def resident_mib(process: int) -> float:
    """One process's resident memory (sampled every 20 ms: one file, not a scan of /proc)."""
    for line in Path(f"/proc/{process}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def server_pid() -> int:
    """The `strongroom dev` this benchmark started (a child of this process)."""
    for process, running in running_processes().items():
        if running.parent == os.getpid() and b"dev" in running.command:
            return process
    raise RuntimeError("no strongroom dev child found")


async def run(deployed, archive: Path, uploads: int) -> dict:
    runtime = Runtime.create(deployed.settings)
    try:
        key = (await issue_credential(runtime, "zip")).key
    finally:
        await runtime.close()
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        api_server(deployed) as base,
        httpx.AsyncClient(base_url=base, timeout=600) as client,
    ):
        project = await client.post(
            "/api/v2/vault/projects",
            json={"name": "Zips", "project_type": "other"},
            headers=headers,
        )
        project_id = project.json()["id"]
        process = server_pid()
        await asyncio.sleep(3)
        before = resident_mib(process)
        peak = before
        done = asyncio.Event()

        async def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, resident_mib(process))
                await asyncio.sleep(0.02)

        async def upload(index: int) -> int:
            with archive.open("rb") as handle:
                response = await client.post(
                    "/api/v2/vault/documents",
                    headers=headers,
                    data={"project_id": project_id},
                    files={"file": (f"many-{index}.docx", handle, "application/zip")},
                )
            return response.status_code

        sampler = asyncio.create_task(sample())
        statuses = await asyncio.gather(*(upload(i) for i in range(uploads)))
        done.set()
        await sampler
        after = resident_mib(process)
    return {"before": before, "peak": peak, "after": after, "statuses": statuses}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--uploads", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        archive = Path(directory) / "many.zip"
        many_entries(archive, args.entries)
        size = archive.stat().st_size / 1e6
        with deployment("sqlite", "zip") as deployed:
            result = asyncio.run(run(deployed, archive, args.uploads))
    print(f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} cores")
    print(
        f"| {args.uploads} uploads at once of a ZIP of {args.entries:,} entries ({size:.0f} MB) "
        f"| answers {sorted(set(result['statuses']))} | API process {result['before']:.0f} MiB "
        f"before, peak {result['peak']:.0f} MiB (+{result['peak'] - result['before']:.0f}), "
        f"{result['after']:.0f} MiB after |"
    )


if __name__ == "__main__":
    main()
