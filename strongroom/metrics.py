"""Prometheus metrics, served on their own port (`strongroom serve --metrics-port`).

Several Hypercorn workers write to one directory in prometheus-client's multiprocess mode
(`PROMETHEUS_MULTIPROC_DIR`, set by `serve` before the workers start); the serving process
sums them on every scrape. Labels never carry a secret or an id: routes are URL rules
(`/api/v2/vault/projects/<uuid:project_id>`), not paths.
"""

from __future__ import annotations

import functools

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.multiprocess import MultiProcessCollector

HTTP_REQUESTS = Counter(
    "strongroom_http_requests_total", "HTTP requests by route, method and status.",
    ["route", "method", "status"],
)  # fmt: skip
HTTP_LATENCY = Histogram(
    "strongroom_http_request_duration_seconds", "Time to answer, by route and method.",
    ["route", "method"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)  # fmt: skip


@functools.lru_cache(maxsize=4096)
def request_counter(route: str, method: str, status: str):
    """HTTP_REQUESTS' child for these labels: `labels()` takes a lock and checks its
    arguments on every call, and every request counts itself (issue 29)."""
    return HTTP_REQUESTS.labels(route, method, status)


@functools.lru_cache(maxsize=4096)
def latency_histogram(route: str, method: str):
    """HTTP_LATENCY's child for these labels (see `request_counter`)."""
    return HTTP_LATENCY.labels(route, method)


AUTH_FAILURES = Counter(
    "strongroom_auth_failures_total", "Refused credentials by problem code.", ["code"]
)

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
OPERATOR_RECONCILIATIONS = Counter(
    "strongroom_operator_reconciliations_total",
    "Operator reconciliations by kind and outcome (succeeded, waiting, refused, failed).",
    ["kind", "outcome"],
)
CREDITS_BILLED = Counter("strongroom_credits_billed_total", "Credits billed to tenants.")
JOBS_FINISHED = Counter(
    "strongroom_jobs_finished_total", "Background jobs ended, by kind and status.",
    ["kind", "status"],
)  # fmt: skip
JOBS_RETRIED = Counter(
    "strongroom_jobs_retried_total",
    "Jobs sent again by a worker's sweep, by reason (stalled, lost).",
    ["reason"],
)
MCP_TOOL_CALLS = Counter(
    "strongroom_mcp_tool_calls_total",
    "MCP tool calls by tool and outcome (ok, or the problem's code).",
    ["tool", "outcome"],
)
INGESTED_PAGES = Counter("strongroom_ingested_pages_total", "Document pages indexed.")
OCR_PAGES = Counter(
    "strongroom_ocr_pages_total", "Pages whose text was in their image, read by OCR (issue 51)."
)
UNSUPPORTED_ANSWERS = Counter(
    "strongroom_chat_unsupported_answers_total",
    "Chat answers asserting a value (number, amount, date, duration, percentage) that no "
    "passage they cite holds, by engine.",
    ["engine"],
)
SEARCH_HALVES = Counter(
    "strongroom_search_halves_total",
    "Searches' halves (terms, vectors) by where they were scored (held, database).",
    ["half", "source"],
)

WEBHOOK_DELIVERIES = Counter(
    "strongroom_webhook_deliveries_total",
    "Webhook delivery attempts by outcome (delivered; retrying: failed, to be tried again; "
    "failed: the last attempt failed).",
    ["outcome"],
)
WEBHOOK_DELIVERY_LATENCY = Histogram(
    "strongroom_webhook_delivery_seconds",
    "From an event's recording to its successful delivery, retries included.",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600, 86400),
)

# Routines (issue 43).
ROUTINE_RUNS = Counter(
    "strongroom_routine_runs_total",
    "Routine runs by outcome (succeeded, failed, rejected, skipped; waiting_for_review each "
    "time a run stops for review).",
    ["outcome"],
)
ROUTINE_FIRE_LATENESS = Histogram(
    "strongroom_routine_fire_lateness_seconds",
    "From a scheduled routine's fire time to its run being recorded.",
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600),
)


def serve_multiprocess_metrics(host: str, port: int, directory: str) -> None:
    """Serve the workers' summed metrics over HTTP from a daemon thread of this process."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=directory)
    start_http_server(port, addr=host, registry=registry)


BACKGROUND_ROUNDS = Counter(
    "strongroom_background_rounds_total",
    "Rounds of the background tasks (strongroom.background) by task and outcome "
    "(succeeded, failed).",
    ["task", "outcome"],
)
BACKGROUND_RESTARTS = Counter(
    "strongroom_background_restarts_total",
    "Background tasks started again after they ended while nothing stopped them.",
    ["task"],
)
