"""Tenant resources -> the tenant row and its users (issue 5).

The Kubernetes name is the tenant's name. Users are created or updated from the list;
users no longer listed are deactivated (never deleted: their keys and data stay attributable).
`creditsGranted` is the total ever granted: raising it grants the difference through the
ledger, lowering it changes nothing (credits are not taken back).
"""

from __future__ import annotations

from sqlalchemy import func
from sqlmodel import select

from strongroom.billing.credits import grant
from strongroom.billing.models import CreditEntry
from strongroom.operator.conditions import ready
from strongroom.runtime import Runtime
from strongroom.tenants.models import RateLimitTier, Tenant, User
from strongroom.tenants.service import create_tenant, ensure_user, set_tenant_flags


async def reconcile_tenant(runtime: Runtime, name: str, spec: dict) -> dict:
    """Make the database follow `spec`; return the status to write."""
    granted_total = int(spec.get("creditsGranted", 100_000))
    async with runtime.sessions() as session:
        tenant = (await session.exec(select(Tenant).where(Tenant.name == name))).first()
        if tenant is None:
            tenant = await create_tenant(
                session,
                name,
                tier=RateLimitTier(spec.get("rateLimitTier", "standard")),
                credits=granted_total,
            )
        tenant.rate_limit_tier = spec.get("rateLimitTier", "standard")
        await set_tenant_flags(
            session,
            tenant,
            suspended=bool(spec.get("suspended", False)),
            billing_status=spec.get("billingStatus", "active"),
        )
        granted_so_far = (
            await session.exec(
                select(func.coalesce(func.sum(CreditEntry.amount), 0)).where(
                    CreditEntry.tenant_id == tenant.id, CreditEntry.amount > 0
                )
            )
        ).one()
        if granted_total > granted_so_far:
            await grant(
                session, tenant.id, granted_total - granted_so_far, reason="Tenant resource"
            )
        listed = set()
        for entry in spec.get("users", []):
            user = await ensure_user(session, tenant, entry["email"], entry.get("name", ""))
            user.name = entry.get("name", user.name)
            user.active = bool(entry.get("active", True))
            session.add(user)
            listed.add(user.id)
        others = (await session.exec(select(User).where(User.tenant_id == tenant.id))).all()
        for user in others:
            if user.id not in listed and user.active:
                user.active = False
                session.add(user)
        await session.commit()
        await session.refresh(tenant)
    await runtime.announce({"tenant_id": str(tenant.id)})
    return {"tenantId": str(tenant.id), "creditsRemaining": tenant.credits,
            "conditions": [ready()]}  # fmt: skip
