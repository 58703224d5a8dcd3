"""`GET /api/v2/me` (spec 2.1, D14)."""

from __future__ import annotations

import uuid

from pydantic import BaseModel

from strongroom.api.capability import Call, Capability, Routes

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


@routes.capability(
    Capability(
        name="meta.me",
        method="GET",
        path="/api/v2/me",
        summary="Return the calling principal",
        description="Any valid credential, no scope needed (spec 5.4).",
        tag="meta",
        cost=1,
        response=ApiKeyPrincipal,
    )
)
async def me(call: Call) -> ApiKeyPrincipal:
    principal = call.principal
    return ApiKeyPrincipal(
        user_id=principal.user_id,
        tenant_id=principal.tenant_id,
        auth_method=principal.auth_method,
        email=principal.email,
        api_key_id=principal.api_key_id,
        api_key_name=principal.api_key_name,
        api_key_prefix=principal.api_key_prefix,
        environment=principal.environment.value,
        rate_limit_tier=principal.rate_limit_tier,
        scopes=sorted(principal.scopes),
    )
