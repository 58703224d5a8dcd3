"""Prometheus metrics of the request path (exposed on their own port with the chart issue)."""

from __future__ import annotations

from prometheus_client import Counter

RATE_LIMIT_DECISIONS = Counter(
    "strongroom_rate_limit_decisions_total",
    "Rate-limit decisions by tier and outcome (allowed, limited, fail_open).",
    ["tier", "outcome"],
)
IDEMPOTENCY_OUTCOMES = Counter(
    "strongroom_idempotency_total",
    "Idempotency-Key handling by outcome "
    "(executed, replayed, in_progress, key_reused, bypassed, unavailable).",
    ["outcome"],
)
CREDITS_BILLED = Counter("strongroom_credits_billed_total", "Credits billed to tenants.")
