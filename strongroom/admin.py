"""Administrative changes that the API must see at once (D16): each commits its change and
then publishes the invalidation event every API process applies to its key cache.

The CLI and the operator use these; never change keys, users or tenants behind the API's
back without publishing. They need only the database's sessions and the announcement
(`AdminParts`), which the CLI's Runtime and the operator's `OperatorParts` both have.
"""

from __future__ import annotations

import uuid
from typing import Protocol

from sqlalchemy.ext.asyncio import async_sessionmaker
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.auth.models import ApiKey
from strongroom.auth.service import revoke_key
from strongroom.billing.credits import grant
from strongroom.tenants.models import Tenant, User
from strongroom.tenants.service import NotFoundError, find_tenant, set_tenant_flags


class AdminParts(Protocol):
    sessions: async_sessionmaker[AsyncSession]

    async def announce(self, event: dict[str, str]) -> None:
        """Tell every API process of a change to a tenant or a key (D16)."""
        ...


async def revoke_api_key(parts: AdminParts, key_id: uuid.UUID) -> ApiKey:
    async with parts.sessions() as session:
        key = await revoke_key(session, key_id)
        await session.commit()
    await parts.announce({"api_key_id": str(key_id)})
    return key


async def grant_credits(parts: AdminParts, tenant_ref: str, amount: int, reason: str) -> Tenant:
    async with parts.sessions() as session:
        tenant = await find_tenant(session, tenant_ref)
        await grant(session, tenant.id, amount, reason=reason)
        await session.commit()
        await session.refresh(tenant)
    await parts.announce({"tenant_id": str(tenant.id)})
    return tenant


async def update_tenant(
    parts: AdminParts,
    tenant_id: uuid.UUID,
    *,
    suspended: bool | None = None,
    billing_status: str | None = None,
) -> Tenant:
    async with parts.sessions() as session:
        tenant = await session.get(Tenant, tenant_id)
        if tenant is None:
            raise NotFoundError(f"no tenant {tenant_id}")
        await set_tenant_flags(session, tenant, suspended=suspended, billing_status=billing_status)
        await session.commit()
    await parts.announce({"tenant_id": str(tenant_id)})
    return tenant


async def set_user_active(parts: AdminParts, user_id: uuid.UUID, active: bool) -> User:
    async with parts.sessions() as session:
        user = await session.get(User, user_id)
        if user is None:
            raise NotFoundError(f"no user {user_id}")
        user.active = active
        await session.commit()
    await parts.announce({"user_id": str(user_id)})
    return user
