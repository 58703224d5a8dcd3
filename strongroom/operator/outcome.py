"""What a reconcile function returns (the status to write and the Events to post) or raises
(NotReady: waiting for something, or refused for good)."""

from __future__ import annotations

from dataclasses import dataclass, field

from strongroom.operator.conditions import not_ready


class NotReady(Exception):
    """The resource cannot be reconciled yet (a missing tenant or user) or at all (an
    immutable field changed); `retry` says whether to try again after a backoff. `told`: it
    waits to be told (a Tenant's handlers tell its ApiKeys when it comes, is restored or its
    users change: `dependents`) and retries at that moment, not at a backoff; the resync
    timer tries again in any case."""

    def __init__(self, reason: str, message: str, *, retry: bool, fields: dict | None = None,
                 told: bool = False):  # fmt: skip
        super().__init__(message)
        self.reason, self.message, self.retry, self.told = reason, message, retry, told
        self.fields = fields or {}  # status fields still true beside the condition

    def status(self) -> dict:
        return self.fields | {"conditions": [not_ready(self.reason, self.message)]}


@dataclass
class Outcome:
    status: dict
    events: list[str] = field(default_factory=list)
