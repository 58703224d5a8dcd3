"""Routines firing on time (issue 43's goals), through the real processes: `strongroom serve`
and TWO `strongroom worker` processes on PostgreSQL; `strongroom dev` (the embedded default,
one process) on SQLite. `--kill-at` SIGKILLs the process that fires at a scheduled minute:

- `before`: `--kill-offset` (default 0.2 s) before the minute; `after`: that long (default
  0.05 s) after it, when the process's 1 s tick may be inside the fire or past its commit
  (by chance: the tick's phase is not known); `none`: no kill. Default: `before` on
  PostgreSQL (worker 1, not replaced: worker 2 carries on alone), `none` on SQLite.
- `inside`: the kill lands, provably, inside the fire's transaction. From a second before the
  minute the bench holds the fire up: on PostgreSQL by an uncommitted run of its own with the
  minute's fire key, so that the first worker to fire locks the routine, inserts the job and
  waits in its INSERT INTO routine_runs, where pg_stat_activity shows it (that worker is the
  victim, worker 1 or 2, SIGKILLed at once); on SQLite by the database's write lock, so that
  the server's fire waits in its first write, SIGKILLed `--kill-offset` (default 1.5 s) after
  the minute. The bench then rolls back. The minute's fire is delayed by the hold itself.
- On PostgreSQL the victim of `before`/`after` is worker 1; with `--restart` (the default
  for `after` and `inside`) the victim is started again at once. On SQLite the victim is
  `strongroom dev` itself, always started again at once on the same database, data directory
  and port (the bench's key was issued in that database, so it stays valid; the dev key is
  never seeded, a tenant existing already).
- `--kills` minutes are killed (default 1 without restarts, 3 with), spread over the run,
  never the first.

Measured:
- A `* * * * *` routine (UTC, one chat step over a small ready document) over `--minutes`
  scheduled minutes: per minute, the number of runs whose `scheduled_for` is that minute
  (must be exactly 1), and the lateness of each: its `created_at` (the fire's commit) and its
  `started_at` (the run's job picked up) minus `scheduled_for`; and which process fired it.
  On PostgreSQL that is read from each worker's own /metrics
  (`strongroom_routine_fire_lateness_seconds_count`, observed after a fire's commit, scraped
  30 s into each minute); a run no living worker counted was fired by the one killed. On
  SQLite, from the run's `created_at` (the firing process's clock, just before its commit):
  before the kill, the killed process; after it, the one started again.
- A `document_ready` routine (the same step): `--documents` small text documents uploaded
  one after another; seconds from each document's ingestion job `finished_at` to its run's
  `created_at` and `started_at`.

Every lateness is the API's own timestamps (the machine's clock on both sides).

`--flood N` (issue 52, item 4) measures instead one tenant's flood against another's fire:
tenant A holds N `* * * * *` routines (the same chat step; 100 in its test environment, the
rest in its live one, 100 being the bound per tenant and environment), tenant B one. Over
`--minutes` whole minutes: B's lateness (its run's `created_at` minus `scheduled_for`; goal
5 s), the lateness of A's last fire each minute, A's runs each minute by status (`queued`
fires and `skipped` ones coalesced behind an unfinished run), and A's pending runs (`queued`
+ `running`) read from the database every 5 s (goal: bounded, not growing minute on minute).

    .venv/bin/python bench/routines_bench.py --backend postgresql            # 10 minutes
    .venv/bin/python bench/routines_bench.py --backend postgresql --kill-at after
    .venv/bin/python bench/routines_bench.py --backend sqlite --minutes 10 --kill-at after
    .venv/bin/python bench/routines_bench.py --backend sqlite --kill-at inside
    .venv/bin/python bench/routines_bench.py --flood 200 --minutes 4
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sqlite3
import statistics
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from bulk_ingest_bench import credential_key, finished_at, project_of, small_texts, upload
from stack import (
    STRONGROOM,
    Credential,
    Deployment,
    _stop,
    api_server,
    deployment,
    environment_of,
    free_port,
    issue_credential,
    print_footer,
    print_header,
    server_log,
)

DEADLINE_SECONDS = 120  # for a run to appear and start
KILL_OFFSETS = {"before": 0.2, "after": 0.05, "inside": 1.5}  # seconds from the minute
HOLD_BEFORE = timedelta(seconds=1)  # `inside`: the fire held from this long before the minute
BLOCK_DEADLINE_SECONDS = 5  # `inside` on PostgreSQL: for a worker to be seen waiting
SCRAPE_INTO_MINUTE = timedelta(seconds=30)  # workers' fire counters read this far in
FIRES = "strongroom_routine_fire_lateness_seconds_count"
STEP = {"type": "chat", "query": "What is the contract sum?"}


def stamp(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


async def until(moment: datetime) -> None:
    """Sleep until `moment` (UTC) to within a few milliseconds: a coarse sleep, then the
    remainder measured again (one sleep to the moment can land 0.1 s late on a loaded
    machine)."""
    for margin in (0.5, 0.0):
        left = (moment - datetime.now(UTC)).total_seconds() - margin
        if left > 0:
            await asyncio.sleep(left)


@dataclass
class Instance:
    """One life of a restartable process: its name, start, kill, and (a worker) its
    /metrics port and the fire count last read there."""

    name: str
    process: asyncio.subprocess.Process
    started: datetime
    metrics_port: int | None = None
    fires: float = 0.0
    ready: datetime | None = None
    killed: datetime | None = None


@dataclass
class Restartable:
    """A `strongroom` process that can be SIGKILLed and started again at once, with the same
    arguments, environment and log (appended to)."""

    name: str
    deployed: Deployment
    arguments: list[str]
    log: Path
    ready_url: str | None = None  # the server's /readyz; a worker: its /metrics answering
    extra: dict[str, str] = field(default_factory=dict)
    lives: list[Instance] = field(default_factory=list)

    @property
    def current(self) -> Instance:
        return self.lives[-1]

    async def start(self) -> Instance:
        metrics_port = free_port() if self.ready_url is None else None
        extra = dict(self.extra)
        if metrics_port is not None:
            extra["STRONGROOM_WORKER_METRICS_PORT"] = str(metrics_port)
        with self.log.open("ab") as log:
            process = await asyncio.create_subprocess_exec(
                STRONGROOM, *self.arguments, stdout=log, stderr=log,
                env=environment_of(self.deployed.settings, **extra),
            )  # fmt: skip
        name = self.name if not self.lives else f"{self.name} (life {len(self.lives) + 1})"
        instance = Instance(name, process, datetime.now(UTC), metrics_port)
        self.lives.append(instance)
        url = self.ready_url or f"http://127.0.0.1:{metrics_port}/metrics"
        async with httpx.AsyncClient() as client:
            for _ in range(1200):
                with contextlib.suppress(httpx.TransportError):
                    if (await client.get(url)).status_code == 200:
                        instance.ready = datetime.now(UTC)
                        return instance
                if process.returncode is not None:
                    raise RuntimeError(f"{instance.name} exited; see {self.log}")
                await asyncio.sleep(0.05)
        raise RuntimeError(f"{instance.name} never became ready; see {self.log}")

    async def kill(self) -> Instance:
        instance = self.current
        instance.process.send_signal(signal.SIGKILL)
        instance.killed = datetime.now(UTC)
        await instance.process.wait()
        return instance

    async def stop(self) -> None:
        for instance in self.lives:
            await _stop(instance.process)


async def fire_count(client: httpx.AsyncClient, instance: Instance) -> float | None:
    """Scheduled fires this worker committed, from its /metrics (None: not answering)."""
    try:
        response = await client.get(f"http://127.0.0.1:{instance.metrics_port}/metrics")
    except httpx.TransportError:
        return None
    for line in response.text.splitlines():
        if line.startswith(FIRES + " "):
            return float(line.split()[1])
    return 0.0


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


@dataclass
class Kill:
    minute: datetime
    at: datetime  # when SIGKILL is sent (planned)
    victim: Instance | None = None
    sent: datetime | None = None  # when it was sent (measured)
    successor: Instance | None = None
    evidence: str = ""  # `inside`: what shows the fire was under way when the kill came


def kill_plan(scheduled: list[datetime], args: argparse.Namespace) -> list[Kill]:
    """The killed minutes: `args.kills` of them spread over the run, never the first (so that
    a fire by every process precedes the first kill), each at its offset."""
    if args.kill_at == "none" or args.kills < 1 or len(scheduled) < 2:
        return []
    count = min(args.kills, len(scheduled) - 1)
    step = max(1, (len(scheduled) - 1) // count)
    offset = timedelta(seconds=args.kill_offset)
    sign = -1 if args.kill_at == "before" else 1
    if args.kill_at == "inside":  # the hold on the fire starts before the minute
        offset, sign = HOLD_BEFORE, -1
    return [Kill(scheduled[1 + n * step], scheduled[1 + n * step] + sign * offset)
            for n in range(count)]  # fmt: skip


async def run_events(
    scheduled: list[datetime],
    kills: list[Kill],
    processes: list[Restartable],
    args: argparse.Namespace,
    deployed: Deployment,
    routine_id: str,
) -> dict[datetime, list[str]]:
    """Kill (and start again) at the planned moments; on PostgreSQL read every living
    worker's fire count 30 s into each minute. The names of the processes that counted a fire
    in each minute's interval."""
    scrape = processes[0].current.metrics_port is not None
    events = [(kill.at, 0, kill) for kill in kills]
    if scrape:
        events += [(minute + SCRAPE_INTO_MINUTE, 1, minute) for minute in scheduled]
    counted: dict[datetime, list[str]] = {minute: [] for minute in scheduled}
    async with httpx.AsyncClient(timeout=10) as client:
        for moment, _, event in sorted(events, key=lambda item: (item[0], item[1])):
            await until(moment)
            if isinstance(event, Kill):
                if args.kill_at != "inside":
                    victim = processes[0]
                    event.victim = await victim.kill()
                elif deployed.is_postgres:
                    victim = await kill_inside_postgresql(event, processes, deployed, routine_id)
                else:
                    victim = processes[0]
                    await kill_inside_sqlite(event, victim, deployed, args.kill_offset)
                event.sent = event.victim.killed
                if args.restart:
                    event.successor = await victim.start()
                continue
            for process in processes:
                for instance in process.lives:
                    if instance.process.returncode is not None:
                        continue
                    count = await fire_count(client, instance)
                    if count is not None and count > instance.fires:
                        counted[event].append(instance.name)
                    if count is not None:
                        instance.fires = count
    return counted


