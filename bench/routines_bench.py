"""Routines firing on time (issue 43's goals), through the real processes: `strongroom serve`
and TWO `strongroom worker` processes on PostgreSQL (worker 1 SIGKILLed a fraction of a second
before one scheduled minute, and not replaced: worker 2 carries on alone); `strongroom dev`
(the embedded default, one process, no kill) on SQLite.

- A `* * * * *` routine (UTC, one chat step over a small ready document) over `--minutes`
  scheduled minutes: per minute, the number of runs whose `scheduled_for` is that minute
  (must be exactly 1), and the lateness of each: its `created_at` (the fire's commit) and its
  `started_at` (the run's job picked up) minus `scheduled_for`.
- A `document_ready` routine (the same step): `--documents` small text documents uploaded
  one after another; seconds from each document's ingestion job `finished_at` to its run's
  `created_at` and `started_at`.

Every timestamp is the API's own (database clock on both sides of a difference).

    .venv/bin/python bench/routines_bench.py --backend postgresql            # 10 minutes
    .venv/bin/python bench/routines_bench.py --backend sqlite --minutes 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import statistics
import sys
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from bulk_ingest_bench import credential_key, finished_at, project_of, small_texts, upload
from stack import (
    STRONGROOM,
    Deployment,
    _stop,
    api_server,
    deployment,
    environment_of,
    print_footer,
    print_header,
)

DEADLINE_SECONDS = 120  # for a run to appear and start
KILL_BEFORE_SECONDS = 0.3  # worker 1's SIGKILL, before the chosen minute
STEP = {"type": "chat", "query": "What is the contract sum?"}


def stamp(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


@contextlib.asynccontextmanager
async def worker(deployed: Deployment, number: int) -> AsyncIterator[asyncio.subprocess.Process]:
    """`strongroom worker` as stack.worker_process starts it, but handing out the process so
    that it can be SIGKILLed."""
    log = (deployed.settings.data_dir / f"worker-{number}.log").open("ab")
    env = environment_of(deployed.settings, STRONGROOM_WORKER_CONCURRENCY="2")
    process = await asyncio.create_subprocess_exec(
        STRONGROOM, "worker", env=env, stdout=log, stderr=log
    )
    try:
        yield process
    finally:
        await _stop(process)
        log.close()


async def routine_of(client: httpx.AsyncClient, key: str, project_id: str, trigger: dict) -> dict:
    response = await client.post(
        "/api/v2/routines",
        json={"name": f"bench {trigger['type']}", "project_id": project_id, "trigger": trigger,
              "steps": [STEP]},
        headers={"Authorization": f"Bearer {key}"},
    )  # fmt: skip
    if response.status_code != 201:
        raise RuntimeError(f"routine: {response.status_code} {response.text}")
    return response.json()


async def runs_of(client: httpx.AsyncClient, key: str, routine_id: str) -> list[dict]:
    headers = {"Authorization": f"Bearer {key}"}
    runs, cursor = [], None
    while True:
        query = "limit=100" + (f"&cursor={cursor}" if cursor else "")
        response = await client.get(f"/api/v2/routines/{routine_id}/runs?{query}", headers=headers)
        response.raise_for_status()
        page = response.json()
        runs += page["data"]
        if not (cursor := page.get("next_cursor")):
            return runs


async def ready_project(client: httpx.AsyncClient, key: str, name: str) -> str:
    """A project with one small ready document (what the chat step reads)."""
    project_id = await project_of(client, key, name)
    text = "The contract sum is 1,250,000 dollars. " + small_texts(1, 400, seed=3)[0]
    await finished_at(client, key, await upload(client, key, project_id, [text]))
    return project_id


def spread(values: list[float]) -> str:
    if not values:
        return "none"
    return f"{max(values):.2f} / {statistics.median(values):.2f}"


async def document_rows(client: httpx.AsyncClient, key: str, count: int, label: str) -> list[str]:
    project_id = await ready_project(client, key, "document_ready")
    routine = await routine_of(client, key, project_id, {"type": "document_ready"})
    created, started = [], []
    for n in range(count):
        text = f"Variation {n}: the price is adjusted. " + small_texts(1, 400, seed=10 + n)[0]
        [job_id] = await upload(client, key, project_id, [text])
        ready = await finished_at(client, key, [job_id])
        job = (
            await client.get(
                f"/api/v2/vault/ingestion-jobs/{job_id}",
                headers={"Authorization": f"Bearer {key}"},
            )
        ).json()
        async with asyncio.timeout(DEADLINE_SECONDS):
            while True:
                runs = [
                    run
                    for run in await runs_of(client, key, routine["id"])
                    if run["document_id"] == job["document_id"]
                ]
                if runs and runs[0]["started_at"]:
                    break
                await asyncio.sleep(0.1)
        assert len(runs) == 1, runs
        created.append((stamp(runs[0]["created_at"]) - ready).total_seconds())
        started.append((stamp(runs[0]["started_at"]) - ready).total_seconds())
    return [
        f"| {label} | document_ready: job finished_at to run created_at, max / median "
        f"({count} documents) | {spread(created)} s | |",
        f"| {label} | document_ready: job finished_at to run started_at, max / median "
        f"| {spread(started)} s | goal: within 5 s |",
    ]


async def schedule_rows(
    client: httpx.AsyncClient,
    key: str,
    minutes: int,
    label: str,
    victim: asyncio.subprocess.Process | None,
) -> list[str]:
    project_id = await ready_project(client, key, "schedule")
    routine = await routine_of(
        client, key, project_id, {"type": "schedule", "cron": "* * * * *", "timezone": "UTC"}
    )
    first = stamp(routine["next_run_at"])
    scheduled = [first + timedelta(minutes=n) for n in range(minutes)]
    # The kill: before the second scheduled minute (or the only one), so that a fire without
    # worker 1 is preceded by one with both workers.
    killed_at = scheduled[min(1, minutes - 1)] if victim is not None else None
    if killed_at is not None:
        await asyncio.sleep(
            max(0.0, (killed_at - datetime.now(UTC)).total_seconds() - KILL_BEFORE_SECONDS)
        )
        victim.send_signal(signal.SIGKILL)
        kill_lead = (killed_at - datetime.now(UTC)).total_seconds()
        await victim.wait()
    # Wait for the last minute's run to have started (or the deadline).
    end = scheduled[-1] + timedelta(seconds=DEADLINE_SECONDS)
    while datetime.now(UTC) < end:
        runs = await runs_of(client, key, routine["id"])
        last = [run for run in runs if stamp(run["scheduled_for"]) == scheduled[-1]]
        if (
            last
            and last[0]["started_at"]
            and datetime.now(UTC) > scheduled[-1] + timedelta(seconds=10)
        ):
            break
        await asyncio.sleep(1)
    response = await client.patch(
        f"/api/v2/routines/{routine['id']}",
        json={"enabled": False},
        headers={"Authorization": f"Bearer {key}"},
    )
    response.raise_for_status()
    await asyncio.sleep(3)  # a run queued at the last moment is listed too
    runs = await runs_of(client, key, routine["id"])
    by_minute = {minute: [] for minute in scheduled}
    outside = 0
    for run in runs:
        at = stamp(run["scheduled_for"])
        if at in by_minute:
            by_minute[at].append(run)
        else:
            outside += 1
    created, started, missing, doubled, lines = [], [], [], [], []
    for minute, found in by_minute.items():
        mark = " (worker 1 SIGKILLed)" if minute == killed_at else ""
        if len(found) == 0:
            missing.append(f"{minute:%H:%M}")
        elif len(found) > 1:
            doubled.append(f"{minute:%H:%M}")
        late_c = [(stamp(run["created_at"]) - minute).total_seconds() for run in found]
        late_s = [
            (stamp(run["started_at"]) - minute).total_seconds()
            for run in found
            if run["started_at"]
        ]
        created += late_c
        started += late_s
        statuses = ", ".join(sorted({run["status"] for run in found})) or "-"
        lines.append(
            f"| {label} | {minute:%H:%M} UTC{mark}: runs, created / started late by "
            f"| {len(found)} | {', '.join(f'{v:.2f}' for v in late_c) or '-'} s / "
            f"{', '.join(f'{v:.2f}' for v in late_s) or '-'} s; {statuses} |"
        )
    summary = [
        f"| {label} | `* * * * *` over {minutes} minutes: lateness of created_at, max / median "
        f"| {spread(created)} s | goal: within 5 s |",
        f"| {label} | lateness of started_at (job picked up), max / median "
        f"| {spread(started)} s | |",
        f"| {label} | minutes with 0 runs / with 2+ runs "
        f"| {len(missing)} / {len(doubled)} | {' '.join(missing + doubled) or 'none'}; "
        f"{outside} runs outside the window |",
    ]
    if killed_at is not None:
        summary.append(
            f"| {label} | worker 1 SIGKILLed {kill_lead:.2f} s before {killed_at:%H:%M} UTC, "
            f"not replaced | | worker 2 alone afterwards |"
        )
    return summary + lines


async def setup_rows(deployed: Deployment, args: argparse.Namespace) -> list[str]:
    key = await credential_key(deployed, "routines")
    if deployed.is_postgres:
        label = "postgresql, serve + 2 workers"
    else:
        label = "sqlite, dev (one process)"
    async with (
        api_server(deployed) as base,
        httpx.AsyncClient(base_url=base, timeout=120) as client,
    ):
        if deployed.is_postgres:
            async with worker(deployed, 1) as first, worker(deployed, 2):
                rows = await document_rows(client, key, args.documents, label)
                rows += await schedule_rows(client, key, args.minutes, label, first)
        else:
            rows = await document_rows(client, key, args.documents, label)
            rows += await schedule_rows(client, key, args.minutes, label, None)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], action="append")
    parser.add_argument("--minutes", type=int, default=10, help="scheduled minutes watched")
    parser.add_argument("--documents", type=int, default=5, help="document_ready repeats")
    args = parser.parse_args()
    started = print_header("| setup | what | measured | note |")
    for backend in args.backend or ["postgresql", "sqlite"]:
        began = time.time()
        with deployment(backend, "routines") as deployed:
            rows = asyncio.run(setup_rows(deployed, args))
        print("\n".join(rows), flush=True)
        print(f"# {backend}: {time.time() - began:.0f} s", flush=True)
    print_footer(started)


if __name__ == "__main__":
    main()
