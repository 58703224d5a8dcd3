"""A tenant's share of a process's job slots (issue 28).

Two slow uploads by one tenant held both of a worker's slots, and another tenant's 44-byte
text file waited behind them until it failed with `job_timeout`. So in every process that
runs jobs (a worker, the embedded default) one tenant may hold at most
`worker_concurrency - job_slots_kept_for_other_tenants` slots (at least one); a job of a
tenant at its share is not started but put back in the queue for `DEFER_SECONDS`, its slot
left to other tenants' jobs. The job stays `pending` and its attempts are not counted.

The count is per process, not across the fleet: each worker keeps slots for others, which
needs no coordination and holds however many workers run.
"""

from __future__ import annotations

import uuid
from collections import Counter

DEFER_SECONDS = 1.0


class JobDeferred(Exception):
    """The job's tenant holds its share of this process's slots: queue it again later, with
    `priority` (its tenant's turn, strongroom/jobs/turns.py)."""

    def __init__(self, job_id: uuid.UUID, priority: int = 0) -> None:
        super().__init__(f"job {job_id} deferred: its tenant holds its share of the slots")
        self.job_id = job_id
        self.priority = priority


class TenantSlots:
    """The slots each tenant holds in this process."""

    def __init__(self) -> None:
        self.held: Counter[uuid.UUID] = Counter()

    def take(self, tenant_id: uuid.UUID, share: int) -> bool:
        """Take a slot for the tenant unless it holds `share` already."""
        if self.held[tenant_id] >= share:
            return False
        self.held[tenant_id] += 1
        return True

    def give_back(self, tenant_id: uuid.UUID) -> None:
        self.held[tenant_id] -= 1
        if self.held[tenant_id] <= 0:
            del self.held[tenant_id]


def tenant_share(concurrency: int, kept_for_others: int) -> int:
    return max(1, concurrency - kept_for_others)
