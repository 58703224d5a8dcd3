"""Exactly once with two real workers (issue 43), on PostgreSQL: every routine due at once
is fired by whichever worker's tick takes it first, one worker is SIGKILLed while they fire
and comes back, and each fire time still has one run whose steps ran once; and a worker
SIGKILLed inside a fire's transaction, caught there by a table lock the test holds, leaves
nothing, the other worker firing that time once. Counts, never seconds."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter
from datetime import datetime, timedelta

import pytest
from sqlalchemy import text, update
from sqlmodel import col, select

from strongroom.chat.models import Message
from strongroom.db.types import utcnow
from strongroom.jobs.models import Job, JobKind
from strongroom.routines.models import Routine, RoutineRun
from strongroom.routines.service import new_run
from tests.processes import WorkerProcess
from tests.routines.conftest import Routines
from tests.vault.conftest import JOB_DEADLINE

ROUTINES = 12
ENDED = {"succeeded", "failed", "skipped"}  # a run's statuses that will not change
# Attempts to catch the test's own worker mid-fire (each attempt catches both, nearly always).
ATTEMPTS = 6
CATCH_SECONDS = 20  # a bound on the wait for the test's worker to block on an attempt's fire


# PostgreSQL only: the embedded default is one process (tests/routines/test_routine_fire.py).
@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
async def test_two_workers_one_killed_at_fire_time_fire_each_time_once(
    routines: Routines, contract, runtime, settings, worker
):
    assert worker is not None
    ids = []
    for index in range(ROUTINES):
        created = await routines.create(
            name=f"every minute {index}",
            project_id=contract["project_id"],
            trigger={"type": "schedule", "cron": "* * * * *", "timezone": "UTC"},
            steps=[{"type": "chat", "query": "Who is the employer?"}],
        )
        ids.append(uuid.UUID(created["id"]))
    async with WorkerProcess(settings) as second:
        due = utcnow().replace(second=0, microsecond=0)
        async with runtime.sessions() as session:
            statement = update(Routine).where(col(Routine.id).in_(ids))
            await session.exec(statement.values(next_run_at=due - timedelta(seconds=1)))
            await session.commit()
        await second.kill_and_restart()  # SIGKILL while both workers tick
        async with asyncio.timeout(JOB_DEADLINE):
            while True:
                runs = await runs_of(runtime, ids)
                fired = {run.routine_id for run in runs if run.scheduled_for >= due}
                ended = all(run.status in ENDED for run in runs)
                if fired == set(ids) and ended:
                    break
                await asyncio.sleep(0.2)
    async with runtime.sessions() as session:  # no more fires for the rest of the session
        await session.exec(update(Routine).where(col(Routine.id).in_(ids)).values(enabled=False))
        await session.commit()
    fires = Counter((run.routine_id, run.scheduled_for) for run in runs)
    assert set(fires.values()) == {1}  # never twice (whichever minutes the test spanned)
    # The fire time the test made due runs; a later minute's fire that found its routine's
    # previous run unfinished is skipped (issue 52), never run beside it.
    assert {run.status for run in runs if run.scheduled_for == due} == {"succeeded"}
    assert {run.status for run in runs} <= {"succeeded", "skipped"}
    ran = [run for run in runs if run.status == "succeeded"]
    # Each run's chat step answered once: one question and one answer per run.
    message_ids = [uuid.UUID(run.steps[0]["result_id"]) for run in ran]
    assert len(set(message_ids)) == len(ran)
    async with runtime.sessions() as session:
        statement = select(Message.id).where(col(Message.id).in_(message_ids))
        assert len((await session.exec(statement)).all()) == len(ran)


async def runs_of(runtime, ids: list[uuid.UUID]) -> list[RoutineRun]:
    async with runtime.sessions() as session:
        statement = select(RoutineRun).where(col(RoutineRun.routine_id).in_(ids))
        return list((await session.exec(statement)).all())


# The backends blocked by the test's lock (`holder`) in a fire's INSERT INTO routine_runs:
# the worker process (its application_name), its transaction, and whether it is the fire of
# `routine` (the routine row's xmax is the transaction that holds it FOR UPDATE).
FIRE_WAITERS = (
    "SELECT a.pid, a.application_name, a.backend_xid::text::bigint AS xid,"
    " (SELECT r.id FROM routines AS r WHERE r.id = ANY (:routines) AND r.xmax = a.backend_xid)"
    " AS holds"
    " FROM pg_stat_activity AS a"
    " WHERE a.datname = current_database() AND :holder = ANY (pg_blocking_pids(a.pid))"
    " AND a.query LIKE 'INSERT INTO routine_runs%'"
)


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
async def test_a_worker_killed_inside_a_fire_loses_nothing_and_the_other_fires_it_once(
    routines: Routines, contract, runtime, settings, worker
):
    """How the worker is caught mid-fire, with no hook in the product: the test holds
    `LOCK TABLE routine_runs IN EXCLUSIVE MODE` in an open transaction of its own (reads pass,
    inserts wait), then makes two routines due at once. A worker whose tick takes one locks
    its row, inserts the job and waits on the run's INSERT: pg_stat_activity shows that
    backend blocked by the test's, and the routine row's xmax is that backend's transaction
    (it holds the row FOR NO KEY UPDATE). The other worker skips that routine and blocks in
    the other's fire. The test's own worker has an application_name of its own (PGAPPNAME,
    which libpq reads), so the test knows which fire is its; if it is not seen (a fire of
    another test's routine came first), the lock is released, the fires complete, and the
    next attempt takes a fresh pair. Once caught: SIGKILL the test's worker, then release the
    lock. PostgreSQL must roll that transaction back (its job and run never exist), and the
    session's worker must fire that time once, its run succeed and its chat step answer
    once."""
    assert worker is not None
    name = f"strongroom-fire-kill-{uuid.uuid4().hex[:8]}"
    dues: dict[uuid.UUID, datetime] = {}  # each routine's one fire time
    caught = None
    async with WorkerProcess(settings, PGAPPNAME=name) as mine:
        await connected(runtime, name)
        for _attempt in range(ATTEMPTS):
            # Two routines due at once: the first worker to tick blocks in the fire of one,
            # holding it; the other skips it (SKIP LOCKED) and blocks in the other's. Each
            # worker is caught, the test's among them, unless a fire of another test's
            # routine came first (then the next attempt).
            due = utcnow().replace(second=0, microsecond=0)
            pair = []
            for _ in range(2):
                created = await routines.create(
                    name=f"once a year, now {len(dues)}",
                    project_id=contract["project_id"],
                    # Due at `due` only (once a year): this test never sees a second fire time.
                    trigger={
                        "type": "schedule",
                        "cron": f"{due.minute} {due.hour} {due.day} {due.month} *",
                        "timezone": "UTC",
                    },
                    steps=[{"type": "chat", "query": "Who is the employer?"}],
                )
                pair.append(uuid.UUID(created["id"]))
                dues[pair[-1]] = due
            async with runtime.engine.connect() as holder:
                try:
                    await holder.execute(text("LOCK TABLE routine_runs IN EXCLUSIVE MODE"))
                    pid = (await holder.execute(text("SELECT pg_backend_pid()"))).scalar_one()
                    async with runtime.sessions() as session:
                        statement = update(Routine).where(col(Routine.id).in_(pair))
                        await session.exec(statement.values(next_run_at=due))
                        await session.commit()
                    caught = await fire_of(runtime, pid, pair, name)
                    if caught is not None:
                        mine.process.kill()  # SIGKILL, inside the fire's transaction
                        await mine.process.wait()
                finally:
                    await holder.rollback()  # the lock's end: the blocked INSERTs go on
            await until_ended(runtime, pair)
            if caught is not None:
                break
        assert caught is not None, f"the test's worker was not caught mid-fire in {ATTEMPTS}"
        assert mine.process.returncode == -9
    # PostgreSQL saw the client gone and rolled the fire's transaction back.
    alive = "SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"
    async with asyncio.timeout(JOB_DEADLINE):
        while True:
            if not (await query(runtime, alive, pid=caught.pid))[0][0]:
                break
            await asyncio.sleep(0.1)
    current = (await query(runtime, "SELECT txid_current()"))[0][0]
    xid = (current & ~0xFFFFFFFF) | caught.xid  # the backend's 32-bit xid, with its epoch
    if xid > current:
        xid -= 1 << 32
    assert await query(runtime, "SELECT txid_status(:xid)", xid=xid) == [("aborted",)]
    runs = await runs_of(runtime, list(dues))
    # Every routine (the one whose fire was killed too) fired its one time once, and only
    # the committed fires have jobs: the killed fire's job was rolled back with its run.
    assert sorted(run.routine_id for run in runs) == sorted(dues)
    assert all(run.scheduled_for == dues[run.routine_id] for run in runs)
    assert {run.status for run in runs} == {"succeeded"}
    async with runtime.sessions() as session:
        statement = select(Job.subject_id).where(
            col(Job.tenant_id) == runs[0].tenant_id, col(Job.kind) == JobKind.ROUTINE_RUN.value
        )
        assert sorted((await session.exec(statement)).all()) == sorted(run.id for run in runs)
    # Each run's chat step answered once: its conversation is one question and one answer.
    for run in runs:
        assert run.steps[0]["status"] == "succeeded"
        conversation_id = uuid.UUID(run.steps[0]["conversation_id"])
        async with runtime.sessions() as session:
            statement = select(Message.role).where(col(Message.conversation_id) == conversation_id)
            assert sorted((await session.exec(statement)).all()) == ["assistant", "user"]


async def connected(runtime, name: str) -> None:
    """Until a process with application_name `name` has a connection to the database."""
    statement = (
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE datname = current_database() AND application_name = :name"
    )
    async with asyncio.timeout(JOB_DEADLINE):
        while True:
            if (await query(runtime, statement, name=name))[0][0]:
                return
            await asyncio.sleep(0.1)


async def fire_of(runtime, holder: int, routine_ids: list[uuid.UUID], name: str):
    """The fire of one of `routine_ids` by the process called `name`, blocked by `holder`'s
    lock; None if it is not seen within CATCH_SECONDS (a bound, not a measurement)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(CATCH_SECONDS):
            while True:
                waiters = await query(runtime, FIRE_WAITERS, holder=holder, routines=routine_ids)
                for waiter in waiters:
                    if waiter.holds is not None and waiter.application_name == name:
                        return waiter
                await asyncio.sleep(0.05)
    return None


async def until_ended(runtime, ids: list[uuid.UUID]) -> None:
    """Until each routine has a run and every run has ended."""
    async with asyncio.timeout(JOB_DEADLINE):
        while True:
            runs = await runs_of(runtime, ids)
            ended = all(run.status in {"succeeded", "failed"} for run in runs)
            if {run.routine_id for run in runs} == set(ids) and ended:
                return
            await asyncio.sleep(0.2)


async def query(runtime, statement: str, **params) -> list:
    """The rows of one SQL statement."""
    async with runtime.engine.connect() as connection:
        return list((await connection.execute(text(statement), params)).all())


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
async def test_a_fire_committed_but_never_queued_is_run_once_by_the_sweep(
    routines: Routines, contract, runtime, worker
):
    """A worker killed after a fire's commit and before it queued the run's job: what that
    leaves is written here as the fire writes it (the run, its `pending` job, `next_run_at`
    moved on, one transaction) and nothing is queued. The worker's sweep queues a job left
    `pending` past its stalled time (D46): the run ends succeeded, its step answered once."""
    assert worker is not None
    created = await routines.create(
        name="fired, then the worker died",
        project_id=contract["project_id"],
        trigger={"type": "schedule", "cron": "0 7 1 1 *", "timezone": "UTC"},
        steps=[{"type": "chat", "query": "Who is the employer?"}],
    )
    due = utcnow().replace(second=0, microsecond=0)
    async with runtime.sessions() as session:
        routine = await session.get(Routine, uuid.UUID(created["id"]))
        run, job = new_run(routine, trigger_type="schedule", scheduled_for=due)
        routine.next_run_at = due + timedelta(days=365)
        session.add(routine)
        session.add(job)
        await session.flush()
        session.add(run)
        await session.commit()
        run_id = run.id
    async with asyncio.timeout(JOB_DEADLINE):
        while True:
            async with runtime.sessions() as session:
                stored = await session.get(RoutineRun, run_id)
                if stored.status in {"succeeded", "failed"}:
                    break
            await asyncio.sleep(0.2)
    assert stored.status == "succeeded", stored.error
    (only,) = await runs_of(runtime, [uuid.UUID(created["id"])])
    assert only.id == run_id
    conversation_id = uuid.UUID(stored.steps[0]["conversation_id"])
    async with runtime.sessions() as session:
        statement = select(Message.role).where(col(Message.conversation_id) == conversation_id)
        assert sorted((await session.exec(statement)).all()) == ["assistant", "user"]