BLOCKER = """
INSERT INTO routine_runs (id, routine_id, tenant_id, environment, status, trigger_type,
                          fire_key, scheduled_for, steps, created_at, updated_at)
SELECT gen_random_uuid(), id, tenant_id, environment, 'queued', 'schedule', %s, %s, '[]',
       now(), now()
FROM routines WHERE id = %s
"""
BLOCKED = """
SELECT application_name, xact_start, query_start FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock'
  AND query ILIKE 'INSERT INTO routine_runs%'
"""


async def kill_inside_postgresql(
    kill: Kill, processes: list[Restartable], deployed: Deployment, routine_id: str
) -> Restartable:
    """Hold the minute's fire inside its transaction, and SIGKILL the worker holding it.

    Before the minute the bench inserts, uncommitted, a run with the minute's fire key: the
    first worker to fire it locks the routine, inserts the job, and then waits in its
    INSERT INTO routine_runs on the unique (routine_id, fire_key), its transaction open (the
    other worker skips the locked routine). Seen so in pg_stat_activity (each worker's
    connections are named by PGAPPNAME), that worker is SIGKILLed; 0.2 s later the bench
    rolls its row back. Its fire must then come once, from another process. The bench's row
    is inserted without the foreign keys' checks, whose lock on the routine row would make
    both workers pass the routine by."""
    fire_key = f"schedule:{kill.minute.astimezone(UTC).isoformat()}"
    names = {f"bench-{process.name.replace(' ', '-')}": process for process in processes}
    blocker = await psycopg.AsyncConnection.connect(deployed.admin_url)
    watcher = await psycopg.AsyncConnection.connect(deployed.admin_url, autocommit=True)
    try:
        # Without the foreign keys' checks, whose FOR KEY SHARE lock on the routine would make
        # every worker's FOR UPDATE SKIP LOCKED pass it by (superuser only).
        await blocker.execute("SET LOCAL session_replication_role = replica")
        await blocker.execute(BLOCKER, (fire_key, kill.minute, routine_id))
        async with asyncio.timeout(BLOCK_DEADLINE_SECONDS + HOLD_BEFORE.total_seconds()):
            while True:
                if row := await (await watcher.execute(BLOCKED)).fetchone():
                    break
                await asyncio.sleep(0.01)
        name, transaction, statement = row
        victim = names[name]
        kill.victim = await victim.kill()
        kill.evidence = (
            f"its fire's transaction open since {(transaction - kill.minute).total_seconds():.3f}"
            f" s after the minute, waiting in INSERT INTO routine_runs since "
            f"{(statement - kill.minute).total_seconds():.3f} s (pg_stat_activity); the bench's "
            f"row rolled back 0.2 s after the kill"
        )
        await asyncio.sleep(0.2)
        await blocker.rollback()
    finally:
        await blocker.close()
        await watcher.close()
    return victim


