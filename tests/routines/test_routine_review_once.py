"""A review's decision is taken once (issue 52, item 3), on both backends: of an approval and
a rejection sent at once, or of concurrent approvals, exactly one answers 200 and changes the
run; the others answer 422 naming `status`, and the run ends as the one decision says. And a
run is started, approved and rejected without a body (issue 52, item 8)."""

from __future__ import annotations

import asyncio

from tests.routines.conftest import Routines

ENDED = {"succeeded", "failed", "rejected"}
ASK = {"type": "chat", "query": "Who is the employer?"}
TRIALS = 4


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
