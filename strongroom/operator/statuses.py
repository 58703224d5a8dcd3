"""Writing a resource's status: by the operator itself, not through kopf's patch (issue 44,
item 6).

kopf applies the patch a handler leaves after the handler returns, outside of it: a status
the API server refuses (422, e.g. a CRD older than the operator whose schema lacks a value
the operator writes) raised there, out of reach of the handler's own error handling. In a
timer that killed the timer for good ("Task exception was never retrieved"): its resource
was never repaired again, and nothing said why. Written here, a refusal is answered inside
the handler: the status is written again with only what the operator needs to find its work
(ids and names) and `Ready=False`, reason `StatusRefused`, with the API server's words; if
even that is refused, only the condition; and if that too, the refusal is logged. The
handler, and its timer, go on either way.
"""

from __future__ import annotations

import logging

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from strongroom.operator.conditions import not_ready
from strongroom.operator.failures import describe

MERGE_PATCH = "application/merge-patch+json"
PLURALS = {"Tenant": "tenants", "ApiKey": "apikeys", "OAuthClient": "oauthclients"}
# What the operator reads back from status to find its work again: kept when the rest of a
# status is refused.
IDENTITY = ("keyId", "prefix", "secretName", "tenantId", "clientId")
REFUSED = (400, 422)  # the API server refused the content; sending it again will not help
logger = logging.getLogger(__name__)


async def write_status(api_client: client.ApiClient, body: dict, status: dict) -> None:
    """Merge `status` into the status of the resource `body`. A resource gone meanwhile is
    skipped. A refused status is replaced as the module says; other failures (the API server
    unreachable, 5xx) raise for the handler's retry."""
    refusal = await _refusal_of(api_client, body, status)
    if refusal is None:
        return
    meta = body.get("metadata", {})
    where = f"{body.get('kind')} {meta.get('namespace', '')}/{meta.get('name')}"
    logger.warning("the status of %s is refused; writing what it can: %s", where, refusal)
    condition = not_ready(
        "StatusRefused",
        f"the operator's status for this {body.get('kind', 'resource')} was refused: {refusal}. "
        "Apply the CRDs of the operator's version (crds/) to accept it",
    )
    fallbacks = (
        {name: status[name] for name in IDENTITY if name in status} | {"conditions": [condition]},
        {"conditions": [condition]},
    )
    for fallback in fallbacks:
        if await _refusal_of(api_client, body, fallback) is None:
            return
    logger.error("the status of %s is refused, even its Ready condition: %s", where, refusal)


async def _refusal_of(api_client: client.ApiClient, body: dict, status: dict) -> str | None:
    """Patch `status` in: None when it is written (or the resource is gone), the API
    server's refusal when it refused the content; any other failure raises."""
    try:
        await _patch(api_client, body, status)
    except ApiException as error:
        if error.status == 404:
            return None
        if error.status not in REFUSED:
            raise
        return describe(error)[1]
    return None


async def _patch(api_client: client.ApiClient, body: dict, status: dict) -> None:
    custom, meta = client.CustomObjectsApi(api_client), body["metadata"]
    group, version = body["apiVersion"].split("/")
    plural = PLURALS[body["kind"]]
    if meta.get("namespace"):
        await custom.patch_namespaced_custom_object_status(
            group, version, meta["namespace"], plural, meta["name"], {"status": status},
            _content_type=MERGE_PATCH,
        )  # fmt: skip
    else:
        await custom.patch_cluster_custom_object_status(
            group, version, plural, meta["name"], {"status": status}, _content_type=MERGE_PATCH
        )