def sleeping_threads(pid: int) -> int:
    """Threads of `pid` in nanosleep or clock_nanosleep now: in the embedded server, SQLite's
    busy handler waiting for a lock (its other threads wait in epoll or on futexes)."""
    count = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            if task.joinpath("syscall").read_text().split()[0] in {"35", "230"}:
                count += 1
    return count


async def kill_inside_sqlite(
    kill: Kill, process: Restartable, deployed: Deployment, hold: float
) -> None:
    """Hold the minute's fire inside its transaction, and SIGKILL the embedded server there.

    Before the minute the bench takes the database's write lock (BEGIN IMMEDIATE); the
    server's next tick reads the due routine (readers are not blocked in WAL mode) and waits
    in its first write, the run's job, up to its 30 s busy timeout. `hold` seconds after the
    minute (more than a tick), the server is SIGKILLed; the bench then rolls back. Its threads
    in SQLite's busy wait are counted just before the kill (five looks, 10 ms apart)."""
    database = deployed.settings.data_dir / "strongroom.db"
    connection = sqlite3.connect(
        database, isolation_level=None, timeout=30, check_same_thread=False
    )
    try:
        await asyncio.to_thread(connection.execute, "BEGIN IMMEDIATE")
        locked = datetime.now(UTC)
        await until(kill.minute + timedelta(seconds=hold))
        pid = process.current.process.pid
        waiting = []
        for _ in range(5):
            waiting.append(sleeping_threads(pid))
            await asyncio.sleep(0.01)
        kill.victim = await process.kill()
        connection.execute("ROLLBACK")
    finally:
        connection.close()
    kill.evidence = (
        f"the write lock held by the bench from {(locked - kill.minute).total_seconds():.2f} s; "
        f"threads in SQLite's busy wait just before the kill: {max(waiting)}"
    )


