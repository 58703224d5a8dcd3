"""A routine acts for its owner, never for more (issue 52, items 1 and 2), on both backends.

A routine holds no more than the key that saved it: steps needing a scope the key lacks are
refused when saved, as the direct call would be, and each step acts with the scopes granted
and still held. A routine whose key is revoked or expired, or whose owner is deactivated,
does not fire and pauses itself; a suspended or deleted tenant's routines do not fire; a run
whose owner checks fail when a step starts fails with the check's code, nothing started nor
billed. Only a routine's owner may change, delete or start it."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlmodel import col, select

from strongroom.auth.models import ApiKey
from strongroom.auth.scopes import ALL_SCOPES
from strongroom.auth.service import revoke_key
from strongroom.billing.models import CreditEntry
from strongroom.chat.models import Conversation
from strongroom.db.types import utcnow
from strongroom.jobs.models import Job, JobKind
from strongroom.routines.fire import fire_due
from strongroom.routines.models import Routine, RoutineRun
from strongroom.tenants.models import RateLimitTier, Tenant, User
from strongroom.tenants.partition import Environment
from strongroom.tenants.service import mark_tenant_deleted
from strongroom.workflows.models import WorkflowRun
from tests.documents import make_docx_template, make_pdf
from tests.routines.conftest import CONTRACT, Routines
from tests.templates.test_template_fill_stored import uploaded
from tests.vault.conftest import JOB_DEADLINE, Vault

ENDED = {"succeeded", "failed", "rejected"}
TERMS = {"type": "workflow", "workflow_id": "wf_extract_key_terms", "inputs": {}}
ASK = {"type": "chat", "query": "Who is the employer?"}
ROUTINES_ONLY = ["routines:read", "routines:write"]
# What each type of step calls needs, as the direct call does (spec 5.4).
NEEDS = {"workflow": "workflows:write", "template_fill": "templates:write", "chat": "chat:write"}


class Owner:
    """A tenant's user with a key of every scope, a project holding the contract, and the
    database as the tests read it."""

    def __init__(self, client, runtime, credential, project_id: str, template_id: str) -> None:
        self.client = client
        self.runtime = runtime
        self.credential = credential
        self.vault = Vault(client, credential.headers)
        self.routines = Routines(self.vault)
        self.project_id = project_id
        self.template_id = template_id

    async def key(self, scopes, email: str | None = None) -> Routines:
        """Another key in the tenant and environment: the owner's own, or `email`'s."""
        from tests.conftest import issue_credential

        credential = await issue_credential(
            self.runtime,
            scopes=scopes,
            environment=Environment(self.credential.api_key.environment),
            tenant=self.credential.tenant,
            email=email or self.credential.user.email,
            tier=RateLimitTier.ENTERPRISE,
        )
        routines = Routines(Vault(self.client, credential.headers))
        routines.credential = credential  # type: ignore[attr-defined]
        return routines

    def step(self, kind: str) -> dict:
        if kind == "template_fill":
            return {"type": "template_fill", "template_id": self.template_id}
        return {"workflow": TERMS, "chat": ASK}[kind]

    def manual(self, steps: list[dict], **extra) -> dict:
        return {
            "name": "By hand",
            "project_id": self.project_id,
            "trigger": {"type": "manual"},
            "steps": steps,
            **extra,
        }

    async def routine(self, routine_id: str) -> Routine:
        async with self.runtime.sessions() as session:
            return await session.get(Routine, uuid.UUID(routine_id), populate_existing=True)

    async def runs(self, routine_id: str) -> list[RoutineRun]:
        async with self.runtime.sessions() as session:
            statement = select(RoutineRun).where(
                col(RoutineRun.routine_id) == uuid.UUID(routine_id)
            )
            return list((await session.exec(statement)).all())

    async def ended(self, run_id: str) -> RoutineRun:
        """The run once ended, read from the database (its key may be refused by now)."""
        async with asyncio.timeout(JOB_DEADLINE):
            while True:
                async with self.runtime.sessions() as session:
                    run = await session.get(RoutineRun, uuid.UUID(run_id))
                if run.status in ENDED:
                    return run
                await asyncio.sleep(0.1)

    async def waiting(self, routine: dict) -> str:
        """A run of `routine` (reviewed before its first step) stopped for review."""
        started = await self.routines.start(routine["id"])
        run = await self.routines.until(started["id"], {"waiting_for_review", *ENDED})
        assert run["status"] == "waiting_for_review", run
        return started["id"]

    async def approve_in_database(self, run_id: str) -> None:
        """What an approval does (its job queued), for a tenant whose keys are refused."""
        async with self.runtime.sessions() as session:
            run = await session.get(RoutineRun, uuid.UUID(run_id))
            job = Job(
                tenant_id=run.tenant_id,
                environment=run.environment,
                kind=JobKind.ROUTINE_RUN.value,
                subject_id=run.id,
            )
            session.add(job)
            await session.flush()
            run.review = run.review | {"decision": "approved"}
            run.status, run.job_id = "queued", job.id
            session.add(run)
            await session.commit()
        await self.runtime.jobs.enqueue(job.id)

    async def billed_steps(self) -> list[tuple[str, int]]:
        async with self.runtime.sessions() as session:
            statement = select(CreditEntry.reason, CreditEntry.amount).where(
                col(CreditEntry.tenant_id) == self.credential.tenant.id,
                col(CreditEntry.request_id).startswith("rr_"),
            )
            return sorted(tuple(row) for row in (await session.exec(statement)).all())

    async def kept(self) -> tuple[int, int]:
        """The tenant's workflow runs and conversations: what a step would have left."""
        from sqlalchemy import func

        tenant_id = self.credential.tenant.id
        async with self.runtime.sessions() as session:
            counted = []
            for model in (WorkflowRun, Conversation):
                statement = select(func.count()).where(col(model.tenant_id) == tenant_id)
                counted.append((await session.exec(statement)).one())
        return counted[0], counted[1]


