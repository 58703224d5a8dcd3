"""Webhook endpoints (issue 30, docs/webhooks.md): register where events go, read what was
delivered, and send a delivery again.

Costs (D19's pattern): every read 1 credit, creating an endpoint or rotating its secret 2
(as creating a project), changing, deleting or retrying 1. Deliveries themselves are free.
Writes need an API key (D15); reads take OAuth tokens that hold `webhooks:read`.

The work behind them (endpoints.py: the tables, sealed secrets, address checks) is imported
at the first webhooks request rather than at every start (issue 29): `endpoints` is a
`strongroom.lazy.LazyModule`.
"""

from __future__ import annotations

from quart import Response

from strongroom.api.capability import Call, Capability, Routes
from strongroom.api.pagination import PageQuery, page_of
from strongroom.auth.scopes import Scope
from strongroom.lazy import LazyModule
from strongroom.services import Services
from strongroom.webhooks.schemas import (
    CreateEndpoint,
    DeliveryPage,
    DeliveryView,
    EndpointPage,
    EndpointView,
    EndpointWithSecret,
    UpdateEndpoint,
)

endpoints = LazyModule("strongroom.webhooks.endpoints")

routes = Routes()

READ = frozenset({Scope.WEBHOOKS_READ.value})
WRITE = frozenset({Scope.WEBHOOKS_WRITE.value})
ENDPOINTS = "/api/v2/webhooks/endpoints"
ENDPOINT = ENDPOINTS + "/<uuid:endpoint_id>"


@routes.capability(
    Capability(
        name="webhooks.create_endpoint",
        method="POST",
        path=ENDPOINTS,
        summary="Register a webhook endpoint",
        description="Events of the listed types are POSTed to `url`, signed as Standard "
        "Webhooks says with the `secret` answered here once (docs/webhooks.md). The URL must "
        "resolve to public addresses only. An `Idempotency-Key` makes a retry safe (its "
        "replay answers the same secret).",
        tag="webhooks",
        scopes=WRITE,
        cost=2,
        oauth=False,
        status=201,
        body=CreateEndpoint,
        response=EndpointWithSecret,
    )
)
async def create_endpoint(call: Call[Services]) -> EndpointWithSecret:
    endpoint, secret = await endpoints.create(call, call.body)
    return _with_secret(endpoint, secret)


def _with_secret(endpoint, secret: str) -> EndpointWithSecret:
    view = EndpointView.model_validate(endpoint).model_dump()
    return EndpointWithSecret.model_validate(view | {"secret": secret})


@routes.capability(
    Capability(
        name="webhooks.list_endpoints",
        method="GET",
        path=ENDPOINTS,
        summary="List webhook endpoints, newest first",
        tag="webhooks",
        scopes=READ,
        cost=1,
        query=PageQuery,
        response=EndpointPage,
    )
)
async def list_endpoints(call: Call[Services]) -> EndpointPage:
    query: PageQuery = call.query
    scope = "webhooks.list_endpoints"
    after = call.services.cursors.after(scope, query.cursor)
    rows, has_more = await endpoints.page(call, limit=query.page_size, after=after)
    return page_of(EndpointPage, rows, has_more, cursors=call.services.cursors, scope=scope)


@routes.capability(
    Capability(
        name="webhooks.get_endpoint",
        method="GET",
        path=ENDPOINT,
        summary="Get a webhook endpoint",
        tag="webhooks",
        scopes=READ,
        cost=1,
        response=EndpointView,
    )
)
async def get_endpoint(call: Call[Services]) -> EndpointView:
    return EndpointView.model_validate(await endpoints.find(call, call.path["endpoint_id"]))


@routes.capability(
    Capability(
        name="webhooks.update_endpoint",
        method="PATCH",
        path=ENDPOINT,
        summary="Change a webhook endpoint, or enable it again",
        description="Only the fields sent change. `status: enabled` turns on an endpoint "
        "that was disabled after its deliveries kept failing; its pending deliveries resume.",
        tag="webhooks",
        scopes=WRITE,
        cost=1,
        oauth=False,
        body=UpdateEndpoint,
        response=EndpointView,
    )
)
async def update_endpoint(call: Call[Services]) -> EndpointView:
    endpoint = await endpoints.find(call, call.path["endpoint_id"])
    return EndpointView.model_validate(await endpoints.change(call, endpoint, call.body))


@routes.capability(
    Capability(
        name="webhooks.delete_endpoint",
        method="DELETE",
        path=ENDPOINT,
        summary="Delete a webhook endpoint and its deliveries",
        tag="webhooks",
        scopes=WRITE,
        cost=1,
        oauth=False,
        status=204,
    )
)
async def delete_endpoint(call: Call[Services]) -> Response:
    await endpoints.remove(call, await endpoints.find(call, call.path["endpoint_id"]))
    return Response(b"", status=204)


@routes.capability(
    Capability(
        name="webhooks.rotate_secret",
        method="POST",
        path=ENDPOINT + "/rotate-secret",
        summary="Give a webhook endpoint a new signing secret",
        description="Answers the new `secret` once. For 24 hours the old one signs too: each "
        "delivery's `webhook-signature` holds both signatures, so receivers can switch over.",
        tag="webhooks",
        scopes=WRITE,
        cost=2,
        oauth=False,
        response=EndpointWithSecret,
    )
)
async def rotate_secret(call: Call[Services]) -> EndpointWithSecret:
    endpoint = await endpoints.find(call, call.path["endpoint_id"])
    secret = await endpoints.rotate(call, endpoint)
    return _with_secret(endpoint, secret)


@routes.capability(
    Capability(
        name="webhooks.list_deliveries",
        method="GET",
        path=ENDPOINT + "/deliveries",
        summary="List an endpoint's deliveries, newest first",
        tag="webhooks",
        scopes=READ,
        cost=1,
        query=PageQuery,
        response=DeliveryPage,
    )
)
async def list_deliveries(call: Call[Services]) -> DeliveryPage:
    query: PageQuery = call.query
    endpoint = await endpoints.find(call, call.path["endpoint_id"])
    scope = f"webhooks.list_deliveries:{endpoint.id}"
    after = call.services.cursors.after(scope, query.cursor)
    views, has_more = await endpoints.deliveries(call, endpoint, limit=query.page_size, after=after)
    return page_of(DeliveryPage, views, has_more, cursors=call.services.cursors, scope=scope)


@routes.capability(
    Capability(
        name="webhooks.retry_delivery",
        method="POST",
        path=ENDPOINT + "/deliveries/<uuid:delivery_id>/retry",
        summary="Send a delivery again now",
        description="A failed delivery gets one more attempt, a pending one is attempted at "
        "once, a succeeded one is sent again (same `webhook-id`). For a disabled endpoint it "
        "waits until the endpoint is enabled again.",
        tag="webhooks",
        scopes=WRITE,
        cost=1,
        oauth=False,
        status=202,
        response=DeliveryView,
    )
)
async def retry_delivery(call: Call[Services]) -> DeliveryView:
    endpoint = await endpoints.find(call, call.path["endpoint_id"])
    return await endpoints.retry(call, endpoint, call.path["delivery_id"])
