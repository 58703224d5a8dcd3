"""Rate limits, and how large and how slow a request body may be."""

from __future__ import annotations

from pydantic import BaseModel, Field


class LimitSettings(BaseModel):
    """Rate limits, and how large and how slow a request body may be."""

    rate_limit_tiers: dict[str, tuple[int, int]] = Field(
        default={
            "free": (10, 20),
            "standard": (60, 120),
            "pro": (300, 600),
            "enterprise": (1500, 3000),
        },
        description=(
            "JSON: tier -> [tokens per minute, burst] (D18). An unknown tier falls back to "
            "`standard`."
        ),
    )
    max_json_body_bytes: int = Field(
        default=1024 * 1024,
        ge=1024,
        description="Largest JSON request body; larger is 413 `payload_too_large`.",
    )
    upload_max_bytes: int = Field(
        default=100 * 1024 * 1024,
        ge=1,
        description=(
            "Largest document upload (D42); larger is 413 `file_too_large` with `max_bytes`. "
            "Upload paths are not held to `MAX_JSON_BODY_BYTES`. Each upload in progress is "
            "spooled to disk first, up to this size."
        ),
    )
    upload_timeout_seconds: float = Field(
        default=900.0,
        gt=0,
        description=(
            "Longest an upload's body (documents, templates) may take to arrive in full; past it "
            "the upload stops with 408 `request_timeout` and leaves nothing behind. The default "
            "lets 100 MiB arrive at about 1 Mbit/s."
        ),
    )
    upload_idle_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description=(
            "Longest an upload may send nothing at all; past it 408 `request_timeout` (a client "
            "that stalls holds no spool file or connection for long)."
        ),
    )
    request_body_timeout_seconds: float = Field(
        default=60.0,
        gt=0,
        description=(
            "Longest a request body other than an upload (JSON, form, `/mcp`) may take to arrive; "
            "past it, or past `STRONGROOM_UPLOAD_IDLE_TIMEOUT_SECONDS` with nothing sent, the "
            "request is answered 408 `request_timeout` (`strongroom/api/body_deadline.py`, issue "
            "28)."
        ),
    )