async def _owner(client, make_credential, runtime, environment: Environment) -> Owner:
    credential = await make_credential(environment=environment, tier=RateLimitTier.ENTERPRISE)
    vault = Vault(client, credential.headers)
    project_id = await vault.create_project()
    await vault.ingested(make_pdf(CONTRACT), "contract.pdf", project_id)
    template = make_docx_template(["Employer: {{ employer | Who is the employer? }}"])
    stored = await uploaded(vault, template, "Notice.docx")
    return Owner(client, runtime, credential, project_id, stored["id"])


@pytest.fixture
async def owner(client, make_credential, runtime, worker) -> Owner:
    return await _owner(client, make_credential, runtime, Environment.TEST)


@pytest.fixture
async def live_owner(client, make_credential, runtime, worker) -> Owner:
    return await _owner(client, make_credential, runtime, Environment.LIVE)


# --- item 1: a routine holds no more than the key that saves it --------------------------


@pytest.mark.parametrize("kind", sorted(NEEDS))
async def test_saving_a_step_whose_scope_the_key_lacks_is_403_naming_it(owner: Owner, kind):
    scope = NEEDS[kind]
    narrow = await owner.key([s for s in ALL_SCOPES if s != scope])
    problem = await narrow.create(403, **owner.manual([owner.step(kind)]))
    assert problem["code"] == "insufficient_scope"
    assert problem["missing_scopes"] == [scope]
    assert (await owner.routines.request("GET", "/api/v2/routines"))["data"] == []


@pytest.mark.parametrize("kind", sorted(NEEDS))
async def test_changing_steps_to_one_whose_scope_the_key_lacks_is_403_and_changes_nothing(
    owner: Owner, kind
):
    scope = NEEDS[kind]
    narrow = await owner.key([s for s in ALL_SCOPES if s != scope])
    other = next(k for k in sorted(NEEDS) if k != kind)
    routine = await narrow.create(**owner.manual([owner.step(other)]))
    problem = await narrow.request(
        "PATCH",
        f"/api/v2/routines/{routine['id']}",
        403,
        json={"steps": [owner.step(kind)]},
    )
    assert problem["missing_scopes"] == [scope]
    assert (await owner.routine(routine["id"])).steps == routine["steps"]


