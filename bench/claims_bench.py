"""Claims once under kills (issue 52, goal "1,000 killed-and-restarted claims: no job runs
twice"), through the real processes on PostgreSQL.

    .venv/bin/python bench/claims_bench.py --jobs 1000        # make bench-claims

A routine with one chat step (manual trigger, no review) is run `--jobs` times through the
API (`strongroom serve`, stopped once the runs are queued): each run is a `routine_run` job
whose one side effect is countable, the step's chat answer (a conversation holding the
question and its answer, started in the transaction that records the step's result, so an
attempt either committed it or left nothing). Then `--workers` `strongroom worker` processes
(`--concurrency` slots each) claim the jobs while the bench SIGKILLs them: every worker is
killed a random `--life` seconds (default 0.2-3) after it registered with the queue (as it
starts claiming) and started again at once, until every run has ended. The worker timings
are the test suite's (heartbeat 0.5 s, stalled 3 s, sweep 1 s: a killed worker's jobs are
handed on within seconds, and a claim's lease is 2.5 s), with `--max-attempts` (default 10)
so that a job killed three times is not abandoned (`job_abandoned`) before it could show a
second run.

Counted afterwards, from the database, never from logs: each run's status, its job's
attempts (a claim taken again after its holder was killed counts one), the conversations
and messages of the tenant. Each job ran exactly once when every succeeded run records a
conversation of its own, every conversation is recorded by exactly one run (a second run of
a job would leave a conversation no run records, the run's record overwritten by the other
run's, or two runs recording one), each holds 2 messages, and no run is left unfinished.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import platform
import random
import signal
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from stack import (
    STRONGROOM,
    Deployment,
    api_server,
    deployment,
    environment_of,
    issue_credential,
    stop_process,
)

from strongroom.runtime import Runtime

# The test suite's worker timings (tests/processes.py WorkerProcess): a killed worker's
# procrastinate job is retried once its heartbeat is 3 s old; a claim's lease is 2.5 s.
WORKER_SETTINGS = {
    "STRONGROOM_WORKER_SWEEP_SECONDS": "1",
    "STRONGROOM_WORKER_HEARTBEAT_SECONDS": "0.5",
    "STRONGROOM_WORKER_STALLED_SECONDS": "3",
    # One tenant: its jobs may take every slot (issue 28's share off).
    "STRONGROOM_JOB_SLOTS_KEPT_FOR_OTHER_TENANTS": "0",
    # Words only (no embedding model to load at each restart): the claims are measured.
    "STRONGROOM_EMBEDDINGS_PROVIDER": "none",
    "STRONGROOM_JOB_WARM_CHILDREN_AT_START": "false",
}
ENDED = ("succeeded", "failed")


@dataclass
class Worker:
    """A `strongroom worker` that can be SIGKILLed and started again."""

    deployed: Deployment
    env: dict[str, str]
    number: int
    process: asyncio.subprocess.Process | None = None
    kills: int = 0
    log: object = None

    async def start(self) -> None:
        if self.log is None:
            path = self.deployed.settings.data_dir / f"worker-{self.number}.log"
            self.log = path.open("ab")
        self.process = await asyncio.create_subprocess_exec(
            STRONGROOM, "worker", env=self.env, stdout=self.log, stderr=self.log
        )

    async def kill_and_restart(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()
        self.kills += 1
        await self.start()

    async def stop(self) -> None:
        if self.process is not None:
            await stop_process(self.process)
        if self.log is not None:
            self.log.close()


@dataclass
class Counts:
    runs: collections.Counter = field(default_factory=collections.Counter)
    attempts: collections.Counter = field(default_factory=collections.Counter)
    errors: collections.Counter = field(default_factory=collections.Counter)
    conversations: int = 0
    recorded: int = 0  # conversations recorded by a run
    shared: int = 0  # conversations recorded by more than one run
    unrecorded: int = 0  # conversations no run records (a second run's)
    missing: int = 0  # succeeded runs recording no conversation, or one that is not there
    messages: collections.Counter = field(default_factory=collections.Counter)


async def queue_runs(base: str, key: str, jobs: int) -> str:
    """The project, the routine and its `jobs` runs, through the API; the routine's id."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
        response = await client.post(
            "/api/v2/vault/projects", json={"name": "Claims", "project_type": "commercial"}
        )
        response.raise_for_status()
        project_id = response.json()["id"]
        routine = {
            "name": "Claims",
            "project_id": project_id,
            "trigger": {"type": "manual"},
            "steps": [{"type": "chat", "query": "Who is the employer?"}],
        }
        response = await client.post("/api/v2/routines", json=routine)
        response.raise_for_status()
        routine_id = response.json()["id"]
        gate = asyncio.Semaphore(16)

        async def start() -> None:
            async with gate:
                started = await client.post(f"/api/v2/routines/{routine_id}/runs", json={})
                started.raise_for_status()

        await asyncio.gather(*(start() for _ in range(jobs)))
    return routine_id


