"""Routines and runs as their GETs answer them (and as webhook events carry them)."""

from __future__ import annotations

from strongroom.routines.models import Routine, RoutineRun, RunStatus, StepStatus
from strongroom.routines.schemas import ReviewView, RoutineRunView, RoutineView, RunStepView


def view(routine: Routine) -> RoutineView:
    return RoutineView.model_validate(routine, from_attributes=True)


def run_view(run: RoutineRun) -> RoutineRunView:
    """The run as its GET answers it (and as its webhook events carry it)."""
    steps = [
        RunStepView(
            position=index + 1,
            type=step["type"],
            status=StepStatus(step["status"]),
            result_type=step.get("result_type"),
            result_id=step.get("result_id"),
            conversation_id=step.get("conversation_id"),
            documents_from_step=step.get("documents_from_step"),
            error=step.get("error"),
            started_at=step.get("started_at"),
            finished_at=step.get("finished_at"),
        )
        for index, step in enumerate(run.steps)
    ]
    return RoutineRunView(
        id=run.id,
        routine_id=run.routine_id,
        status=RunStatus(run.status),
        trigger_type=run.trigger_type,
        scheduled_for=run.scheduled_for,
        document_id=run.document_id,
        steps=steps,
        review=None if run.review is None else ReviewView.model_validate(run.review),
        error=run.error,
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
    )