def fired_by(
    minute: datetime,
    run: dict,
    counted: dict[datetime, list[str]],
    kill: Kill | None,
    scrape: bool,
) -> str:
    """Which process fired `run` (of `minute`), as far as can be told."""
    if scrape:
        names = counted.get(minute, [])
        if names:
            return " + ".join(names)
        if kill is not None:
            return f"{kill.victim.name}, killed (counted by no living worker)"
        return "unknown (counted by no worker)"
    if kill is None or kill.sent is None:
        return "-"
    created = stamp(run["created_at"])
    if created < kill.sent:
        return f"{kill.victim.name}, {(kill.sent - created).total_seconds():.3f} s before its kill"
    successor = kill.successor.name if kill.successor else "another process"
    return f"{successor}, after the kill"


async def schedule_rows(
    client: httpx.AsyncClient,
    key: str,
    args: argparse.Namespace,
    label: str,
    deployed: Deployment,
    processes: list[Restartable],
) -> list[str]:
    project_id = await ready_project(client, key, "schedule")
    routine = await routine_of(
        client, key, project_id, {"type": "schedule", "cron": "* * * * *", "timezone": "UTC"}
    )
    first = stamp(routine["next_run_at"])
    scheduled = [first + timedelta(minutes=n) for n in range(args.minutes)]
    kills = kill_plan(scheduled, args)
    counted = await run_events(scheduled, kills, processes, args, deployed, routine["id"])
    scrape = processes[0].current.metrics_port is not None
    # Wait for the last minute's run to have started (or the deadline); the embedded server
    # may be starting again, so a refused call is tried again.
    end = scheduled[-1] + timedelta(seconds=DEADLINE_SECONDS)
    while datetime.now(UTC) < end:
        with contextlib.suppress(httpx.TransportError):
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
    killed = {kill.minute: kill for kill in kills}
    created, started, missing, doubled, lines = [], [], [], [], []
    for minute, found in by_minute.items():
        kill = killed.get(minute)
        mark = f" ({kill.victim.name} SIGKILLed)" if kill else ""
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
        who = "; ".join(fired_by(minute, run, counted, kill, scrape) for run in found)
        fired = f"; fired by {who}" if who and who != "-" else ""
        lines.append(
            f"| {label} | {minute:%H:%M} UTC{mark}: runs, created / started late by "
            f"| {len(found)} | {', '.join(f'{v:.2f}' for v in late_c) or '-'} s / "
            f"{', '.join(f'{v:.2f}' for v in late_s) or '-'} s; {statuses}{fired} |"
        )
    summary = [
        f"| {label} | `* * * * *` over {args.minutes} minutes: lateness of created_at, "
        f"max / median | {spread(created)} s | goal: within 5 s |",
        f"| {label} | lateness of started_at (job picked up), max / median "
        f"| {spread(started)} s | |",
        f"| {label} | minutes with 0 runs / with 2+ runs "
        f"| {len(missing)} / {len(doubled)} | {' '.join(missing + doubled) or 'none'}; "
        f"{outside} runs outside the window |",
    ]
    for kill in kills:
        lead = (kill.sent - kill.minute).total_seconds()
        when = f"{abs(lead):.3f} s {'after' if lead >= 0 else 'before'} {kill.minute:%H:%M} UTC"
        if kill.successor is None:
            again, note = "not replaced", "the other worker alone afterwards"
        else:
            up = (kill.successor.ready - kill.sent).total_seconds()
            again = "started again at once"
            note = (
                f"{'ready' if not scrape else 'its /metrics answering'} {up:.1f} s after the kill"
            )
        if kill.evidence:
            note = f"{kill.evidence}; {note}"
        lines_kill = f"| {label} | {kill.victim.name} SIGKILLed {when}, {again} | | {note} |"
        summary.append(lines_kill)
    return summary + lines


