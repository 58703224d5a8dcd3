"""Opening a tenant's account: its row and the opening balance of its credit ledger (D21),
flushed in the caller's transaction (CLI, operator, embedded seed, tests)."""

from __future__ import annotations

from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.billing.models import CreditEntry
from strongroom.tenants.models import INITIAL_CREDITS, RateLimitTier, Tenant


async def create_tenant(
    session: AsyncSession,
    name: str,
    *,
    tier: RateLimitTier = RateLimitTier.STANDARD,
    credits: int = INITIAL_CREDITS,
) -> Tenant:
    """Create a tenant whose opening balance is recorded in the credit ledger (D21)."""
    tenant = Tenant(name=name, rate_limit_tier=tier.value, credits=credits)
    session.add(tenant)
    await session.flush()
    session.add(CreditEntry(tenant_id=tenant.id, amount=credits, reason="opening_balance"))
    await session.flush()
    return tenant
