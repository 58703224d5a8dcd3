"""A routine acts for its owner, and never for more than the owner granted (issue 52).

A routine's *grant* is the API key that saved its steps and the scopes those steps need
(`Routine.api_key_id`, `Routine.granted_scopes`): saving steps that need a scope the key
lacks is 403 `insufficient_scope` naming the scopes, as calling the step's capability
directly would be. Every step, when it starts, acts as a principal built here: the owner,
in the run's tenant and environment, with the granted scopes that the key still holds, and
only while the key is neither revoked nor expired, its user active and the tenant neither
suspended nor deleted (the checks and codes of D10, in its order); the step's capability
then checks its own scopes against it (`authorise`, as the request path does).

Routine writes take API keys only (D15), so a grant is always a key's.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import update
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.api.capability import Capability, Handler, Routes
from strongroom.auth.models import ApiKey
from strongroom.auth.principal import Principal, check_owner
from strongroom.chat.routes import routes as chat_routes
from strongroom.db.types import utcnow
from strongroom.problems import Problem
from strongroom.routines.models import Routine
from strongroom.templates.routes import routes as templates_routes
from strongroom.tenants.models import BillingStatus, Tenant, User
from strongroom.tenants.partition import Environment
from strongroom.workflows.routes import routes as workflows_routes


def _declared(routes: Routes, name: str) -> tuple[Capability, Handler]:
    for capability, handler in routes.entries:
        if capability.name == name:
            return capability, handler
    raise LookupError(name)


# The capability each type of step calls.
CALLS = {
    "workflow": _declared(workflows_routes, "workflows.start_run"),
    "template_fill": _declared(templates_routes, "templates.fill_stored"),
    "chat": _declared(chat_routes, "chat.ask"),
}

# Owner checks whose failure lasts until the owner acts (a new key, a reactivated user):
# the routine is paused with it. A suspended or deleted tenant's routines are not paused:
# they do not fire while it is (fire.py), and fire again if it is restored.
PAUSING = frozenset({"api_key_revoked", "api_key_expired", "user_inactive", "permission_denied"})


def _step_type(step: BaseModel | dict[str, Any]) -> str:
    return step["type"] if isinstance(step, dict) else step.type  # type: ignore[attr-defined]


def needed_scopes(steps: Iterable[BaseModel | dict[str, Any]]) -> list[str]:
    """The scopes the steps' capabilities need, sorted."""
    needed: set[str] = set()
    for step in steps:
        needed |= CALLS[_step_type(step)][0].scopes
    return sorted(needed)


def insufficient_scope(missing: list[str], detail: str) -> Problem:
    """403 `insufficient_scope`, as the request path answers a call missing scopes (D8)."""
    listed = " ".join(missing)
    return Problem(
        "insufficient_scope",
        detail,
        headers={"WWW-Authenticate": f'Bearer error="insufficient_scope", scope="{listed}"'},
        missing_scopes=missing,
    )


def granted(principal: Principal, steps: Iterable[BaseModel | dict[str, Any]]) -> dict[str, Any]:
    """The grant the caller gives steps (the routine's `api_key_id`, `granted_scopes`, and
    no pause): the scopes they need. Raises Problem 403 `insufficient_scope` naming the
    scopes the steps need that the caller lacks, before anything else is checked, as the
    request path refuses a call before its handler runs."""
    needed = needed_scopes(steps)
    missing = principal.missing_scopes(frozenset(needed))
    if missing:
        raise insufficient_scope(
            missing,
            f"The routine's steps need scopes this key lacks: {' '.join(missing)}. A routine "
            "does no more than the key that saves it may do.",
        )
    return {"api_key_id": principal.api_key_id, "granted_scopes": needed, "paused": None}


async def acting(session: AsyncSession, routine: Routine, now: datetime | None = None) -> Principal:
    """Who the routine's steps act as now: its owner with the scopes both granted and still
    held by the granting key. Raises Problem with the first owner check that fails, in D10's
    order: `permission_denied` (no grant), `api_key_revoked` (revoked or gone),
    `api_key_expired`, then the checks every credential shares (`check_owner`):
    `tenant_disabled` (suspended or deleted), `user_inactive`, `payment_required` (a live
    routine of a tenant past due; spent credits are the step's own refusal, when it is
    billed)."""
    now = now or utcnow()
    if routine.api_key_id is None:
        raise Problem(
            "permission_denied",
            "The routine holds no grant (it was saved before grants and no key of its owner "
            "holds its steps' scopes): its owner must save it again with a key.",
        )
    key = await session.get(ApiKey, routine.api_key_id, populate_existing=True)
    if key is None or key.revoked_at is not None:
        raise Problem("api_key_revoked", "The API key that saved the routine has been revoked.")
    if key.expires_at is not None and key.expires_at <= now:
        raise Problem("api_key_expired", "The API key that saved the routine has expired.")
    tenant = await session.get(Tenant, routine.tenant_id, populate_existing=True)
    user = await session.get(User, routine.owner_id, populate_existing=True)
    environment = Environment(routine.environment)
    check_owner(
        tenant_suspended=tenant is None or tenant.suspended,
        tenant_deleted=tenant is None or tenant.deleted_at is not None,
        user_active=user is not None and user.active and key.user_id == routine.owner_id,
        environment=environment,
        owes=tenant is not None and tenant.billing_status == BillingStatus.PAST_DUE,
        whose="the routine",
    )
    assert tenant is not None and user is not None, "check_owner refuses a missing one"
    return Principal(
        auth_method="api_key",
        user_id=routine.owner_id,
        tenant_id=routine.tenant_id,
        email=user.email,
        environment=environment,
        rate_limit_tier=key.rate_limit_tier or tenant.rate_limit_tier,
        scopes=frozenset(routine.granted_scopes) & frozenset(key.scopes),
        api_key_id=key.id,
        api_key_name=key.name,
        api_key_prefix=key.prefix,
    )


async def pause(session: AsyncSession, routine_id: uuid.UUID, problem: Problem) -> bool:
    """Pause the routine for a failed owner check that lasts (PAUSING): disabled, no next
    fire, `paused` saying why. Not committed. Whether it was paused (False for a check that
    does not pause)."""
    if problem.code not in PAUSING:
        return False
    statement = update(Routine).where(col(Routine.id) == routine_id)
    reason = {"code": problem.code, "detail": problem.detail, "at": utcnow().isoformat()}
    await session.exec(  # type: ignore[call-overload]
        statement.values(enabled=False, next_run_at=None, paused=reason, updated_at=utcnow())
    )
    return True
