"""What one delivery attempt came to (strongroom/outbox/sender.py makes them), apart from
the HTTP client, so the dispatcher's process imports httpx only when it sends."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeliveryAttempt:
    status_code: int | None
    body: str  # the answer's first kilobyte (sender.KEPT_BYTES), as sent
    error: str | None
    seconds: float

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300