FLOOD_SAMPLE_SECONDS = 5.0
PENDING = ("queued", "running")
RUNS_OF = """
SELECT t.name, r.status, r.scheduled_for, r.created_at
FROM routine_runs r JOIN routines t ON t.id = r.routine_id
WHERE r.trigger_type = 'schedule'
"""
STATUS_OF_FLOOD = """
SELECT r.status, count(*) FROM routine_runs r JOIN routines t ON t.id = r.routine_id
WHERE t.name LIKE 'flood %' GROUP BY r.status
"""


async def credentials(deployed: Deployment) -> tuple[Credential, str, Credential]:
    """Tenant A's test key and a live key of the same user, and tenant B's test key."""
    from strongroom.auth.scopes import ALL_SCOPES
    from strongroom.auth.service import create_key
    from strongroom.runtime import Runtime
    from strongroom.tenants.models import RateLimitTier, Tenant, User
    from strongroom.tenants.partition import Environment

    runtime = Runtime.create(deployed.settings)
    try:
        flood = await issue_credential(runtime, "flood")
        other = await issue_credential(runtime, "other")
        async with runtime.sessions() as session:
            _, live = await create_key(
                session, runtime.key_pepper,
                tenant=await session.get(Tenant, flood.tenant_id),
                user=await session.get(User, flood.user_id),
                name="flood-live", environment=Environment.LIVE, scopes=list(ALL_SCOPES),
                tier=RateLimitTier.ENTERPRISE,
            )  # fmt: skip
            await session.commit()
        return flood, live, other
    finally:
        await runtime.close()


async def query(deployed: Deployment, sql: str) -> list[tuple]:
    """Rows of `sql` from the deployment's database, read as they stand (no lock taken)."""
    if deployed.is_postgres:
        async with await psycopg.AsyncConnection.connect(deployed.admin_url) as connection:
            return list(await (await connection.execute(sql)).fetchall())

    def read() -> list[tuple]:
        database = deployed.settings.data_dir / "strongroom.db"
        with contextlib.closing(sqlite3.connect(database, timeout=30)) as connection:
            return list(connection.execute(sql).fetchall())

    return await asyncio.to_thread(read)