async def test_a_routines_only_key_saves_no_chat_or_workflow_step(owner: Owner):
    """The repro: a key of `routines:read routines:write` alone saved and ran both."""
    narrow = await owner.key(ROUTINES_ONLY)
    problem = await narrow.create(403, **owner.manual([ASK, TERMS]))
    assert problem["missing_scopes"] == ["chat:write", "workflows:write"]
    assert "chat:write workflows:write" in problem["detail"]
    listed = await owner.routines.request("GET", "/api/v2/routines")
    assert listed["data"] == []


async def test_a_routine_keeps_the_scopes_its_steps_need_and_the_key_that_gave_them(
    owner: Owner,
):
    routine = await owner.routines.create(**owner.manual([ASK, TERMS]))
    assert routine["granted_scopes"] == ["chat:write", "workflows:write"]
    stored = await owner.routine(routine["id"])
    assert stored.api_key_id == owner.credential.api_key.id


async def test_a_step_acts_only_with_scopes_its_key_still_holds(owner: Owner):
    routine = await owner.routines.create(**owner.manual([TERMS, ASK]))
    async with owner.runtime.sessions() as session:  # the key no longer holds chat:write
        statement = update(ApiKey).where(col(ApiKey.id) == owner.credential.api_key.id)
        kept = [scope for scope in ALL_SCOPES if scope != "chat:write"]
        await session.exec(statement.values(scopes=kept))
        await session.commit()
    started = await owner.routines.start(routine["id"])
    run = await owner.ended(started["id"])
    assert run.status == "failed"
    first, second = run.steps
    assert first["status"] == "succeeded"
    assert second["status"] == "failed" and second.get("result_id") is None
    assert second["error"]["code"] == "insufficient_scope"
    assert second["error"]["missing_scopes"] == ["chat:write"]
    assert run.error["code"] == "insufficient_scope"
    assert (await owner.kept())[1] == 0  # no conversation


async def test_a_routine_without_a_grant_runs_nothing_and_pauses(owner: Owner):
    """A routine from before grants for which no key of its owner was found."""
    routine = await owner.routines.create(**owner.manual([ASK]))
    async with owner.runtime.sessions() as session:
        statement = update(Routine).where(col(Routine.id) == uuid.UUID(routine["id"]))
        await session.exec(statement.values(api_key_id=None, granted_scopes=[]))
        await session.commit()
    started = await owner.routines.start(routine["id"])
    run = await owner.ended(started["id"])
    assert run.status == "failed" and run.error["code"] == "permission_denied"
    assert run.steps[0].get("result_id") is None
    assert (await owner.kept())[1] == 0
    paused = await owner.routines.request("GET", f"/api/v2/routines/{routine['id']}")
    assert paused["enabled"] is False and paused["paused"]["code"] == "permission_denied"


# --- item 2: a routine does not outlive its key, its owner or its tenant ---------------------


def scheduled(owner: Owner, steps: list[dict]) -> dict:
    return owner.manual(steps, trigger={"type": "schedule", "cron": "* * * * *"})


async def make_due(owner: Owner, routine_id: str) -> None:
    async with owner.runtime.sessions() as session:
        statement = update(Routine).where(col(Routine.id) == uuid.UUID(routine_id))
        await session.exec(statement.values(next_run_at=utcnow() - timedelta(seconds=30)))
        await session.commit()


async def revoke(owner: Owner) -> None:
    async with owner.runtime.sessions() as session:
        await revoke_key(session, owner.credential.api_key.id)
        await session.commit()


async def test_a_revoked_keys_routine_does_not_fire_and_is_paused(owner: Owner):
    routine = await owner.routines.create(**scheduled(owner, [ASK]))
    await revoke(owner)
    await make_due(owner, routine["id"])
    await fire_due(owner.runtime)  # this process's tick (on PostgreSQL, the worker's too)
    assert await owner.runs(routine["id"]) == []
    stored = await owner.routine(routine["id"])
    assert stored.enabled is False and stored.next_run_at is None
    assert stored.paused["code"] == "api_key_revoked"


