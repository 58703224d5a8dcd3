"""A review's decision is taken once (issue 52, item 3), on both backends: of an approval and
a rejection sent at once, or of concurrent approvals, exactly one answers 200 and changes the
run; the others answer 422 naming `status`, and the run ends as the one decision says. And a
run is started, approved and rejected without a body (issue 52, item 8)."""

from __future__ import annotations

import asyncio
import os
import uuid

from sqlmodel import col, func, select

from strongroom.chat.models import Conversation, Message, Role
from strongroom.jobs.models import Job, JobStatus
from strongroom.routines.models import RoutineRun
from tests.routines.conftest import Routines

ENDED = {"succeeded", "failed", "rejected"}
ASK = {"type": "chat", "query": "Who is the employer?"}
TRIALS = 4
# Issue 52's goal is 100 pairs on each setup. The unit suite sends 20: the 100 (each run a job
# to its review, each approved one a chat answer) took 85 s on PostgreSQL and 45 s on SQLite on
# a loaded 2-core machine. STRONGROOM_TEST_REVIEW_PAIRS=100 runs the goal's count (the record is
# in bench/RESULTS.md).
PAIRS = int(os.environ.get("STRONGROOM_TEST_REVIEW_PAIRS", "20"))


def reviewed(project_id: str) -> dict:
    return {
        "name": "Reviewed",
        "project_id": project_id,
        "trigger": {"type": "manual"},
        "steps": [ASK],
        "review": {"before_step": 1},
    }


async def waiting_run(routines: Routines, routine_id: str) -> str:
    started = await routines.start(routine_id)
    run = await routines.until(started["id"], {"waiting_for_review", *ENDED})
    assert run["status"] == "waiting_for_review", run
    return started["id"]


async def decide(routines: Routines, run_id: str, decision: str):
    """POST the decision; its status and body, whatever they are."""
    response = await routines.client.post(
        f"/api/v2/routine-runs/{run_id}/{decision}",
        json={"comment": decision},
        headers=routines.headers,
    )
    return response.status_code, await response.get_json()


def refused_for_status(body: dict) -> bool:
    return body["code"] == "validation_error" and [e["field"] for e in body["errors"]] == ["status"]


async def test_an_approval_and_a_rejection_sent_at_once_take_exactly_one_decision(
    routines: Routines, contract
):
    routine = await routines.create(**reviewed(contract["project_id"]))
    for _ in range(TRIALS):
        run_id = await waiting_run(routines, routine["id"])
        (approve_status, approved), (reject_status, rejected) = await asyncio.gather(
            decide(routines, run_id, "approve"), decide(routines, run_id, "reject")
        )
        assert sorted([approve_status, reject_status]) == [200, 422]
        loser = rejected if approve_status == 200 else approved
        assert refused_for_status(loser), loser
        run = await routines.until(run_id, ENDED)
        if approve_status == 200:
            assert run["status"] == "succeeded", run
            assert run["review"]["decision"] == "approved"
            assert run["steps"][0]["status"] == "succeeded"
        else:
            assert rejected["status"] == "rejected"
            assert run["status"] == "rejected" and run["review"]["decision"] == "rejected"
            await asyncio.sleep(1)  # a run that went on would have started its step by now
            again = await routines.request("GET", f"/api/v2/routine-runs/{run_id}")
            assert again["status"] == "rejected"
            assert again["steps"][0]["status"] == "pending"
            assert again["steps"][0]["result_id"] is None


async def _statuses(runtime, run_ids: list[str]) -> dict[str, str]:
    ids = [uuid.UUID(run_id) for run_id in run_ids]
    statement = select(RoutineRun.id, RoutineRun.status).where(col(RoutineRun.id).in_(ids))
    async with runtime.sessions() as session:
        return {str(run_id): status for run_id, status in (await session.exec(statement)).all()}


async def _until_all(runtime, run_ids: list[str], statuses: set[str]) -> None:
    """Until every run's status is one of `statuses` (read from the database: 100 runs
    polled through the API would be 100 requests a round)."""
    from tests.vault.conftest import JOB_DEADLINE

    async with asyncio.timeout(JOB_DEADLINE):
        while True:
            if set((await _statuses(runtime, run_ids)).values()) <= statuses:
                return
            await asyncio.sleep(0.2)


async def _until_no_job_left(runtime, tenant_id: uuid.UUID) -> None:
    """Until none of the tenant's jobs is pending or running: nothing more can run for it
    (a rejected run that went on would do so in a job)."""
    from tests.vault.conftest import JOB_DEADLINE

    unfinished = [JobStatus.PENDING.value, JobStatus.RUNNING.value]
    statement = select(func.count()).where(
        col(Job.tenant_id) == tenant_id, col(Job.status).in_(unfinished)
    )
    async with asyncio.timeout(JOB_DEADLINE):
        while True:
            async with runtime.sessions() as session:
                if (await session.exec(statement)).one() == 0:
                    return
            await asyncio.sleep(0.2)