def utc(value: datetime | str) -> datetime:
    value = datetime.fromisoformat(value) if isinstance(value, str) else value
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


async def created(client: httpx.AsyncClient, key: str, project_id: str, name: str) -> dict:
    """A `* * * * *` routine named `name`, waiting out a rate limit."""
    trigger = {"type": "schedule", "cron": "* * * * *", "timezone": "UTC"}
    body = {"name": name, "project_id": project_id, "trigger": trigger, "steps": [STEP]}
    for _ in range(100):
        response = await client.post(
            "/api/v2/routines", json=body, headers={"Authorization": f"Bearer {key}"}
        )
        if response.status_code == 429:
            await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
            continue
        if response.status_code != 201:
            raise RuntimeError(f"routine: {response.status_code} {response.text}")
        return response.json()
    raise RuntimeError("routine: rate limited throughout")


async def flood_rows(
    client: httpx.AsyncClient, deployed: Deployment, args: argparse.Namespace, label: str
) -> list[str]:
    """Tenant A's `--flood` every-minute routines against tenant B's one (module doc)."""
    flood, live, other = await credentials(deployed)
    projects = [await ready_project(client, flood.key, "flood")]
    if args.flood > 100:
        projects.append(await project_of(client, live, "flood live"))
    for n in range(args.flood):
        key, project_id = (flood.key, projects[0]) if n < 100 else (live, projects[1])
        await created(client, key, project_id, f"flood {n}")
    theirs = await created(client, other.key, await ready_project(client, other.key, "other"),
                           "theirs")  # fmt: skip
    first = stamp(theirs["next_run_at"])
    if (first - datetime.now(UTC)).total_seconds() < 5:
        first += timedelta(minutes=1)  # a whole minute, every routine due at it
    minutes = [first + timedelta(minutes=n) for n in range(args.minutes)]
    samples: list[tuple[float, int]] = []
    await until(first - timedelta(seconds=1))
    end = minutes[-1] + timedelta(seconds=59)
    while (now := datetime.now(UTC)) < end:
        rows = dict(await query(deployed, STATUS_OF_FLOOD))
        pending = sum(rows.get(status, 0) for status in PENDING)
        samples.append(((now - first).total_seconds(), pending))
        await asyncio.sleep(FLOOD_SAMPLE_SECONDS)
    runs = await query(deployed, RUNS_OF)
    lines, theirs_late, last_late = [], [], []
    for minute in minutes:
        in_minute = [(name, status, utc(created_at) - minute)
                     for name, status, scheduled_for, created_at in runs
                     if utc(scheduled_for) == minute]  # fmt: skip
        mine = [late.total_seconds() for name, _, late in in_minute if name == "theirs"]
        floods = [(status, late.total_seconds())
                  for name, status, late in in_minute if name.startswith("flood ")]  # fmt: skip
        queued = sum(status != "skipped" for status, _ in floods)
        skipped = len(floods) - queued
        latest = max((late for _, late in floods), default=float("nan"))
        theirs_late += mine
        last_late.append(latest)
        at = [pending for offset, pending in samples
              if (minute - first).total_seconds() <= offset
              < (minute - first).total_seconds() + 60]  # fmt: skip
        lines.append(
            f"| {label} | {minute:%H:%M} UTC: tenant B's run created late by; tenant A's "
            f"fires (run / skipped) and its last fire's lateness; A's pending runs in the "
            f"minute, min-max | {', '.join(f'{v:.2f}' for v in mine) or 'no run'} s | "
            f"A: {len(floods)} fires ({queued} run / {skipped} skipped), last {latest:.1f} s "
            f"late; pending {min(at, default=0)}-{max(at, default=0)} |"
        )
    pendings = [pending for _, pending in samples]
    summary = [
        f"| {label} | tenant A: {args.flood} `* * * * *` routines; tenant B: 1; over "
        f"{args.minutes} minutes: B's lateness of created_at, max / median "
        f"| {spread(theirs_late)} s | goal: within 5 s; {len(theirs_late)} runs of "
        f"{args.minutes} minutes |",
        f"| {label} | A's last fire of each minute, lateness max / median "
        f"| {spread(last_late)} s | |",
        f"| {label} | A's pending runs (queued + running), first sample / max / last "
        f"| {pendings[0] if pendings else '-'} / {max(pendings, default=0)} / "
        f"{pendings[-1] if pendings else '-'} | sampled every {FLOOD_SAMPLE_SECONDS:.0f} s; "
        f"goal: bounded |",
    ]
    return summary + lines


