"""What a routine run tells subscribers (issue 43): `routine.run.waiting_for_review`,
`routine.run.succeeded`, `routine.run.failed` and `routine.run.rejected`, recorded in the
outbox in the transaction that sets the run's state, with the run as its GET answers it."""

from __future__ import annotations

from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.metrics import ROUTINE_RUNS
from strongroom.outbox.enums import EventType
from strongroom.outbox.record import record_event
from strongroom.routines.models import RoutineRun, RunStatus
from strongroom.routines.views import run_view

EVENTS = {
    RunStatus.WAITING_FOR_REVIEW: EventType.ROUTINE_RUN_WAITING_FOR_REVIEW,
    RunStatus.SUCCEEDED: EventType.ROUTINE_RUN_SUCCEEDED,
    RunStatus.FAILED: EventType.ROUTINE_RUN_FAILED,
    RunStatus.REJECTED: EventType.ROUTINE_RUN_REJECTED,
}


async def record_run_event(session: AsyncSession, run: RoutineRun) -> None:
    """Record the event of the run's state, if that state has one, in `session`'s
    transaction; counts the outcome."""
    status = RunStatus(run.status)
    ROUTINE_RUNS.labels(status.value).inc()
    event_type = EVENTS.get(status)
    if event_type is None:
        return
    await record_event(
        session,
        tenant_id=run.tenant_id,
        environment=run.environment,
        event_type=event_type,
        data=run_view(run).model_dump(mode="json"),
    )
