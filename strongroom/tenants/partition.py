"""Where a tenant's data lives: its tenant and environment (D13). A request's principal is
one; a background job, acting for whoever started it, builds one from its own row."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol

from strongroom.auth.keys import Environment


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
