"""Telling a Tenant's ApiKeys at once that their tenant changed (issue 31 A).

An ApiKey reads its tenant from the database when it is reconciled, so it learned of its
tenant's deletion or restoration only at its next resync (5 minutes by default): meanwhile
it showed `active` for a tenant already gone, or `TenantDeleted` for one restored. The
tenant's handlers now write the tenant's state into an annotation of each of its ApiKeys
(found through a kopf index, not a listing); the ApiKey handler runs on a change of that
annotation as on a change of its spec. An ApiKey already told is not patched again.

An ApiKey waiting for its Tenant or its user (TenantNotFound, UserNotFound) is not retried
at a backoff but told (issue 44, item 10: it got its key at its next backoff, 2-21 s later,
since kopf runs no update handler while a creation handler waits for its retry). So the
state told carries the tenant's active users too: adding a user tells the keys waiting for
them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from strongroom.operator import pausing

GROUP, VERSION = "strongroom.io", "v1"
TENANT_STATE = "strongroom.io/tenant-state"
MERGE_PATCH = "application/merge-patch+json"


def active(tenant_id: str, spec: dict) -> str:
    """The state of a live tenant: its id and a digest of its active users' e-mails."""
    emails = sorted(
        user["email"].strip().lower()
        for user in spec.get("users") or []
        if user.get("active", True)
    )
    users = hashlib.sha256("\n".join(emails).encode()).hexdigest()[:16]
    return f"active {tenant_id} users {users}"


DELETED = "deleted"


async def tell(
    api_client: client.ApiClient, dependents: Iterable[tuple[str, str, str | None]], state: str
) -> int:
    """Write `state` into each dependent (namespace, name, state it was told) not told yet;
    returns how many were told. A dependent deleted meanwhile is skipped. Stops with
    `pausing.Paused` when the replica pauses meanwhile: the active one tells the rest."""
    custom, told = client.CustomObjectsApi(api_client), 0
    for namespace, name, seen in list(dependents):
        if seen == state:
            continue
        pausing.raise_if_paused()
        try:
            await custom.patch_namespaced_custom_object(
                GROUP, VERSION, namespace, "apikeys", name,
                {"metadata": {"annotations": {TENANT_STATE: state}}}, _content_type=MERGE_PATCH,
            )  # fmt: skip
        except ApiException as error:
            if error.status != 404:
                raise
        told += 1
    return told
