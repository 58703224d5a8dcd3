"""Firing routines exactly once (issue 43, strongroom/routines/fire.py) on both backends:
racing ticks record one run per fire, the database refuses a second, a missed fire runs once
or is recorded skipped past the window, a disabled routine fires nothing, the processes that
run jobs fire by themselves, and a document that becomes ready starts its project's
`document_ready` routines once. Counts of runs, never seconds."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from strongroom.db.types import utcnow
from strongroom.routines.fire import MISSED_FIRE_WINDOW, fire_due
from strongroom.routines.models import Routine, RoutineRun
from tests.documents import make_pdf
from tests.routines.conftest import Routines
from tests.vault.conftest import JOB_DEADLINE

ASK = {"type": "chat", "query": "Who is the employer?"}


async def scheduled(routines: Routines, project_id: str, cron: str, **extra) -> dict:
    return await routines.create(
        name="Scheduled",
        project_id=project_id,
        trigger={"type": "schedule", "cron": cron, "timezone": "UTC"},
        steps=[ASK],
        **extra,
    )


async def due_at(runtime, routine_id: str, when) -> None:
    """Make the routine due at `when` (as if its time came while nothing ran)."""
    async with runtime.sessions() as session:
        statement = update(Routine).where(col(Routine.id) == uuid.UUID(routine_id))
        await session.exec(statement.values(next_run_at=when))
        await session.commit()


async def runs_of(runtime, routine_id: str) -> list[RoutineRun]:
    async with runtime.sessions() as session:
        statement = select(RoutineRun).where(col(RoutineRun.routine_id) == uuid.UUID(routine_id))
        return list((await session.exec(statement)).all())


async def next_run_at(runtime, routine_id: str):
    async with runtime.sessions() as session:
        return (await session.get(Routine, uuid.UUID(routine_id))).next_run_at


async def test_racing_ticks_record_one_run_per_fire(routines: Routines, contract, runtime):
    routine = await scheduled(routines, contract["project_id"], "* * * * *")
    now = utcnow()
    await due_at(runtime, routine["id"], now.replace(second=0, microsecond=0))
    # Four ticks at once in this process (and, on PostgreSQL, the worker's own ticks: one
    # may hold the routine, so these skip it, and record the fire at its own `now`).
    await asyncio.gather(*(fire_due(runtime, now) for _ in range(4)))
    async with asyncio.timeout(JOB_DEADLINE):
        while True:
            if runs := await runs_of(runtime, routine["id"]):
                break
            await asyncio.sleep(0.1)
    fired = [run.scheduled_for for run in runs]
    assert len(fired) == len(set(fired))  # each time once
    assert min(fired) >= now.replace(second=0, microsecond=0)
    assert await next_run_at(runtime, routine["id"]) > now


async def test_the_database_refuses_a_second_run_of_the_same_fire(
    routines: Routines, contract, runtime
):
    routine = await scheduled(routines, contract["project_id"], "0 7 * * *", enabled=False)
    fire = utcnow().replace(microsecond=0)
    row = {
        "routine_id": uuid.UUID(routine["id"]),
        "tenant_id": None,
        "environment": "test",
        "trigger_type": "schedule",
        "scheduled_for": fire,
        "fire_key": f"schedule:{fire.isoformat()}",
        "steps": [],
    }
    async with runtime.sessions() as session:
        found = await session.get(Routine, uuid.UUID(routine["id"]))
        row["tenant_id"] = found.tenant_id
        session.add(RoutineRun(**row))
        await session.commit()
    with pytest.raises(IntegrityError):
        async with runtime.sessions() as session:
            session.add(RoutineRun(**row))
            await session.commit()


async def test_a_fire_missed_within_the_window_runs_once_for_the_latest_time(
    routines: Routines, contract, runtime
):
    routine = await scheduled(routines, contract["project_id"], "* * * * *")
    now = utcnow()
    await due_at(runtime, routine["id"], now - timedelta(minutes=10))
    await fire_due(runtime, now)
    [run] = await runs_of(runtime, routine["id"])
    assert run.scheduled_for == now.replace(second=0, microsecond=0)
    assert run.status in {"queued", "running", "succeeded"}


async def test_a_fire_missed_past_the_window_is_recorded_skipped(
    routines: Routines, contract, runtime
):
    missed = (utcnow() - MISSED_FIRE_WINDOW - timedelta(minutes=30)).replace(
        second=0, microsecond=0
    )
    cron = f"{missed.minute} {missed.hour} * * *"  # once a day, last at `missed`
    routine = await scheduled(routines, contract["project_id"], cron)
    await due_at(runtime, routine["id"], missed)
    await fire_due(runtime)
    [run] = await runs_of(runtime, routine["id"])
    assert run.status == "skipped" and run.scheduled_for == missed and run.job_id is None
    listed = await routines.request("GET", f"/api/v2/routines/{routine['id']}/runs")
    assert listed["data"][0]["status"] == "skipped"
    assert await next_run_at(runtime, routine["id"]) == missed + timedelta(days=1)


async def test_a_disabled_routine_fires_nothing(routines: Routines, contract, runtime):
    routine = await scheduled(routines, contract["project_id"], "* * * * *", enabled=False)
    await due_at(runtime, routine["id"], utcnow() - timedelta(minutes=1))  # even if due
    await fire_due(runtime)
    assert await runs_of(runtime, routine["id"]) == []


async def test_the_processes_that_run_jobs_fire_due_routines_themselves(
    routines: Routines, contract, runtime
):
    """The embedded default's process (SQLite) and the real worker (PostgreSQL) tick."""
    routine = await scheduled(routines, contract["project_id"], "* * * * *")
    await due_at(runtime, routine["id"], utcnow() - timedelta(seconds=1))
    async with asyncio.timeout(JOB_DEADLINE):
        while True:
            listed = await routines.request("GET", f"/api/v2/routines/{routine['id']}/runs")
            if listed["data"]:
                break
            await asyncio.sleep(0.2)
    [run] = listed["data"]
    assert run["trigger_type"] == "schedule"
    assert (await routines.until(run["id"], {"succeeded", "failed"}))["status"] == "succeeded"


