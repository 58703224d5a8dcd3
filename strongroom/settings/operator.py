"""`strongroom operator`, which reconciles the custom resources."""

from __future__ import annotations

from pydantic import BaseModel, Field


class OperatorSettings(BaseModel):
    """`strongroom operator`, which reconciles the custom resources."""

    operator_resync_seconds: float = Field(
        default=300.0,
        gt=0,
        description=(
            "How often `strongroom operator` reconciles every resource again, repairing drift (a "
            "Secret deleted by hand, a row changed outside the operator)."
        ),
    )
    operator_metrics_port: int | None = Field(
        default=None,
        description=(
            "Port of the operator's Prometheus `/metrics` "
            "(`strongroom_operator_reconciliations_total{kind,outcome}`); the chart sets 9090."
        ),
    )