async def test_an_expired_keys_routine_does_not_fire_and_is_paused(owner: Owner):
    routine = await owner.routines.create(**scheduled(owner, [ASK]))
    async with owner.runtime.sessions() as session:
        statement = update(ApiKey).where(col(ApiKey.id) == owner.credential.api_key.id)
        await session.exec(statement.values(expires_at=utcnow() - timedelta(seconds=1)))
        await session.commit()
    await make_due(owner, routine["id"])
    await fire_due(owner.runtime)
    assert await owner.runs(routine["id"]) == []
    assert (await owner.routine(routine["id"])).paused["code"] == "api_key_expired"


async def test_a_deactivated_owners_routine_does_not_fire_and_is_paused(owner: Owner):
    routine = await owner.routines.create(**scheduled(owner, [ASK]))
    async with owner.runtime.sessions() as session:
        statement = update(User).where(col(User.id) == owner.credential.user.id)
        await session.exec(statement.values(active=False))
        await session.commit()
    await make_due(owner, routine["id"])
    await fire_due(owner.runtime)
    assert await owner.runs(routine["id"]) == []
    assert (await owner.routine(routine["id"])).paused["code"] == "user_inactive"


async def test_a_deleted_tenants_routines_do_not_fire_and_are_not_paused(owner: Owner):
    routine = await owner.routines.create(**scheduled(owner, [ASK]))
    async with owner.runtime.sessions() as session:
        tenant = await session.get(Tenant, owner.credential.tenant.id)
        await mark_tenant_deleted(session, tenant, erasure_days=30)
        await session.commit()
    await make_due(owner, routine["id"])
    await fire_due(owner.runtime)
    await asyncio.sleep(2)  # the worker's ticks too (PostgreSQL), at 1 s
    assert await owner.runs(routine["id"]) == []
    stored = await owner.routine(routine["id"])
    assert stored.enabled is True and stored.paused is None  # fires again if restored


async def test_a_suspended_tenants_due_routines_do_not_hold_up_another_tenants(
    owner: Owner, client, make_credential, runtime
):
    """Left out of the due query: not a batch of due routines that never fire."""
    from strongroom.routines import fire

    other = await _owner(client, make_credential, runtime, Environment.TEST)
    suspended = [
        await owner.routines.create(**{**scheduled(owner, [ASK]), "name": f"r{i}"})
        for i in range(3)
    ]
    theirs = await other.routines.create(**scheduled(other, [ASK]))
    async with owner.runtime.sessions() as session:
        statement = update(Tenant).where(col(Tenant.id) == owner.credential.tenant.id)
        await session.exec(statement.values(suspended=True))
        await session.commit()
    for routine in suspended:  # due before the other tenant's
        async with owner.runtime.sessions() as session:
            statement = update(Routine).where(col(Routine.id) == uuid.UUID(routine["id"]))
            await session.exec(statement.values(next_run_at=utcnow() - timedelta(minutes=5)))
            await session.commit()
    await make_due(other, theirs["id"])
    batch = fire.BATCH
    fire.BATCH = len(suspended)  # the suspended tenant's alone would fill a batch
    try:
        await fire_due(runtime)
    finally:
        fire.BATCH = batch
    async with asyncio.timeout(JOB_DEADLINE):
        while True:
            if await other.runs(theirs["id"]):
                break
            await asyncio.sleep(0.1)
    for routine in suspended:
        assert await owner.runs(routine["id"]) == []


async def test_a_run_whose_key_is_revoked_before_its_step_fails_and_bills_nothing(
    live_owner: Owner,
):
    owner = live_owner
    reviewer = await owner.key(ROUTINES_ONLY)
    routine = await owner.routines.create(**owner.manual([ASK], review={"before_step": 1}))
    run_id = await owner.waiting(routine)
    await revoke(owner)
    approved = await reviewer.request("POST", f"/api/v2/routine-runs/{run_id}/approve")
    assert approved["status"] == "queued"
    run = await owner.ended(run_id)
    assert run.status == "failed"
    [step] = run.steps
    assert step["status"] == "failed" and step.get("result_id") is None
    assert step["error"]["code"] == "api_key_revoked"
    assert run.error["code"] == "api_key_revoked"
    assert await owner.billed_steps() == []
    assert await owner.kept() == (0, 0)
    seen = await reviewer.request("GET", f"/api/v2/routines/{routine['id']}")
    assert seen["enabled"] is False and seen["paused"]["code"] == "api_key_revoked"