def unfinished(admin_url: str, routine_id: str) -> int:
    with psycopg.connect(admin_url) as db:
        row = db.execute(
            "SELECT count(*) FROM routine_runs WHERE routine_id = %s AND status <> ALL(%s)",
            (routine_id, list(ENDED)),
        ).fetchone()
    assert row is not None
    return row[0]


async def read(look, *args):
    """`look(*args)` in a thread, tried again a second later while the server refuses a
    connection (a shared PostgreSQL at its `max_connections`: "too many clients")."""
    while True:
        try:
            return await asyncio.to_thread(look, *args)
        except psycopg.OperationalError as error:
            print(f"# the database refused a connection ({error}); again in 1 s", flush=True)
            await asyncio.sleep(1)


async def until_ended(admin_url: str, routine_id: str) -> None:
    """Until every run of the routine has ended (read from the database once a second)."""
    while True:
        if not await read(unfinished, admin_url, routine_id):
            return
        await asyncio.sleep(1)


def registered_after(admin_url: str, seen: int) -> list[int]:
    """procrastinate's ids of the workers registered since `seen` (a worker registers as it
    starts claiming)."""
    with psycopg.connect(admin_url) as db:
        rows = db.execute(
            "SELECT id FROM procrastinate_workers WHERE id > %s ORDER BY id", (seen,)
        ).fetchall()
    return [row[0] for row in rows]


async def kill_while_claiming(
    deployed: Deployment, workers: list[Worker], routine_id: str, life: tuple[float, float]
) -> None:
    """Each worker SIGKILLed a random `life` after it registered with the queue (its start
    takes seconds on a loaded machine, and a worker killed before it claims shows nothing),
    and started again at once, until every run has ended (then the workers are left
    running)."""
    admin_url = deployed.admin_url
    assert admin_url is not None
    taken: set[int] = set()

    async def registered(seen: int) -> int:
        """The id of a worker registered after `seen` that no other storm took."""
        while True:
            fresh = await read(registered_after, admin_url, seen)
            mine = next((i for i in fresh if i not in taken), None)
            if mine is not None:
                taken.add(mine)
                return mine
            await asyncio.sleep(0.2)

    async def storm(worker: Worker) -> None:
        seen = 0  # a fresh database: every worker registered is one of these
        while True:
            seen = await registered(seen)
            await asyncio.sleep(random.uniform(*life))  # noqa: S311
            await worker.kill_and_restart()

    storms = [asyncio.create_task(storm(worker)) for worker in workers]
    try:
        await until_ended(admin_url, routine_id)
    finally:
        for task in storms:
            task.cancel()
        await asyncio.gather(*storms, return_exceptions=True)


def count(admin_url: str, routine_id: str, tenant_id: str) -> Counts:
    counts = Counts()
    with psycopg.connect(admin_url) as db:
        runs = db.execute(
            "SELECT r.status, r.steps, r.error, j.attempts FROM routine_runs r "
            "LEFT JOIN jobs j ON j.id = r.job_id WHERE r.routine_id = %s",
            (routine_id,),
        ).fetchall()
        conversations = {
            str(conversation_id): messages
            for conversation_id, messages in db.execute(
                "SELECT c.id, count(m.id) FROM conversations c "
                "LEFT JOIN messages m ON m.conversation_id = c.id WHERE c.tenant_id = %s "
                "GROUP BY c.id",
                (tenant_id,),
            ).fetchall()
        }
    recorded: collections.Counter = collections.Counter()
    for status, steps, error, attempts in runs:
        counts.runs[status] += 1
        counts.attempts[attempts] += 1
        if error:
            counts.errors[error.get("code")] += 1
        conversation = steps[0].get("conversation_id")
        if conversation is not None:
            recorded[conversation] += 1
        if status == "succeeded" and conversation not in conversations:
            counts.missing += 1
    counts.conversations = len(conversations)
    counts.recorded = sum(1 for c in recorded if c in conversations)
    counts.shared = sum(1 for times in recorded.values() if times > 1)
    counts.unrecorded = sum(1 for c in conversations if c not in recorded)
    counts.messages = collections.Counter(conversations.values())
    return counts