async def test_a_ready_document_starts_its_projects_document_ready_routines_once(
    routines: Routines, runtime
):
    vault = routines.vault
    project_id = await vault.create_project()
    pdfs = await routines.create(
        name="New PDFs",
        project_id=project_id,
        trigger={"type": "document_ready", "name_pattern": "*.PDF"},
        steps=[ASK],
    )
    others = await routines.create(
        name="Spreadsheets only",
        project_id=project_id,
        trigger={"type": "document_ready", "file_types": ["xlsx"]},
        steps=[ASK],
    )
    document = await vault.ingested(
        make_pdf(["The Employer is Harbour Holdings Ltd."]), "letter.pdf", project_id
    )
    async with asyncio.timeout(JOB_DEADLINE):
        while True:
            if runs := await runs_of(runtime, pdfs["id"]):
                break
            await asyncio.sleep(0.1)
    [run] = runs
    assert run.trigger_type == "document_ready" and str(run.document_id) == document["id"]
    finished = await routines.until(str(run.id), {"succeeded", "failed"})
    assert finished["status"] == "succeeded", finished
    assert await runs_of(runtime, others["id"]) == []  # not an xlsx
    assert len(await runs_of(runtime, pdfs["id"])) == 1


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)  # SQLite has no row locks
async def test_a_fire_is_not_held_up_by_a_run_being_recorded_for_the_routine(
    routines: Routines, contract, runtime
):
    """A transaction inserting a run of the routine (a manual start, a document's run) holds
    its row `FOR KEY SHARE` for the foreign key. The fire locks the row `FOR NO KEY UPDATE`
    (it changes `next_run_at`, no key), which does not conflict: with `FOR UPDATE` every tick
    skipped the routine until that transaction ended."""
    routine = await scheduled(routines, contract["project_id"], "* * * * *")
    routine_id = uuid.UUID(routine["id"])
    await due_at(runtime, routine["id"], utcnow() + timedelta(days=1))  # not yet
    async with runtime.sessions() as holder:
        found = await holder.get(Routine, routine_id)
        holder.add(
            RoutineRun(
                routine_id=routine_id,
                tenant_id=found.tenant_id,
                environment=found.environment,
                trigger_type="manual",
                steps=[],
            )
        )
        await holder.flush()  # the INSERT, its key share on the routine held until rollback
        await due_at(runtime, routine["id"], utcnow().replace(second=0, microsecond=0))
        async with asyncio.timeout(JOB_DEADLINE):
            while not await runs_of(runtime, routine["id"]):
                await fire_due(runtime)  # this process's tick, beside the worker's
                await asyncio.sleep(0.1)
        await holder.rollback()
    assert {run.trigger_type for run in await runs_of(runtime, routine["id"])} == {"schedule"}