async def test_many_concurrent_approve_reject_pairs_take_one_decision_each(
    routines: Routines, contract, runtime
):
    """Issue 52's goal: PAIRS runs waiting for review, an approval and a rejection sent at
    once for each (all the requests at once). Each run answers one 200 and one 422 naming
    `status`, ends as its 200 said, and the side effects are counted in the database: the
    approved runs' chat steps made one conversation each (its question and answer), the
    rejected runs' none."""
    routine = await routines.create(**reviewed(contract["project_id"]))
    started = await asyncio.gather(*(routines.start(routine["id"]) for _ in range(PAIRS)))
    run_ids = [run["id"] for run in started]
    await _until_all(runtime, run_ids, {"waiting_for_review", *ENDED})
    assert set((await _statuses(runtime, run_ids)).values()) == {"waiting_for_review"}

    # Every run's pair at once, the approval sent first for half of them, the rejection for
    # the other half.
    orders = [("approve", "reject") if n % 2 else ("reject", "approve") for n in range(PAIRS)]
    sent = [
        (run_id, decision)
        for run_id, order in zip(run_ids, orders, strict=True)
        for decision in order
    ]
    answers = await asyncio.gather(*(decide(routines, *pair) for pair in sent))
    by_run: dict[str, dict[str, tuple[int, dict]]] = {run_id: {} for run_id in run_ids}
    for (run_id, decision), answer in zip(sent, answers, strict=True):
        by_run[run_id][decision] = answer
    winners: dict[str, str] = {}
    for run_id, pair in by_run.items():
        assert sorted(status for status, _ in pair.values()) == [200, 422], pair
        [winner] = [decision for decision, (status, _) in pair.items() if status == 200]
        [(_, loser)] = [answer for decision, answer in pair.items() if decision != winner]
        assert refused_for_status(loser), loser
        winners[run_id] = {"approve": "approved", "reject": "rejected"}[winner]
        if winner == "reject":
            assert pair["reject"][1]["status"] == "rejected"

    await _until_all(runtime, run_ids, ENDED)
    async with runtime.sessions() as session:
        tenant_id = (await session.get(RoutineRun, uuid.UUID(run_ids[0]))).tenant_id
    await _until_no_job_left(runtime, tenant_id)
    approved_ids = {run_id for run_id, won in winners.items() if won == "approved"}
    answered: set[str] = set()
    for run_id in run_ids:
        run = await routines.request("GET", f"/api/v2/routine-runs/{run_id}")
        [step] = run["steps"]
        assert run["review"]["decision"] == winners[run_id], run
        if run_id in approved_ids:
            assert (run["status"], step["status"]) == ("succeeded", "succeeded"), run
            answered.add(step["result_id"])
        else:
            assert (run["status"], step["status"]) == ("rejected", "pending"), run
            assert step["result_id"] is None and step["conversation_id"] is None, run

    # The side effects themselves: one conversation per approved run, none for a rejected one.
    async with runtime.sessions() as session:
        conversations = (
            await session.exec(
                select(Conversation.id).where(col(Conversation.tenant_id) == tenant_id)
            )
        ).all()
        messages = (
            await session.exec(
                select(Message.id, Message.role).where(
                    col(Message.conversation_id).in_(conversations)
                )
            )
        ).all()
    print(f"{PAIRS} pairs: {len(approved_ids)} approved, {PAIRS - len(approved_ids)} rejected")
    assert len(conversations) == len(approved_ids)
    assert len(messages) == 2 * len(approved_ids)
    assert {str(m) for m, role in messages if role == Role.ASSISTANT.value} == answered


async def test_of_five_concurrent_approvals_one_is_taken_and_four_are_422(
    routines: Routines, contract
):
    routine = await routines.create(**reviewed(contract["project_id"]))
    run_id = await waiting_run(routines, routine["id"])
    answers = await asyncio.gather(*(decide(routines, run_id, "approve") for _ in range(5)))
    statuses = sorted(status for status, _ in answers)
    assert statuses == [200, 422, 422, 422, 422]
    assert all(refused_for_status(body) for status, body in answers if status == 422)
    run = await routines.until(run_id, ENDED)
    assert run["status"] == "succeeded"
    assert run["steps"][0]["status"] == "succeeded"


async def test_a_run_is_started_approved_and_rejected_without_a_body(routines: Routines, contract):
    routine = await routines.create(**reviewed(contract["project_id"]))
    path = f"/api/v2/routines/{routine['id']}/runs"
    started = await routines.client.post(path, headers=routines.headers)  # no body, no type
    assert started.status_code == 202, await started.get_json()
    run_id = (await started.get_json())["id"]
    await routines.until(run_id, {"waiting_for_review"})
    approved = await routines.client.post(
        f"/api/v2/routine-runs/{run_id}/approve", headers=routines.headers
    )
    assert approved.status_code == 200, await approved.get_json()
    assert (await approved.get_json())["review"]["comment"] is None
    other = await waiting_run(routines, routine["id"])
    rejected = await routines.client.post(
        f"/api/v2/routine-runs/{other}/reject", headers=routines.headers
    )
    assert rejected.status_code == 200, await rejected.get_json()
    assert (await rejected.get_json())["status"] == "rejected"


async def test_a_body_that_is_not_json_is_still_415(routines: Routines, contract):
    routine = await routines.create(**reviewed(contract["project_id"]))
    response = await routines.client.post(
        f"/api/v2/routines/{routine['id']}/runs",
        data=b"document_id=x",
        headers={**routines.headers, "Content-Type": "text/plain"},
    )
    assert response.status_code == 415
