"""What a routine run's steps cost (issue 43: a run bills its steps as if called directly),
on both backends: a live step is billed while its tenant's balance is above zero, as a
client's call would be (D21), and refused at zero with `payment_required`, nothing of its
work kept and nothing billed, failing the run; a test run is never billed (D19, D21).

A live key at zero is refused by every endpoint, its reads included, so these tests set up
with credits, spend the balance to what they need in the ledger (`billing.credits.debit`,
as a billed call would), start the run with its 1-credit POST, and read the run's end from
the database rather than poll it with the key."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from sqlalchemy import func
from sqlmodel import col, select

from strongroom.admin import grant_credits
from strongroom.billing.credits import debit
from strongroom.billing.models import CreditEntry
from strongroom.chat.models import Conversation
from strongroom.jobs.models import Job, JobKind
from strongroom.outbox.models import WebhookEvent
from strongroom.routines.models import RoutineRun
from strongroom.tenants.models import RateLimitTier, Tenant
from strongroom.tenants.partition import Environment
from strongroom.workflows.models import WorkflowRun
from tests.documents import make_docx_template, make_pdf
from tests.routines.conftest import CONTRACT, Routines
from tests.templates.test_template_fill_stored import uploaded
from tests.vault.conftest import JOB_DEADLINE, Vault

ENDED = {"succeeded", "failed", "rejected"}
TERMS = {"type": "workflow", "workflow_id": "wf_extract_key_terms", "inputs": {}}
ASK = {"type": "chat", "query": "Who is the employer?"}
START_COST = 1  # routines.start_run
SPENT = "The tenant's credits are spent: the step was not started."


def manual(project_id: str, steps: list[dict]) -> dict:
    return {
        "name": "By hand",
        "project_id": project_id,
        "trigger": {"type": "manual"},
        "steps": steps,
    }


class Live:
    """A live key of a fresh tenant with a project holding the contract, and what the
    tests read of its tenant in the database."""

    def __init__(self, runtime, credential, vault: Vault, project_id: str) -> None:
        self.runtime = runtime
        self.tenant_id = credential.tenant.id
        self.vault = vault
        self.routines = Routines(vault)
        self.project_id = project_id

    async def spend_to(self, balance: int) -> None:
        """Spend the tenant's credits down to `balance`, billed in the ledger."""
        async with self.runtime.sessions() as session:
            credits = (await session.get(Tenant, self.tenant_id)).credits
            assert credits > balance
            await debit(
                session,
                self.tenant_id,
                credits - balance,
                reason="spent_elsewhere",
                request_id=f"spent-{uuid.uuid4().hex}",
            )
            await session.commit()

    async def ledger(self) -> tuple[int, int, list[tuple[str, int]]]:
        """(balance, the ledger's sum, its entries as (reason, amount), sorted)."""
        async with self.runtime.sessions() as session:
            balance = (await session.get(Tenant, self.tenant_id)).credits
            statement = select(CreditEntry.reason, CreditEntry.amount).where(
                col(CreditEntry.tenant_id) == self.tenant_id
            )
            entries = sorted(tuple(row) for row in (await session.exec(statement)).all())
        return balance, sum(amount for _, amount in entries), entries

    async def steps_billed(self) -> list[tuple[str, int]]:
        """The ledger's entries of routine steps (request ids `rr_...`)."""
        async with self.runtime.sessions() as session:
            statement = select(CreditEntry.reason, CreditEntry.amount).where(
                col(CreditEntry.tenant_id) == self.tenant_id,
                col(CreditEntry.request_id).startswith("rr_"),
            )
            return sorted(tuple(row) for row in (await session.exec(statement)).all())

    async def ended(self, run_id: str) -> RoutineRun:
        """The run once it has ended, read from the database (the key may be refused)."""
        async with asyncio.timeout(JOB_DEADLINE):
            while True:
                async with self.runtime.sessions() as session:
                    run = await session.get(RoutineRun, uuid.UUID(run_id))
                if run.status in ENDED:
                    return run
                await asyncio.sleep(0.1)

    async def kept(self) -> dict[str, int]:
        """What the tenant's live steps could have left: workflow runs, conversations,
        template fills (jobs, and blobs stored for them)."""
        live = Environment.LIVE.value
        counted = {}
        async with self.runtime.sessions() as session:
            for name, model, extra in [
                ("workflow_runs", WorkflowRun, []),
                ("conversations", Conversation, []),
                ("template_fills", Job, [col(Job.kind) == JobKind.TEMPLATE_FILL.value]),
            ]:
                statement = select(func.count()).where(
                    col(model.tenant_id) == self.tenant_id,
                    col(model.environment) == live,
                    *extra,
                )
                counted[name] = (await session.exec(statement)).one()
        prefix = f"{self.tenant_id}/{live}/templates/"
        counted["template_blobs"] = len([key async for key, _ in self.runtime.blobs.listed(prefix)])
        return counted

    async def events(self, run_id: str) -> list[tuple[str, dict]]:
        async with self.runtime.sessions() as session:
            statement = select(WebhookEvent.type, WebhookEvent.body).where(
                col(WebhookEvent.tenant_id) == self.tenant_id
            )
            rows = (await session.exec(statement)).all()
        return [(kind, json.loads(body)) for kind, body in rows if run_id in body]


@pytest.fixture
async def live(client, make_credential, runtime, worker) -> Live:
    credential = await make_credential(environment=Environment.LIVE, tier=RateLimitTier.ENTERPRISE)
    vault = Vault(client, credential.headers)
    project_id = await vault.create_project()
    await vault.ingested(make_pdf(CONTRACT), "contract.pdf", project_id)
    return Live(runtime, credential, vault, project_id)


