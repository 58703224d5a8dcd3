"""Issuing, revoking and listing API keys. The raw key leaves only through `create_key`'s
return value, once."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.auth.keys import display_prefix, generate_key, hash_key
from strongroom.auth.models import ApiKey
from strongroom.db.types import utcnow
from strongroom.tenants.models import RateLimitTier, Tenant, User
from strongroom.tenants.partition import Environment
from strongroom.tenants.service import NotFoundError


async def create_key(
    session: AsyncSession,
    pepper: bytes,
    *,
    tenant: Tenant,
    user: User,
    name: str,
    environment: Environment,
    scopes: list[str],
    tier: RateLimitTier | None = None,
    expires_at: datetime | None = None,
) -> tuple[ApiKey, str]:
    """Store a new key and return it with the raw key, which is not kept anywhere."""
    raw = generate_key(environment)
    key = ApiKey(
        tenant_id=tenant.id,
        user_id=user.id,
        name=name,
        environment=environment.value,
        prefix=display_prefix(raw),
        key_hash=hash_key(raw, pepper),
        scopes=list(scopes),
        rate_limit_tier=tier.value if tier else None,
        expires_at=expires_at,
    )
    session.add(key)
    await session.flush()
    return key, raw


async def revoke_key(session: AsyncSession, key_id: uuid.UUID) -> ApiKey:
    """Revoke the key (idempotent: a revoked key keeps its first revocation time)."""
    key = await session.get(ApiKey, key_id)
    if key is None:
        raise NotFoundError(f"no API key {key_id}")
    if key.revoked_at is None:
        key.revoked_at = utcnow()
        session.add(key)
        await session.flush()
    return key


async def revoke_tenant_keys(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    """Revoke every key of the tenant still live; return how many."""
    result = await session.exec(
        update(ApiKey)
        .where(ApiKey.tenant_id == tenant_id, col(ApiKey.revoked_at).is_(None))
        .values(revoked_at=utcnow())
    )
    return result.rowcount


async def list_keys(session: AsyncSession, tenant_id: uuid.UUID) -> list[ApiKey]:
    statement = select(ApiKey).where(ApiKey.tenant_id == tenant_id).order_by(col(ApiKey.created_at))
    return list((await session.exec(statement)).all())
