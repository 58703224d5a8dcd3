"""What a reconcile function returns (the status to write and the Events to post) or raises
(NotReady: waiting for something, or refused for good)."""

from __future__ import annotations

from dataclasses import dataclass, field

from strongroom.operator.conditions import not_ready


class NotReady(Exception):
    """The resource cannot be reconciled yet (a missing tenant or user) or at all (an
    immutable field changed); `retry` says which."""

    def __init__(self, reason: str, message: str, *, retry: bool, fields: dict | None = None):
        super().__init__(message)
        self.reason, self.message, self.retry = reason, message, retry
        self.fields = fields or {}  # status fields still true beside the condition

    def status(self) -> dict:
        return self.fields | {"conditions": [not_ready(self.reason, self.message)]}


@dataclass
class Outcome:
    status: dict
    events: list[str] = field(default_factory=list)