async def test_a_deleted_tenants_queued_run_fails_tenant_disabled_and_bills_nothing(
    live_owner: Owner,
):
    owner = live_owner
    routine = await owner.routines.create(**owner.manual([ASK], review={"before_step": 1}))
    run_id = await owner.waiting(routine)
    async with owner.runtime.sessions() as session:
        tenant = await session.get(Tenant, owner.credential.tenant.id)
        await mark_tenant_deleted(session, tenant, erasure_days=30)
        await session.commit()
    await owner.approve_in_database(run_id)
    run = await owner.ended(run_id)
    assert run.status == "failed"
    assert run.steps[0]["error"]["code"] == "tenant_disabled"
    assert "deleted" in run.steps[0]["error"]["detail"]
    assert await owner.billed_steps() == []
    assert await owner.kept() == (0, 0)
    stored = await owner.routine(routine["id"])
    assert stored.paused is None  # not paused: the tenant may be restored


async def test_enabling_a_paused_routine_with_another_key_of_its_owner_grants_it_again(
    owner: Owner,
):
    routine = await owner.routines.create(**scheduled(owner, [ASK]))
    await revoke(owner)
    await make_due(owner, routine["id"])
    await fire_due(owner.runtime)
    assert (await owner.routine(routine["id"])).paused is not None
    new_key = await owner.key(ALL_SCOPES)
    enabled = await new_key.request(
        "PATCH", f"/api/v2/routines/{routine['id']}", json={"enabled": True}
    )
    assert enabled["enabled"] is True and enabled["paused"] is None
    assert enabled["next_run_at"] is not None
    stored = await owner.routine(routine["id"])
    assert stored.api_key_id == new_key.credential.api_key.id


# --- only its owner changes, deletes or starts a routine ---------------------------------------


async def test_another_user_of_the_tenant_may_read_but_not_change_delete_or_start_it(
    owner: Owner,
):
    colleague = await owner.key(ALL_SCOPES, email="colleague@example.com")
    routine = await owner.routines.create(**owner.manual([ASK]))
    path = f"/api/v2/routines/{routine['id']}"
    assert (await colleague.request("GET", path))["id"] == routine["id"]
    for method, suffix, body in [
        ("PATCH", "", {"steps": [TERMS]}),
        ("PATCH", "", {"name": "Mine now"}),
        ("POST", "/runs", {}),
        ("DELETE", "", None),
    ]:
        options = {} if body is None else {"json": body}
        problem = await colleague.request(method, path + suffix, 403, **options)
        assert problem["code"] == "permission_denied", (method, suffix)
    stored = await owner.routine(routine["id"])
    assert stored.name == routine["name"] and stored.steps == routine["steps"]
    assert stored.api_key_id == owner.credential.api_key.id
    assert await owner.runs(routine["id"]) == []


async def test_another_tenants_routine_is_404_to_change(owner: Owner, client, make_credential):
    stranger = Routines(Vault(client, (await make_credential()).headers))
    routine = await owner.routines.create(**owner.manual([ASK]))
    problem = await stranger.request(
        "PATCH", f"/api/v2/routines/{routine['id']}", 404, json={"name": "x"}
    )
    assert problem["code"] == "not_found"


async def test_a_change_of_steps_takes_the_grant_from_the_owners_editing_key(owner: Owner):
    routine = await owner.routines.create(**owner.manual([ASK, TERMS]))
    chat_only = await owner.key([*ROUTINES_ONLY, "chat:write"])
    path = f"/api/v2/routines/{routine['id']}"
    renamed = await chat_only.request("PATCH", path, json={"name": "Renamed"})
    assert renamed["granted_scopes"] == ["chat:write", "workflows:write"]  # kept
    assert (await owner.routine(routine["id"])).api_key_id == owner.credential.api_key.id
    refused = await chat_only.request("PATCH", path, 403, json={"review": None})
    assert refused["missing_scopes"] == ["workflows:write"]
    changed = await chat_only.request("PATCH", path, json={"steps": [ASK]})
    assert changed["granted_scopes"] == ["chat:write"]
    assert (await owner.routine(routine["id"])).api_key_id == chat_only.credential.api_key.id
