"""`GET /api/v2/me` (spec 2.1, D14)."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, RootModel

from strongroom.api.capability import Call, Capability, Routes
from strongroom.services import Services

routes = Routes()


class ApiKeyPrincipal(BaseModel):
    """The calling principal (spec 2.1)."""

    user_id: uuid.UUID
    tenant_id: uuid.UUID
    auth_method: str
    email: str
    api_key_id: uuid.UUID
    api_key_name: str
    api_key_prefix: str
    environment: str
    rate_limit_tier: str
    scopes: list[str]


class OAuthPrincipal(BaseModel):
    """The calling principal of an OAuth access token (D14): no API key fields."""

    user_id: uuid.UUID
    tenant_id: uuid.UUID
    auth_method: str
    email: str
    client_id: str
    environment: str
    rate_limit_tier: str
    scopes: list[str]


class Me(RootModel[ApiKeyPrincipal | OAuthPrincipal]):
    """The calling principal (spec 2.1, D14)."""


@routes.capability(
    Capability(
        name="meta.me",
        method="GET",
        path="/api/v2/me",
        summary="Return the calling principal",
        description="Any valid credential (an API key or an OAuth token); no scope needed.",
        tag="meta",
        cost=1,
        response=Me,
    )
)
async def me(call: Call[Services]) -> Me:
    principal = call.principal
    common = {
        "user_id": principal.user_id,
        "tenant_id": principal.tenant_id,
        "auth_method": principal.auth_method,
        "email": principal.email,
        "environment": principal.environment.value,
        "rate_limit_tier": principal.rate_limit_tier,
        "scopes": sorted(principal.scopes),
    }
    if principal.auth_method == "oauth":
        return Me(OAuthPrincipal(**common, client_id=principal.client_id))
    return Me(
        ApiKeyPrincipal(
            **common,
            api_key_id=principal.api_key_id,
            api_key_name=principal.api_key_name,
            api_key_prefix=principal.api_key_prefix,
        )
    )
