"""A routine run's changes of state as webhooks (issue 43): delivered to a real receiver and
verified with the Standard Webhooks reference library, on both backends (a deployment of
their own per backend, from tests/webhooks/conftest.py: private receivers allowed)."""

from __future__ import annotations

from standardwebhooks.webhooks import Webhook

from tests.documents import make_pdf
from tests.routines.conftest import CONTRACT, Routines
from tests.vault.conftest import JOB_DEADLINE
from tests.webhooks.conftest import Hooks, hooks  # noqa: F401 (the fixture)
from tests.webhooks.receiver import Receiver
from tests.webhooks.test_webhooks_api import endpoint_for

EVENTS = [
    "routine.run.waiting_for_review",
    "routine.run.succeeded",
    "routine.run.failed",
    "routine.run.rejected",
]


async def test_waiting_approved_succeeded_and_rejected_are_signed_events(hooks: Hooks):  # noqa: F811
    vault = await hooks.vault()
    routines = Routines(vault)
    project_id = await vault.create_project()
    await vault.ingested(make_pdf(CONTRACT), "contract.pdf", project_id)
    with Receiver() as receiver:
        endpoint = await endpoint_for(vault, receiver, EVENTS)
        routine = await routines.create(
            name="Reviewed",
            project_id=project_id,
            trigger={"type": "manual"},
            steps=[{"type": "chat", "query": "Who is the employer?"}],
            review={"before_step": 1},
        )
        approved = await routines.start(routine["id"])
        await routines.until(approved["id"], {"waiting_for_review"})
        await routines.request("POST", f"/api/v2/routine-runs/{approved['id']}/approve", json={})
        await routines.until(approved["id"], {"succeeded", "failed"})
        rejected = await routines.start(routine["id"])
        await routines.until(rejected["id"], {"waiting_for_review"})
        await routines.request(
            "POST", f"/api/v2/routine-runs/{rejected['id']}/reject", json={"comment": "No."}
        )
        received = await receiver.until(4, JOB_DEADLINE)  # a bound for a hung delivery
    verifier = Webhook(endpoint["secret"])
    # Delivery order is not guaranteed (docs/webhooks.md): order by when each was recorded.
    events = sorted(
        (verifier.verify(item.body, item.headers) for item in received),
        key=lambda event: event["timestamp"],
    )
    by_run = {
        run_id: [event["type"] for event in events if event["data"]["id"] == run_id]
        for run_id in (approved["id"], rejected["id"])
    }
    assert by_run == {
        approved["id"]: ["routine.run.waiting_for_review", "routine.run.succeeded"],
        rejected["id"]: ["routine.run.waiting_for_review", "routine.run.rejected"],
    }
    last = next(event for event in events if event["type"] == "routine.run.rejected")
    assert last["data"] == await routines.request("GET", f"/api/v2/routine-runs/{rejected['id']}")
    assert events[0]["data"]["review"]["before_step"] == 1