async def run(args: argparse.Namespace, deployed: Deployment) -> None:
    started_at = time.time()
    load_before = os.getloadavg()[0]
    assert deployed.admin_url is not None
    runtime = Runtime.create(deployed.settings)
    try:
        credential = await issue_credential(runtime, "claims")
    finally:
        await runtime.close()
    async with api_server(deployed, **WORKER_SETTINGS) as base:
        routine_id = await queue_runs(base, credential.key, args.jobs)
    print(f"# {args.jobs} runs queued in {time.time() - started_at:.0f} s", flush=True)
    env = environment_of(
        deployed.settings,
        STRONGROOM_WORKER_CONCURRENCY=str(args.concurrency),
        STRONGROOM_JOB_MAX_ATTEMPTS=str(args.max_attempts),
        **WORKER_SETTINGS,
    )
    workers = [Worker(deployed, env, number) for number in range(1, args.workers + 1)]
    claiming = time.time()
    try:
        for worker in workers:
            await worker.start()
        async with asyncio.timeout(args.deadline):
            if args.life[1] > 0:
                await kill_while_claiming(deployed, workers, routine_id, tuple(args.life))
            else:
                await until_ended(deployed.admin_url, routine_id)
    finally:
        for worker in workers:
            await worker.stop()
    seconds = time.time() - claiming
    counts = count(deployed.admin_url, routine_id, str(credential.tenant_id))
    report(args, counts, workers, seconds, started_at, load_before)


def report(
    args: argparse.Namespace,
    counts: Counts,
    workers: list[Worker],
    seconds: float,
    started_at: float,
    load_before: float,
) -> None:
    kills = sum(worker.kills for worker in workers)
    taken_again = sum(jobs for attempts, jobs in counts.attempts.items() if attempts > 1)
    twice = counts.shared + counts.unrecorded
    print(
        f"# {datetime.fromtimestamp(started_at, UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
        f"{platform.machine()}, {os.cpu_count()} cores, load average {load_before:.1f} at "
        f"start, {os.getloadavg()[0]:.1f} at end"
    )
    print(
        f"# {args.workers} workers x {args.concurrency} slots, each SIGKILLed "
        f"{args.life[0]:g}-{args.life[1]:g} s after it registered, and restarted; "
        f"max attempts {args.max_attempts}\n"
    )
    print("| what | count |")
    print("|---|---|")
    rows = [
        ("jobs (routine runs, one chat step each)", args.jobs),
        ("workers SIGKILLed and restarted", kills),
        ("seconds from the first worker's start to the last run's end", f"{seconds:.0f}"),
        ("runs by status", dict(sorted(counts.runs.items()))),
        ("failed runs by problem", dict(sorted(counts.errors.items())) or "-"),
        ("jobs by attempts (claims)", dict(sorted(counts.attempts.items()))),
        ("jobs claimed again after their holder was killed (attempts > 1)", taken_again),
        ("conversations (the side effect)", counts.conversations),
        ("conversations recorded by one run", counts.recorded - counts.shared),
        ("conversations no run records, or two runs record (a job run twice)", twice),
        ("succeeded runs with no conversation (a side effect lost)", counts.missing),
        ("conversations by messages", dict(sorted(counts.messages.items()))),
    ]
    for what, value in rows:
        print(f"| {what} | {value} |")
    once = (
        twice == 0
        and counts.missing == 0
        and counts.runs["succeeded"] == counts.conversations
        and set(counts.messages) <= {2}
    )
    print(f"\n# every job's side effect exactly once: {'yes' if once else 'NO'}")
    print(f"# {time.time() - started_at:.0f} s in all")
    if not once:
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=2, help="slots of each worker")
    parser.add_argument(
        "--life",
        type=float,
        nargs=2,
        default=[0.2, 3.0],
        metavar=("MIN", "MAX"),
        help="seconds from a worker's registration to its SIGKILL (0 0: no kills)",
    )
    parser.add_argument("--max-attempts", type=int, default=10)
    parser.add_argument("--deadline", type=float, default=3600, help="seconds, for a hang")
    args = parser.parse_args()
    with deployment("postgresql", "claims") as deployed:
        asyncio.run(run(args, deployed))


if __name__ == "__main__":
    main()
