"""Runs of routines (issue 43) through the API on both backends: each step runs what exists
and names its result, a review holds the run until approved or rejected (who, when, why),
references are checked again at run time, steps are billed as if called directly, and each
change of state is a webhook event in the outbox."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import update
from sqlmodel import col, select

from strongroom.billing.models import CreditEntry
from strongroom.jobs.models import Job
from strongroom.outbox.models import WebhookEvent
from strongroom.routines.models import Routine, RoutineRun
from strongroom.tenants.models import RateLimitTier
from strongroom.tenants.partition import Environment
from strongroom.workflows.catalogue import Step
from tests.documents import make_docx_template, make_pdf
from tests.jobs.bounded_work import sleep_and_report
from tests.jobs.test_tenant_fairness import running
from tests.routines.conftest import CONTRACT, Routines
from tests.templates.test_template_fill_stored import uploaded
from tests.vault.conftest import JOB_DEADLINE, Vault
from tests.workflows.registered import register

ENDED = {"succeeded", "failed", "rejected"}
TERMS = {"type": "workflow", "workflow_id": "wf_extract_key_terms", "inputs": {}}
ASK = {"type": "chat", "query": "Who is the employer?"}


def manual(project_id: str, steps: list[dict], **extra) -> dict:
    return {
        "name": "By hand",
        "project_id": project_id,
        "trigger": {"type": "manual"},
        "steps": steps,
        **extra,
    }


async def test_each_step_runs_what_exists_and_names_its_result(routines: Routines, contract):
    routine = await routines.create(**manual(contract["project_id"], [TERMS, ASK]))
    started = await routines.start(routine["id"])
    assert started["status"] == "queued" and started["trigger_type"] == "manual"
    run = await routines.until(started["id"], ENDED)
    assert run["status"] == "succeeded", run
    workflow_step, chat_step = run["steps"]
    assert [step["status"] for step in run["steps"]] == ["succeeded", "succeeded"]
    assert workflow_step["result_type"] == "workflow_run"
    workflow_run = await routines.request(
        "GET", f"/api/v2/workflows/runs/{workflow_step['result_id']}"
    )
    assert workflow_run["status"] == "succeeded"
    assert workflow_run["project_id"] == contract["project_id"]
    assert chat_step["result_type"] == "chat_message"
    conversation = await routines.request(
        "GET", f"/api/v2/conversations/{chat_step['conversation_id']}"
    )
    assert chat_step["result_id"] in [message["id"] for message in conversation["messages"]]
    assert "Harbour Holdings" in conversation["messages"][-1]["content"]
    listed = await routines.request("GET", f"/api/v2/routines/{routine['id']}/runs")
    assert [item["id"] for item in listed["data"]] == [run["id"]]


async def test_a_manual_runs_document_is_what_a_document_set_workflow_reads(
    routines: Routines, contract
):
    routine = await routines.create(**manual(contract["project_id"], [TERMS]))
    document_id = contract["document"]["id"]
    started = await routines.start(routine["id"], document_id=document_id)
    run = await routines.until(started["id"], ENDED)
    assert run["document_id"] == document_id
    workflow_run = await routines.request(
        "GET", f"/api/v2/workflows/runs/{run['steps'][0]['result_id']}"
    )
    assert workflow_run["inputs"]["document_ids"] == [document_id]
    again = await routines.start(routine["id"], document_id=document_id)  # no fire key
    assert (await routines.until(again["id"], ENDED))["status"] == "succeeded"


async def test_a_review_holds_the_run_until_approved_then_it_succeeds(routines: Routines, contract):
    routine = await routines.create(
        **manual(contract["project_id"], [TERMS, ASK], review={"before_step": 2})
    )
    started = await routines.start(routine["id"])
    waiting = await routines.until(started["id"], {"waiting_for_review", *ENDED})
    assert waiting["status"] == "waiting_for_review"
    assert [step["status"] for step in waiting["steps"]] == ["succeeded", "pending"]
    approved = await routines.request(
        "POST", f"/api/v2/routine-runs/{started['id']}/approve", json={"comment": "Fine."}
    )
    assert approved["status"] == "queued"
    review = approved["review"]
    assert review["decision"] == "approved" and review["comment"] == "Fine."
    me = await routines.request("GET", "/api/v2/me")
    assert review["decided_by"] == me["user_id"] and review["decided_at"]
    run = await routines.until(started["id"], ENDED)
    assert run["status"] == "succeeded", run
    assert run["review"] == review
    assert run["steps"][1]["result_type"] == "chat_message"


async def test_reject_ends_the_run_rejected_with_the_comment(routines: Routines, contract):
    routine = await routines.create(
        **manual(contract["project_id"], [ASK], review={"before_step": 1})
    )
    started = await routines.start(routine["id"])
    await routines.until(started["id"], {"waiting_for_review"})
    rejected = await routines.request(
        "POST", f"/api/v2/routine-runs/{started['id']}/reject", json={"comment": "Not now."}
    )
    assert rejected["status"] == "rejected" and rejected["finished_at"]
    assert rejected["review"]["decision"] == "rejected"
    assert rejected["review"]["comment"] == "Not now."
    assert rejected["steps"][0]["status"] == "pending"  # nothing ran
    problem = await routines.request(
        "POST", f"/api/v2/routine-runs/{started['id']}/approve", 422, json={}
    )
    assert problem["errors"][0]["field"] == "status"


async def test_a_reference_that_is_no_longer_the_callers_is_refused_at_run(
    owner_and_strangers, runtime
):
    own, strangers = owner_and_strangers
    project_id = await own.create_project()
    mine = await own.ingested(make_pdf(CONTRACT), "mine.pdf", project_id)
    theirs_project = await strangers[0].create_project()
    theirs = await strangers[0].ingested(make_pdf(["Theirs."]), "theirs.pdf", theirs_project)
    steps = [{**TERMS, "inputs": {"document_ids": [mine["id"]]}}]
    routine = await Routines(own).create(**manual(project_id, steps))
    # The stored step now names another tenant's document (as if saved before a change).
    async with runtime.sessions() as session:
        stored = [{**TERMS, "inputs": {"document_ids": [theirs["id"]]}}]
        statement = update(Routine).where(col(Routine.id) == uuid.UUID(routine["id"]))
        await session.exec(statement.values(steps=stored))
        await session.commit()
    started = await Routines(own).start(routine["id"])
    run = await Routines(own).until(started["id"], ENDED)
    assert run["status"] == "failed"
    assert run["error"]["code"] == "not_found" and theirs["id"] in run["error"]["detail"]
    assert run["steps"][0]["status"] == "failed" and run["steps"][0]["result_id"] is None


async def test_another_tenants_run_is_404(owner_and_strangers, contract):
    own, strangers = owner_and_strangers
    project_id = await own.create_project()
    routine = await Routines(own).create(**manual(project_id, [ASK], review={"before_step": 1}))
    started = await Routines(own).start(routine["id"])
    await Routines(own).until(started["id"], {"waiting_for_review"})
    path = f"/api/v2/routine-runs/{started['id']}"
    for stranger in strangers:
        await Routines(stranger).request("GET", path, 404)
        await Routines(stranger).request("POST", path + "/approve", 404, json={})
        await Routines(stranger).request("POST", path + "/reject", 404, json={})
    assert (await Routines(own).request("GET", path))["status"] == "waiting_for_review"


async def test_a_live_run_bills_each_step_as_if_called_directly(
    client, make_credential, runtime, worker
):
    credential = await make_credential(environment=Environment.LIVE, tier=RateLimitTier.ENTERPRISE)
    live = Vault(client, credential.headers)
    project_id = await live.create_project()
    await live.ingested(make_pdf(CONTRACT), "live.pdf", project_id)
    routine = await Routines(live).create(**manual(project_id, [TERMS, ASK]))
    started = await Routines(live).start(routine["id"])
    run = await Routines(live).until(started["id"], ENDED)
    assert run["status"] == "succeeded", run
    async with runtime.sessions() as session:
        statement = select(CreditEntry.reason, CreditEntry.amount).where(
            col(CreditEntry.tenant_id) == credential.tenant.id,
            col(CreditEntry.request_id).startswith("rr_"),
        )
        billed = sorted((await session.exec(statement)).all())
    assert billed == [("chat.ask", -10), ("workflows.start_run", -25)]


async def test_each_change_of_a_runs_state_is_an_event_in_the_outbox(
    routines: Routines, contract, runtime
):
    response = await routines.client.post(
        "/api/v2/webhooks/endpoints",
        json={
            "url": "https://93.184.216.34/hook",
            "events": [
                "routine.run.waiting_for_review",
                "routine.run.succeeded",
                "routine.run.failed",
                "routine.run.rejected",
            ],
        },
        headers=routines.headers,
    )
    assert response.status_code == 201, await response.get_json()
    routine = await routines.create(
        **manual(contract["project_id"], [ASK], review={"before_step": 1})
    )
    first = await routines.start(routine["id"])
    await routines.until(first["id"], {"waiting_for_review"})
    await routines.request("POST", f"/api/v2/routine-runs/{first['id']}/approve", json={})
    await routines.until(first["id"], ENDED)
    second = await routines.start(routine["id"])
    await routines.until(second["id"], {"waiting_for_review"})
    await routines.request("POST", f"/api/v2/routine-runs/{second['id']}/reject", json={})
    async with runtime.sessions() as session:
        statement = (
            select(WebhookEvent.type, WebhookEvent.body)
            .where(col(WebhookEvent.type).startswith("routine."))
            .order_by(col(WebhookEvent.created_at))
        )
        events = [
            (kind, body)
            for kind, body in (await session.exec(statement)).all()
            if first["id"] in body or second["id"] in body
        ]
    assert [kind for kind, _ in events] == [
        "routine.run.waiting_for_review", "routine.run.succeeded",
        "routine.run.waiting_for_review", "routine.run.rejected",
    ]  # fmt: skip


async def test_a_steps_job_is_run_by_the_routine_alone_once(routines: Routines, contract, runtime):
    """A workflow step's job is made as a client's call makes it, but not queued (the
    routine's call never runs its after-commit actions): the routine's job runs it itself
    (run_now), one attempt each, so no second runner takes it meanwhile."""
    routine = await routines.create(**manual(contract["project_id"], [TERMS, TERMS, TERMS]))
    started = await routines.start(routine["id"])
    run = await routines.until(started["id"], ENDED)
    assert run["status"] == "succeeded", run
    async with runtime.sessions() as session:
        stored = await session.get(RoutineRun, uuid.UUID(run["id"]))
        job_ids = [uuid.UUID(step["job_id"]) for step in stored.steps]
        statement = select(Job.attempts).where(col(Job.id).in_(job_ids))
        attempts = (await session.exec(statement)).all()
    assert attempts == [1, 1, 1]


MEMO = ["SITE MEMO\n\nThe hoarding deposit for the north boundary is £12,500, paid to the council."]


async def test_a_step_reads_the_documents_an_earlier_steps_answer_cites(
    routines: Routines, contract
):
    """documents_from_step: the key terms are taken from the document the answer cited, not
    from every document of the project; the run's step says which step it read."""
    project_id = contract["project_id"]
    await routines.vault.ingested(make_pdf(MEMO), "memo.pdf", project_id)
    steps = [ASK, TERMS | {"documents_from_step": 1}]
    routine = await routines.create(**manual(project_id, steps))
    run = await routines.until((await routines.start(routine["id"]))["id"], ENDED)
    assert run["status"] == "succeeded", run
    assert run["steps"][1]["documents_from_step"] == 1
    answer = await routines.request(
        "GET", f"/api/v2/conversations/{run['steps'][0]['conversation_id']}"
    )
    cited = {citation["document_id"] for citation in answer["messages"][-1]["citations"]}
    assert cited == {contract["document"]["id"]}
    terms = await routines.request("GET", f"/api/v2/workflows/runs/{run['steps'][1]['result_id']}")
    assert terms["inputs"]["document_ids"] == [contract["document"]["id"]]


async def test_a_step_whose_earlier_step_cites_nothing_fails_saying_so(
    routines: Routines, contract
):
    nothing = {"type": "chat", "query": "zebra giraffe"}  # found in no passage
    steps = [nothing, ASK | {"documents_from_step": 1}]
    routine = await routines.create(**manual(contract["project_id"], steps))
    run = await routines.until((await routines.start(routine["id"]))["id"], ENDED)
    assert run["status"] == "failed"
    assert [step["status"] for step in run["steps"]] == ["succeeded", "failed"]
    assert run["steps"][1]["result_id"] is None
    assert run["steps"][1]["error"]["code"] == "not_found"
    assert "Step 1's result cites no document" in run["steps"][1]["error"]["detail"]


SLOW = "wf_test_slow"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # the workflow is this process's
async def test_deleting_a_routine_stops_its_run_and_the_steps_work_then_the_step_ends_alone(
    routines: Routines, contract, monkeypatch, tmp_path
):
    """A run in the middle of a workflow step whose parse would take 60 s: the routine's
    DELETE cancels the run's job, which stops the step's bounded work (its child killed);
    no later step starts; the workflow run, the tenant's own and billed, is queued and ends
    by itself. (A test workflow, registered in this process's catalogue.)"""
    pid_file, calls = tmp_path / "pid", []

    async def slow(context) -> None:
        calls.append(len(calls))
        seconds = 60.0 if len(calls) == 1 else 0.0
        await context.services.work.run(sleep_and_report, str(pid_file), seconds)
        context.output = {}

    register(monkeypatch, SLOW, Step("slow", slow), name="Sleeps in a child the first time")
    step = {"type": "workflow", "workflow_id": SLOW, "inputs": {}}
    routine = await routines.create(**manual(contract["project_id"], [step, ASK]))
    run_id = (await routines.start(routine["id"]))["id"]
    async with asyncio.timeout(JOB_DEADLINE):
        while not pid_file.exists():  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    child = int(pid_file.read_text())
    result_id = (await routines.request("GET", f"/api/v2/routine-runs/{run_id}"))["steps"][0][
        "result_id"
    ]
    await routines.request("DELETE", f"/api/v2/routines/{routine['id']}", 204)
    async with asyncio.timeout(30):  # not the 60 s of the step
        while running(child):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    ended = await routines.vault.until_finished(f"/api/v2/workflows/runs/{result_id}")
    assert ended["status"] == "succeeded"
    assert calls == [0, 1]  # stopped once, then run to its end by the queue
    await routines.request("GET", f"/api/v2/routine-runs/{run_id}", 404)
    conversations = await routines.request("GET", "/api/v2/conversations")
    assert conversations["data"] == []  # the chat step never started


HOARDING = {"type": "chat", "query": "What is the hoarding deposit?"}


async def test_a_fills_and_a_workflows_documents_narrow_what_a_later_question_reads(
    routines: Routines, contract
):
    """The memo answers the question, the contract does not. Asked of the project it is
    answered; asked of the documents a template fill found its field in (the contract), or
    that the key terms read from those documents quote, it is not."""
    project_id = contract["project_id"]
    await routines.vault.ingested(make_pdf(MEMO), "memo.pdf", project_id)
    template = make_docx_template(["Employer: {{ employer | Who is the employer? }}"])
    stored = await uploaded(routines.vault, template, "Notice.docx")
    fill = {"type": "template_fill", "template_id": stored["id"]}
    steps = [
        HOARDING,
        fill,
        HOARDING | {"documents_from_step": 2},
        TERMS | {"documents_from_step": 2},
        HOARDING | {"documents_from_step": 4},
    ]
    routine = await routines.create(**manual(project_id, steps))
    run = await routines.until((await routines.start(routine["id"]))["id"], ENDED)
    assert run["status"] == "succeeded", run
    answers = []
    for position in (0, 2, 4):
        conversation_id = run["steps"][position]["conversation_id"]
        conversation = await routines.request("GET", f"/api/v2/conversations/{conversation_id}")
        answers.append(conversation["messages"][-1])
    assert "12,500" in answers[0]["content"]  # the project: the memo answers
    for position, narrowed in zip((2, 4), answers[1:], strict=True):
        assert "12,500" not in narrowed["content"], (position, narrowed)
        cited = {citation["document_id"] for citation in narrowed["citations"]}
        assert cited <= {contract["document"]["id"]}


async def test_a_cited_document_deleted_during_a_review_is_not_handed_on(
    routines: Routines, contract
):
    steps = [ASK, TERMS | {"documents_from_step": 1}]
    routine = await routines.create(
        **manual(contract["project_id"], steps, review={"before_step": 2})
    )
    run_id = (await routines.start(routine["id"]))["id"]
    await routines.until(run_id, {"waiting_for_review"})
    document = contract["document"]["id"]
    await routines.request("DELETE", f"/api/v2/vault/documents/{document}", 204)
    await routines.request("POST", f"/api/v2/routine-runs/{run_id}/approve", json={})
    run = await routines.until(run_id, ENDED)
    assert [step["status"] for step in run["steps"]] == ["succeeded", "failed"]
    assert run["steps"][1]["error"]["code"] == "not_found"
    assert "Step 1's result cites no document" in run["steps"][1]["error"]["detail"]
