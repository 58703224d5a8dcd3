"""Tenant resources -> the tenant row and its users (issue 5).

The Kubernetes name is the tenant's name. Users are created or updated from the list;
users no longer listed are deactivated (never deleted: their keys and data stay attributable).
`creditsGranted` is the total ever granted: raising it grants the difference through the
ledger; lowering it is refused by the CRD (credits are not taken back), and where no CEL
rule applies the Ready condition says so (reason CreditsNotTakenBack).

Deleting a Tenant (issue 17, docs/operator.md) ends its access before the finalizer lets go:
the record is suspended and stamped deleted (kept for audit: ledger, users, keys), every API
key revoked, every OAuth grant of its users revoked. A new Tenant of the same name does not
take that record over: it is refused (Ready=False, TenantDeleted) unless its spec says
`restoreDeleted: true`, which restores the old record (credits and users included, the
revoked keys and grants staying revoked).

Then the finalizer stays until the tenant's data is erased (issue 42, item 5): the erasure is
due `tenant_erasure_days` after the deletion and done by the processes that run jobs
(strongroom.tenant_erasure); `status.erasure` shows `dueAt`, then `erasedAt`.
"""

from __future__ import annotations

import uuid

from sqlalchemy import func
from sqlmodel import col, select

from strongroom.auth.service import revoke_tenant_keys
from strongroom.billing.accounts import create_tenant
from strongroom.billing.credits import grant
from strongroom.billing.models import CreditEntry
from strongroom.oauth.tokens import revoke_tenant_grants
from strongroom.operator.conditions import ready
from strongroom.operator.outcome import NotReady, Outcome
from strongroom.operator.parts import OperatorParts
from strongroom.operator.secrets import SecretStore
from strongroom.tenants.models import RateLimitTier, Tenant, User
from strongroom.tenants.service import (
    ensure_user,
    mark_tenant_deleted,
    restore_tenant,
    set_tenant_flags,
)


async def reconcile_tenant(parts: OperatorParts, secrets: SecretStore, body: dict) -> Outcome:
    """Make the database follow the Tenant's spec; its status to write. A Tenant holds no
    Secret: `secrets` is in the one signature of the three resources' reconcile functions."""
    name, spec = body["metadata"]["name"], body["spec"]
    granted_total = int(spec.get("creditsGranted", 100_000))
    async with parts.sessions() as session:
        tenant = (await session.exec(select(Tenant).where(Tenant.name == name))).first()
        if tenant is None:
            tenant = await create_tenant(
                session,
                name,
                tier=RateLimitTier(spec.get("rateLimitTier", "standard")),
                credits=granted_total,
            )
        elif tenant.deleted_at is not None:
            if not spec.get("restoreDeleted", False):
                raise NotReady(
                    "TenantDeleted",
                    f"a Tenant {name!r} was deleted on {tenant.deleted_at:%Y-%m-%d %H:%M} UTC; "
                    "its record is kept for audit. Set spec.restoreDeleted: true to restore "
                    "it (its revoked keys stay revoked), or choose another name",
                    retry=False,
                )
            await restore_tenant(session, tenant)
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
        condition = ready()
        if granted_total > granted_so_far:
            await grant(
                session, tenant.id, granted_total - granted_so_far, reason="Tenant resource"
            )
        elif granted_total < granted_so_far:  # the CRD refuses it where CEL rules apply
            condition = ready(
                "CreditsNotTakenBack",
                f"creditsGranted {granted_total} is below the {granted_so_far} granted; "
                "credits are not taken back",
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
    await parts.announce({"tenant_id": str(tenant.id)})
    return Outcome(status={"tenantId": str(tenant.id), "creditsRemaining": tenant.credits,
                           "conditions": [condition]})  # fmt: skip


async def release_tenant(parts: OperatorParts, name: str, status: dict) -> dict[str, int] | None:
    """On deletion: end the tenant's access and keep its record. The record is the one the
    resource reconciled (`status.tenantId`), else the live one of its name; a resource that
    was refused (TenantDeleted) touches none. Returns what was revoked, None if nothing."""
    async with parts.sessions() as session:
        if status.get("tenantId"):
            tenant = await session.get(Tenant, uuid.UUID(status["tenantId"]))
        else:
            tenant = (
                await session.exec(
                    select(Tenant).where(Tenant.name == name, col(Tenant.deleted_at).is_(None))
                )
            ).first()
        if tenant is None:
            return None
        await mark_tenant_deleted(session, tenant, erasure_days=parts.settings.tenant_erasure_days)
        revoked = {
            "keys": await revoke_tenant_keys(session, tenant.id),
            "grants": await revoke_tenant_grants(session, tenant.id),
        }
        await session.commit()
    await parts.announce({"tenant_id": str(tenant.id)})
    return revoked


class ErasureNotStarted(Exception):
    """The tenant is not marked deleted yet (the deletion's first handler has not committed):
    its erasure has no date to wait for."""


async def erasure_of(parts: OperatorParts, status: dict) -> dict[str, str | None] | None:
    """The erasure of the deleted tenant the resource reconciled (`status.tenantId`), as
    status shows it: `{"dueAt", "erasedAt"}` (RFC 3339, erasedAt null until done). None when
    there is nothing to wait for: a resource never reconciled or refused (TenantDeleted), a
    record gone, or a tenant deleted before erasure was scheduled (migration 0021). Raises
    ErasureNotStarted while the tenant is not marked deleted."""
    if not status.get("tenantId"):
        return None
    async with parts.sessions() as session:
        tenant = await session.get(Tenant, uuid.UUID(status["tenantId"]))
    if tenant is None:
        return None
    if tenant.deleted_at is None:
        raise ErasureNotStarted(f"tenant {tenant.name!r} is not marked deleted yet")
    if tenant.erasure_due_at is None and tenant.erased_at is None:
        return None
    return {
        "dueAt": tenant.erasure_due_at.isoformat() if tenant.erasure_due_at else None,
        "erasedAt": tenant.erased_at.isoformat() if tenant.erased_at else None,
    }
