"""Webhook endpoints and the delivery of their events."""

from __future__ import annotations

from pydantic import BaseModel, Field

from strongroom.settings.base import shown_default


class WebhookSettings(BaseModel):
    """Webhook endpoints and the delivery of their events."""

    webhooks_allow_private_urls: bool = Field(
        default=False,
        json_schema_extra=shown_default("`false` (`true` in `strongroom dev`)"),
        description=(
            "Let webhook endpoints be loopback, private, link-local (cloud metadata), "
            "carrier-grade NAT or other non-public addresses. Refused otherwise, at creation (422)"
            " and at each delivery, against the address connected to ([webhooks.md](webhooks.md))."
            " Helm: `webhooks.allowPrivateUrls`."
        ),
    )
    webhooks_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=60,
        description=(
            "How long one webhook delivery may take, connection to answer (at most 60). Helm: "
            "`webhooks.timeoutSeconds`."
        ),
    )
    webhooks_max_attempts: int = Field(
        default=15,
        ge=1,
        le=50,
        description=(
            "Attempts at one delivery before it is `failed` and its endpoint disabled; with the "
            "default waits, about three days. Helm: `webhooks.maxAttempts`."
        ),
    )
    webhooks_first_retry_seconds: float = Field(
        default=5.0,
        gt=0,
        description=(
            "Wait after a delivery's first failed attempt; each later wait is 3 times the one "
            "before, at most 12 hours, give or take a fifth at random."
        ),
    )
    webhooks_poll_seconds: float = Field(
        default=1.0,
        gt=0,
        description=(
            "How often a process that delivers webhooks (a worker, or the embedded default) looks "
            "for deliveries due: retries, and `retry` calls made through another process. An event"
            " recorded by the process itself is sent as its transaction commits."
        ),
    )
    webhooks_concurrency: int = Field(
        default=8,
        ge=1,
        le=100,
        description="Webhook deliveries one process makes at once. Helm: `webhooks.concurrency`.",
    )
    webhooks_slots_kept_for_other_tenants: int = Field(
        default=2,
        ge=0,
        description=(
            "Of a process's `STRONGROOM_WEBHOOKS_CONCURRENCY` delivery slots (a worker's, or the "
            "embedded default's), how many one tenant's deliveries leave to other tenants; a "
            "tenant holds at least one. Its other due deliveries wait in the table (no attempt "
            "counted) while other tenants' go, so one tenant's slow or hanging endpoints cannot "
            "hold up another's deliveries (issue 44; [webhooks.md](webhooks.md#fairness)). `0`: no"
            " share. Helm: `webhooks.slotsKeptForOtherTenants`."
        ),
    )
    webhooks_endpoint_concurrency: int = Field(
        default=2,
        ge=1,
        le=10,
        description=(
            "Deliveries to one webhook endpoint in flight at once, counted across every process "
            "that delivers (1-10): an endpoint that hangs holds at most this many slots. Helm: "
            "`webhooks.endpointConcurrency`."
        ),
    )
    webhooks_max_endpoints: int = Field(
        default=20,
        ge=1,
        description=(
            "Webhook endpoints one tenant may have in one environment; one more is 422. Helm: "
            "`webhooks.maxEndpoints`."
        ),
    )
    webhooks_retention_days: int = Field(
        default=30,
        ge=1,
        description=(
            "Days a webhook event and its deliveries are kept (deleted hourly by the delivering "
            "processes). Helm: `webhooks.retentionDays`."
        ),
    )
