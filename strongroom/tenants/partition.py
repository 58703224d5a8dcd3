"""Where a tenant's data lives: its tenant and environment (D13). A request's principal is
one; a background job, acting for whoever started it, builds one from its own row."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class Environment(StrEnum):
    """Each tenant has live and test data; an API key's prefix picks one (D13)."""

    LIVE = "live"
    TEST = "test"


class Partition(Protocol):
    @property
    def tenant_id(self) -> uuid.UUID: ...

    @property
    def environment(self) -> Environment: ...


@dataclass(frozen=True)
class DataPartition:
    tenant_id: uuid.UUID
    environment: Environment

    @classmethod
    def of(cls, row) -> DataPartition:
        """The partition of a row with `tenant_id` and `environment` columns."""
        return cls(row.tenant_id, Environment(row.environment))