NOTHING_KEPT = {"workflow_runs": 0, "conversations": 0, "template_fills": 0, "template_blobs": 0}


@pytest.mark.parametrize("kind", ["workflow", "template_fill", "chat"])
async def test_a_live_step_at_zero_credits_fails_payment_required_keeping_and_billing_nothing(
    live: Live, kind: str
):
    if kind == "template_fill":
        template = make_docx_template(["Employer: {{ employer | Who is the employer? }}"])
        stored = await uploaded(live.vault, template, "Notice.docx")
        step = {"type": "template_fill", "template_id": stored["id"]}
    else:
        step = {"workflow": TERMS, "chat": ASK}[kind]
    response = await live.vault.client.post(
        "/api/v2/webhooks/endpoints",
        json={"url": "https://93.184.216.34/hook", "events": ["routine.run.failed"]},
        headers=live.vault.headers,
    )
    assert response.status_code == 201, await response.get_json()
    routine = await live.routines.create(**manual(live.project_id, [step]))
    await live.spend_to(START_COST)  # the start's own bill takes the balance to zero
    _, _, before = await live.ledger()

    started = await live.routines.start(routine["id"])
    run = await live.ended(started["id"])

    assert run.status == "failed"
    [failed] = run.steps
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": "payment_required", "detail": SPENT}
    assert failed.get("result_id") is None and failed.get("job_id") is None
    assert failed.get("conversation_id") is None
    assert run.error["code"] == "payment_required" and SPENT in run.error["detail"]
    assert await live.kept() == NOTHING_KEPT
    assert await live.steps_billed() == []
    after = sorted([*before, ("routines.start_run", -START_COST)])
    assert await live.ledger() == (0, 0, after)
    [(event, body)] = await live.events(started["id"])
    assert event == "routine.run.failed"
    assert body["data"]["steps"][0]["error"]["code"] == "payment_required"

    # What the client sees once it can read again (its key is refused at zero).
    await grant_credits(live.runtime, str(live.tenant_id), 1, "top-up")
    seen = await live.routines.request("GET", f"/api/v2/routine-runs/{started['id']}")
    assert seen["status"] == "failed" and seen["error"]["code"] == "payment_required"
    [seen_step] = seen["steps"]
    assert seen_step["status"] == "failed" and seen_step["result_id"] is None
    assert seen_step["error"] == {"code": "payment_required", "detail": SPENT}


async def test_credits_spent_by_a_step_refuse_the_next_which_keeps_nothing(live: Live):
    routine = await live.routines.create(**manual(live.project_id, [TERMS, ASK]))
    # 1 for the start, then exactly the workflow's 25: the chat step (10) meets zero.
    await live.spend_to(START_COST + 25)

    started = await live.routines.start(routine["id"])
    run = await live.ended(started["id"])

    assert run.status == "failed"
    first, second = run.steps
    assert first["status"] == "succeeded" and first["result_id"].startswith("run_")
    assert second["status"] == "failed"
    assert second["error"] == {"code": "payment_required", "detail": SPENT}
    assert second.get("result_id") is None and second.get("conversation_id") is None
    assert run.error["code"] == "payment_required" and "Step 2" in run.error["detail"]
    kept = await live.kept()
    assert kept == {**NOTHING_KEPT, "workflow_runs": 1}  # step 1's, and no conversation
    assert await live.steps_billed() == [("workflows.start_run", -25)]  # once
    balance, total, _ = await live.ledger()
    assert (balance, total) == (0, 0)


async def test_a_live_step_is_billed_while_the_balance_is_above_zero_even_below_its_cost(
    live: Live,
):
    """As a client's own call (D21): billed while the balance is above zero, which the
    last call may take below zero by at most its cost."""
    routine = await live.routines.create(**manual(live.project_id, [ASK]))
    await live.spend_to(START_COST + 1)  # 1 left for the chat step, which costs 10

    started = await live.routines.start(routine["id"])
    run = await live.ended(started["id"])

    assert run.status == "succeeded", run.error
    assert run.steps[0]["result_type"] == "chat_message"
    assert await live.kept() == {**NOTHING_KEPT, "conversations": 1}
    assert await live.steps_billed() == [("chat.ask", -10)]
    balance, total, _ = await live.ledger()
    assert (balance, total) == (-9, -9)


async def test_a_test_environment_run_is_never_billed_so_it_runs_at_zero_credits(
    client, make_credential, runtime, worker
):
    credential = await make_credential(tier=RateLimitTier.ENTERPRISE, credits=0)
    assert credential.key.startswith("ak_test_")
    vault = Vault(client, credential.headers)
    project_id = await vault.create_project()
    await vault.ingested(make_pdf(CONTRACT), "contract.pdf", project_id)
    routines = Routines(vault)
    routine = await routines.create(**manual(project_id, [TERMS, ASK]))

    started = await routines.start(routine["id"])
    run = await routines.until(started["id"], ENDED)

    assert run["status"] == "succeeded", run
    assert [step["status"] for step in run["steps"]] == ["succeeded", "succeeded"]
    async with runtime.sessions() as session:
        balance = (await session.get(Tenant, credential.tenant.id)).credits
        statement = select(CreditEntry.reason, CreditEntry.amount).where(
            col(CreditEntry.tenant_id) == credential.tenant.id
        )
        entries = [tuple(row) for row in (await session.exec(statement)).all()]
    assert (balance, entries) == (0, [("opening_balance", 0)])
