"""Fair ticks (issue 52, item 4; strongroom/routines/fire.py) on both backends: one tick
fires each tenant's share before any tenant's more, so another tenant's due routine is not
left behind one tenant's flood; a routine whose run is still waiting or running does not
pile up more runs: its fire is recorded `skipped`, naming that run, and the next fire after
the run ends runs.

The ticks here are this process's, at a `now` a day ahead, over routines made due then: the
real clock's ticks (the worker's on PostgreSQL, the embedded process's on SQLite) never see
them due. Other tests' routines are moved out of the way first, so that the batch holds only
these. Counts of runs, never seconds."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlmodel import col, select

from strongroom.db.types import utcnow
from strongroom.jobs.models import Job, JobKind, JobStatus
from strongroom.routines import fire
from strongroom.routines.fire import fire_due
from strongroom.routines.models import Routine, RoutineRun, RunStatus
from strongroom.tenants.models import RateLimitTier
from tests.routines.conftest import Routines
from tests.vault.conftest import Vault

ASK = {"type": "chat", "query": "Who is the employer?"}
EVERY_MINUTE = {"type": "schedule", "cron": "* * * * *", "timezone": "UTC"}
FAR = datetime(8999, 1, 1, tzinfo=utcnow().tzinfo)


async def every_minute(routines: Routines, project_id: str, name: str) -> uuid.UUID:
    created = await routines.create(
        name=name, project_id=project_id, trigger=EVERY_MINUTE, steps=[ASK]
    )
    return uuid.UUID(created["id"])


async def only_these_due(runtime, routine_ids: list[uuid.UUID]) -> None:
    """Other tests' enabled routines moved to the year 8999: not due at this test's `now`."""
    async with runtime.sessions() as session:
        statement = update(Routine).where(
            col(Routine.next_run_at).is_not(None), col(Routine.id).not_in(routine_ids)
        )
        await session.exec(statement.values(next_run_at=FAR))
        await session.commit()


async def due_at(runtime, routine_id: uuid.UUID, when: datetime) -> None:
    async with runtime.sessions() as session:
        statement = update(Routine).where(col(Routine.id) == routine_id)
        await session.exec(statement.values(next_run_at=when))
        await session.commit()


async def runs_of(runtime, routine_id: uuid.UUID) -> list[RoutineRun]:
    async with runtime.sessions() as session:
        statement = (
            select(RoutineRun)
            .where(col(RoutineRun.routine_id) == routine_id)
            .order_by(col(RoutineRun.scheduled_for))
        )
        return list((await session.exec(statement)).all())


def a_day_ahead() -> datetime:
    return (utcnow() + timedelta(days=1)).replace(second=0, microsecond=0)


async def test_another_tenants_due_routine_fires_in_the_first_tick_past_a_tenants_batch(
    routines: Routines, contract, client, make_credential, runtime, monkeypatch
):
    """One tenant holds more due routines than a batch, all due before the other tenant's:
    ordered by `next_run_at` alone the batch was all theirs (issue 52: another tenant's fire
    32-35 s late)."""
    monkeypatch.setattr(fire, "BATCH", 3)
    monkeypatch.setattr(fire, "TENANT_SHARE", 2, raising=False)  # new in issue 52
    flood = [await every_minute(routines, contract["project_id"], f"flood {n}") for n in range(4)]
    other = Routines(Vault(client, (await make_credential(tier=RateLimitTier.ENTERPRISE)).headers))
    theirs = await every_minute(other, await other.vault.create_project(), "theirs")
    await only_these_due(runtime, [*flood, theirs])
    at = a_day_ahead()
    for n, routine_id in enumerate(flood):  # due 4, 3, 2 and 1 minutes before theirs
        await due_at(runtime, routine_id, at - timedelta(minutes=len(flood) - n))
    await due_at(runtime, theirs, at)

    assert await fire_due(runtime, at + timedelta(seconds=1)) == 3
    [run] = await runs_of(runtime, theirs)
    assert run.scheduled_for == at and run.status != RunStatus.SKIPPED.value
    fired = [routine_id for routine_id in flood if await runs_of(runtime, routine_id)]
    assert fired == flood[:2]  # the tenant's share: its two earliest due

    assert await fire_due(runtime, at + timedelta(seconds=2)) == 2  # the rest, next tick
    for routine_id in flood:
        assert len(await runs_of(runtime, routine_id)) == 1


async def test_a_routine_with_a_pending_run_does_not_pile_up_runs(
    routines: Routines, contract, runtime
):
    routine_id = await every_minute(routines, contract["project_id"], "slow")
    await only_these_due(runtime, [routine_id])
    at = a_day_ahead()
    # A run of the previous minute still running (its job held by no worker: nothing ends it).
    async with runtime.sessions() as session:
        routine = await session.get(Routine, routine_id)
        held_id = uuid.uuid4()
        job = Job(
            subject_id=held_id,
            tenant_id=routine.tenant_id,
            environment=routine.environment,
            kind=JobKind.ROUTINE_RUN.value,
            status=JobStatus.RUNNING.value,
        )
        held = RoutineRun(
            id=held_id,
            routine_id=routine_id,
            tenant_id=routine.tenant_id,
            environment=routine.environment,
            job_id=job.id,
            status=RunStatus.RUNNING.value,
            trigger_type="schedule",
            fire_key=f"schedule:{(at - timedelta(minutes=1)).isoformat()}",
            scheduled_for=at - timedelta(minutes=1),
            steps=[],
        )
        session.add(job)
        await session.flush()
        session.add(held)
        await session.commit()
    await due_at(runtime, routine_id, at)

    for minute in range(3):  # three fires while it runs: recorded, none runs
        assert await fire_due(runtime, at + timedelta(minutes=minute, seconds=1)) == 0
    runs = await runs_of(runtime, routine_id)
    assert [run.status for run in runs] == ["running", "skipped", "skipped", "skipped"]
    for run in runs[1:]:
        assert run.job_id is None
        assert run.error["code"] == "previous_run_unfinished"
        assert run.error["run_id"] == str(held.id)
    assert [run.scheduled_for for run in runs[1:]] == [
        at + timedelta(minutes=minute) for minute in range(3)
    ]

    async with runtime.sessions() as session:  # the run ends: the next fire runs
        await session.exec(
            update(Job).where(col(Job.id) == job.id).values(status=JobStatus.SUCCEEDED.value)
        )
        await session.exec(
            update(RoutineRun)
            .where(col(RoutineRun.id) == held.id)
            .values(status=RunStatus.SUCCEEDED.value, finished_at=utcnow())
        )
        await session.commit()
    assert await fire_due(runtime, at + timedelta(minutes=3, seconds=1)) == 1
    latest = (await runs_of(runtime, routine_id))[-1]
    assert latest.scheduled_for == at + timedelta(minutes=3) and latest.job_id is not None
