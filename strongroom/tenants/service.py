"""Finding tenants and their users, and changing a tenant (CLI, operator, embedded seed, tests).
A tenant is created with its opening balance by strongroom.billing.accounts."""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.db.types import utcnow
from strongroom.tenants.models import Tenant, User


class NotFoundError(LookupError):
    """The named tenant, user or key does not exist."""


async def find_tenant(session: AsyncSession, reference: str) -> Tenant:
    """Return the tenant whose id or name is `reference`; raises NotFoundError."""
    try:
        tenant = await session.get(Tenant, uuid.UUID(reference))
    except ValueError:
        tenant = (await session.exec(select(Tenant).where(Tenant.name == reference))).first()
    if tenant is None:
        raise NotFoundError(f"no tenant {reference!r}")
    return tenant


async def ensure_user(session: AsyncSession, tenant: Tenant, email: str, name: str = "") -> User:
    """Return the tenant's user with `email`, creating it when absent."""
    email = email.strip().lower()
    statement = select(User).where(User.tenant_id == tenant.id, User.email == email)
    user = (await session.exec(statement)).first()
    if user is None:
        user = User(tenant_id=tenant.id, email=email, name=name)
        session.add(user)
        await session.flush()
    return user


async def set_tenant_flags(
    session: AsyncSession,
    tenant: Tenant,
    *,
    suspended: bool | None = None,
    billing_status: str | None = None,
) -> Tenant:
    if suspended is not None:
        tenant.suspended = suspended
    if billing_status is not None:
        tenant.billing_status = billing_status
    tenant.updated_at = utcnow()
    session.add(tenant)
    await session.flush()
    return tenant


async def mark_tenant_deleted(
    session: AsyncSession, tenant: Tenant, *, erasure_days: int
) -> Tenant:
    """Deletion ends access but keeps the record for audit (its ledger, users and keys):
    the tenant is suspended and stamped `deleted_at` (kept from the first deletion), and its
    data's erasure is due `erasure_days` later (issue 42: strongroom.tenant_erasure). A
    tenant erased in an earlier life (deleted, erased, restored) is due again."""
    if tenant.deleted_at is None:
        tenant.deleted_at = utcnow()
        tenant.erasure_due_at, tenant.erased_at = None, None
    if tenant.erasure_due_at is None and tenant.erased_at is None:
        tenant.erasure_due_at = tenant.deleted_at + timedelta(days=erasure_days)
    return await set_tenant_flags(session, tenant, suspended=True)


async def restore_tenant(session: AsyncSession, tenant: Tenant) -> Tenant:
    """Only when asked (the operator's `restoreDeleted`): the record is live again; keys and
    grants revoked at its deletion stay revoked. An erasure not yet done is called off; one
    done stays said (`erased_at`): the data is gone."""
    tenant.deleted_at = None
    if tenant.erased_at is None:
        tenant.erasure_due_at = None
    return await set_tenant_flags(session, tenant)
