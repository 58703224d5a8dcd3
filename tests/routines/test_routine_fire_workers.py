"""Exactly once with two real workers (issue 43), on PostgreSQL: every routine due at once
is fired by whichever worker's tick takes it first, one worker is SIGKILLed while they fire
and comes back, and each fire time still has one run whose steps ran once. Counts, never
seconds."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlmodel import col, select

from strongroom.chat.models import Message
from strongroom.db.types import utcnow
from strongroom.routines.models import Routine, RoutineRun
from tests.processes import WorkerProcess
from tests.routines.conftest import Routines
from tests.vault.conftest import JOB_DEADLINE

ROUTINES = 12


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
                ended = all(run.status in {"succeeded", "failed"} for run in runs)
                if fired == set(ids) and ended:
                    break
                await asyncio.sleep(0.2)
    fires = Counter((run.routine_id, run.scheduled_for) for run in runs)
    assert set(fires.values()) == {1}  # never twice (whichever minutes the test spanned)
    assert {run.status for run in runs} == {"succeeded"}
    # Each run's chat step answered once: one question and one answer per run.
    message_ids = [uuid.UUID(run.steps[0]["result_id"]) for run in runs]
    assert len(set(message_ids)) == len(runs)
    async with runtime.sessions() as session:
        statement = select(Message.id).where(col(Message.id).in_(message_ids))
        assert len((await session.exec(statement)).all()) == len(runs)


async def runs_of(runtime, ids: list[uuid.UUID]) -> list[RoutineRun]:
    async with runtime.sessions() as session:
        statement = select(RoutineRun).where(col(RoutineRun.routine_id).in_(ids))
        return list((await session.exec(statement)).all())