async def setup_rows(deployed: Deployment, args: argparse.Namespace) -> list[str]:
    key = await credential_key(deployed, "routines")
    if deployed.is_postgres:
        label = "postgresql, serve + 2 workers"
        workers = []
        for n in (1, 2):
            log = deployed.settings.data_dir / f"worker-{n}.log"
            extra = {"STRONGROOM_WORKER_CONCURRENCY": "2", "PGAPPNAME": f"bench-worker-{n}"}
            workers.append(Restartable(f"worker {n}", deployed, ["worker"], log, extra=extra))
        try:
            async with (
                api_server(deployed) as base,
                httpx.AsyncClient(base_url=base, timeout=120) as client,
            ):
                for process in workers:
                    await process.start()
                if args.flood:
                    return await flood_rows(client, deployed, args, label)
                rows = await document_rows(client, key, args.documents, label)
                rows += await schedule_rows(client, key, args, label, deployed, workers)
        finally:
            for process in workers:
                await process.stop()
        return rows
    label = "sqlite, dev (one process)"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    dev = Restartable(
        "dev", deployed, ["dev", "--host", "127.0.0.1", "--port", str(port)],
        server_log(deployed), ready_url=f"{base}/readyz",
    )  # fmt: skip
    try:
        await dev.start()
        async with httpx.AsyncClient(base_url=base, timeout=120) as client:
            if args.flood:
                return await flood_rows(client, deployed, args, label)
            rows = await document_rows(client, key, args.documents, label)
            rows += await schedule_rows(client, key, args, label, deployed, [dev])
    finally:
        await dev.stop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], action="append")
    parser.add_argument("--minutes", type=int, default=10, help="scheduled minutes watched")
    parser.add_argument("--documents", type=int, default=5, help="document_ready repeats")
    parser.add_argument(
        "--kill-at", choices=["before", "after", "inside", "none"],
        help="SIGKILL the firing process before or after a minute, or inside its fire held "
        "up by the bench (default: before on PostgreSQL, worker 1; none on SQLite)",
    )  # fmt: skip
    parser.add_argument(
        "--kill-offset",
        type=float,
        help="seconds from the minute (default: before 0.2, after 0.05; inside on SQLite: "
        "1.5, the hold after the minute)",
    )
    parser.add_argument(
        "--restart", action=argparse.BooleanOptionalAction,
        help="PostgreSQL: start the killed worker again at once (default: with --kill-at "
        "after or inside); SQLite: always",
    )  # fmt: skip
    parser.add_argument("--kills", type=int, help="minutes killed (default: 1, 3 with restarts)")
    parser.add_argument(
        "--flood", type=int, default=0,
        help="measure one tenant's N every-minute routines against another tenant's one "
        "(issue 52) instead; no kills",
    )  # fmt: skip
    args = parser.parse_args()
    started = print_header("| setup | what | measured | note |")
    for backend in args.backend or ["postgresql", "sqlite"]:
        run = argparse.Namespace(**vars(args))
        if run.flood:
            run.kill_at = "none"
        if run.kill_at is None:
            run.kill_at = "before" if backend == "postgresql" else "none"
        if run.kill_offset is None:
            run.kill_offset = KILL_OFFSETS.get(run.kill_at, 0.0)
        if backend == "sqlite":
            run.restart = True  # the one process: killed, it is started again
        elif run.restart is None:
            run.restart = run.kill_at in ("after", "inside")
        if run.kills is None:
            run.kills = 3 if run.restart else 1
        began = time.time()
        print(
            f"# {backend}: --kill-at {run.kill_at} --kill-offset {run.kill_offset} "
            f"--kills {run.kills if run.kill_at != 'none' else 0} "
            f"--{'' if run.restart else 'no-'}restart",
            flush=True,
        )
        with deployment(backend, "routines") as deployed:
            rows = asyncio.run(setup_rows(deployed, run))
        print("\n".join(rows), flush=True)
        print(f"# {backend}: {time.time() - began:.0f} s", flush=True)
    print_footer(started)


if __name__ == "__main__":
    main()
