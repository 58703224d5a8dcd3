"""How kopf runs the operator: the settings `handlers.start` applies at startup.

kopf retries a failed API request (a connection error, 5xx, 403 or 429) along
`networking.error_backoffs`, 54 s in all by default, and then gives up on it. On a real
cluster (issue 31 B) giving up did lasting harm: after an API server outage of about a
minute a resync timer's status patch escalated and killed the timer for good ("Task
exception was never retrieved ... runner of tenant"), and 403s while RBAC was still being
applied left kopf's CRD watch off until a restart. The operator cannot do its work without
the API server, so it waits for it: the same errors are retried without end, at most
`LONGEST_API_RETRY_SECONDS` apart, each attempt logged by kopf at ERROR (a lasting 403 shows
in the log at every attempt rather than once).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import kopf

FINALIZER = "strongroom.io/finalizer"
FIRST_API_RETRIES = (1, 1, 2, 3, 5, 8, 13, 21)  # kopf's own, seconds
LONGEST_API_RETRY_SECONDS = 30
# How long a replica's peering record counts without renewal (kopf: 60 s). A standby takes
# over once the active replica's record lapses, so after a kill -9 that is the wait (38-43 s
# measured with kopf's 60; issue 31 C). Records are renewed 5-10 s before they lapse: one
# PATCH of the peering object every 5-10 s per replica.
PEERING_LIFETIME_SECONDS = 15
# How long a replica waits, its peering record written, before kopf decides whether it is
# active: longer than a watch event takes to reach the other replicas.
PEERING_SETTLE_SECONDS = 2


class ApiRetries:
    """kopf's first backoffs, then one attempt every `LONGEST_API_RETRY_SECONDS`, without
    end. An iterable, not an iterator: kopf starts a new iteration for every request."""

    def __iter__(self) -> Iterator[float]:
        yield from FIRST_API_RETRIES
        while True:
            yield LONGEST_API_RETRY_SECONDS


def configure(settings: kopf.OperatorSettings) -> None:
    settings.persistence.finalizer = FINALIZER
    settings.posting.level = logging.CRITICAL  # no Event per logged retry; ours are explicit
    settings.networking.error_backoffs = ApiRetries()
    settings.peering.lifetime = PEERING_LIFETIME_SECONDS
