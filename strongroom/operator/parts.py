"""What the operator uses of its process (issue 54): the database's sessions, the settings,
the pepper API keys are hashed with, and the invalidation event every API process applies.

`strongroom.runtime.Runtime`, the composition root, is the one implementation; the startup
handler (`handlers.start`) builds it and every handler and reconcile function receives it
typed as this, as the request path receives its process as `RequestParts`."""

from __future__ import annotations

from typing import Protocol

from strongroom.admin import AdminParts
from strongroom.settings import Settings


class OperatorParts(AdminParts, Protocol):
    """The admin changes' parts (the sessions, the announcement), and these."""

    settings: Settings  # tenant_erasure_days, when a deleted tenant's data goes
    key_pepper: bytes  # an ApiKey's raw key is stored as its hash with this pepper

    async def close(self) -> None:
        """Release what the parts hold (at the operator's cleanup)."""
        ...
