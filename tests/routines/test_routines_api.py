"""Routines as a resource (issue 43) through the API on both backends: the shapes, the
validation (problems, never 500), the calendar preview, isolation, idempotency and cost."""

from __future__ import annotations

import uuid

from tests.routines.conftest import Routines

ROUTINE_FIELDS = {
    "id", "name", "project_id", "enabled", "trigger", "steps", "review", "next_run_at",
    "granted_scopes", "paused", "created_at", "updated_at",
}  # fmt: skip


def weekly(project_id: str, **extra) -> dict:
    return {
        "name": "Monday terms",
        "project_id": project_id,
        "trigger": {"type": "schedule", "cron": "0 7 * * 1", "timezone": "Australia/Sydney"},
        "steps": [{"type": "workflow", "workflow_id": "wf_extract_key_terms", "inputs": {}}],
        **extra,
    }


async def test_a_routine_answers_with_the_fields_the_issue_names(routines: Routines, contract):
    created = await routines.create(**weekly(contract["project_id"], review={"before_step": 1}))
    assert set(created) == ROUTINE_FIELDS
    assert created["trigger"] == {
        "type": "schedule", "cron": "0 7 * * 1", "timezone": "Australia/Sydney",
    }  # fmt: skip
    assert created["steps"] == [
        {"type": "workflow", "workflow_id": "wf_extract_key_terms", "inputs": {}}
    ]
    assert created["review"] == {"before_step": 1}
    assert created["next_run_at"].endswith("+00:00")
    fetched = await routines.request("GET", f"/api/v2/routines/{created['id']}")
    assert fetched == created


async def test_a_manual_or_document_ready_routine_has_no_next_run(routines: Routines, contract):
    for trigger in ({"type": "manual"}, {"type": "document_ready", "name_pattern": "*.pdf"}):
        created = await routines.create(**weekly(contract["project_id"], trigger=trigger))
        assert created["next_run_at"] is None
        assert created["trigger"] == trigger


async def test_a_disabled_routine_has_no_next_run(routines: Routines, contract):
    created = await routines.create(**weekly(contract["project_id"], enabled=False))
    assert created["next_run_at"] is None
    patched = await routines.request(
        "PATCH", f"/api/v2/routines/{created['id']}", json={"enabled": True}
    )
    assert patched["next_run_at"] is not None


async def test_list_pages_newest_first_with_a_cursor(routines: Routines, contract):
    ids = [
        (await routines.create(**weekly(contract["project_id"], name=f"r{i}")))["id"]
        for i in range(3)
    ]
    first = await routines.request("GET", "/api/v2/routines?limit=2")
    assert [item["id"] for item in first["data"]] == ids[::-1][:2]
    assert first["has_more"] is True
    second = await routines.request(
        "GET", f"/api/v2/routines?limit=2&cursor={first['next_cursor']}"
    )
    assert [item["id"] for item in second["data"]] == ids[:1]
    assert second["has_more"] is False and second["next_cursor"] is None


async def test_patch_changes_only_what_is_sent_and_review_null_removes_it(
    routines: Routines, contract
):
    created = await routines.create(**weekly(contract["project_id"], review={"before_step": 1}))
    path = f"/api/v2/routines/{created['id']}"
    patched = await routines.request("PATCH", path, json={"name": "Renamed"})
    assert patched["name"] == "Renamed" and patched["review"] == {"before_step": 1}
    patched = await routines.request("PATCH", path, json={"review": None})
    assert patched["review"] is None
    patched = await routines.request(
        "PATCH", path, json={"trigger": {"type": "schedule", "cron": "0 2 * * *"}}
    )
    assert patched["trigger"]["timezone"] == "UTC"


async def test_delete_removes_the_routine(routines: Routines, contract):
    created = await routines.create(**weekly(contract["project_id"]))
    path = f"/api/v2/routines/{created['id']}"
    await routines.request("DELETE", path, 204)
    await routines.request("GET", path, 404)


async def test_a_bad_cron_is_a_problem_naming_trigger_cron(routines: Routines, contract):
    for cron in ("0 7 * *", "61 * * * *", "@daily", "0 0 30 2 *"):
        trigger = {"type": "schedule", "cron": cron, "timezone": "UTC"}
        problem = await routines.create(422, **weekly(contract["project_id"], trigger=trigger))
        assert problem["code"] == "validation_error"
        assert [error["field"] for error in problem["errors"]] == ["trigger.cron"]


async def test_an_unknown_zone_is_a_problem_naming_trigger_timezone(routines: Routines, contract):
    for zone in ("Mars/Olympus", "UTC+3", "../../etc/passwd"):
        trigger = {"type": "schedule", "cron": "0 7 * * 1", "timezone": zone}
        problem = await routines.create(422, **weekly(contract["project_id"], trigger=trigger))
        assert [error["field"] for error in problem["errors"]] == ["trigger.timezone"]


async def test_shapes_outside_the_contract_are_refused(routines: Routines, contract):
    project_id = contract["project_id"]
    for body in (
        weekly(project_id, steps=[]),
        weekly(project_id, steps=[{"type": "chat", "query": "?"}] * 11),
        weekly(project_id, steps=[{"type": "email"}]),
        weekly(project_id, trigger={"type": "hourly"}),
        weekly(project_id, review={"before_step": 2}),  # one step only
        weekly(project_id, review={"before_step": 0}),
        weekly(project_id, colour="red"),
    ):
        problem = await routines.create(422, **body)
        assert problem["code"] == "validation_error"


async def test_another_tenants_document_in_a_step_is_404_naming_it(owner_and_strangers, contract):
    own, strangers = owner_and_strangers
    stranger = strangers[0]
    theirs = await stranger.create_project()
    from tests.documents import make_pdf

    document = await stranger.ingested(make_pdf(["Their letter."]), "theirs.pdf", theirs)
    project_id = await own.create_project()
    steps = [
        {"type": "workflow", "workflow_id": "wf_summarise_documents",
         "inputs": {"document_ids": [document["id"]]}},
    ]  # fmt: skip
    problem = await Routines(own).create(404, **weekly(project_id, steps=steps))
    assert problem["code"] == "not_found" and document["id"] in problem["detail"]
    template = [{"type": "template_fill", "template_id": document["id"]}]
    problem = await Routines(own).create(404, **weekly(project_id, steps=template))
    assert problem["code"] == "not_found" and document["id"] in problem["detail"]


async def test_unknown_workflow_template_or_project_is_404(routines: Routines, contract):
    project_id = contract["project_id"]
    unknown = str(uuid.uuid4())
    for body in (
        weekly(project_id, steps=[{"type": "workflow", "workflow_id": "wf_nothing"}]),
        weekly(project_id, steps=[{"type": "template_fill", "template_id": unknown}]),
        weekly(unknown),
    ):
        problem = await routines.create(404, **body)
        assert problem["code"] == "not_found"


async def test_workflow_inputs_are_checked_against_its_schema(routines: Routines, contract):
    steps = [{"type": "workflow", "workflow_id": "wf_compare_documents", "inputs": {"x": 1}}]
    problem = await routines.create(422, **weekly(contract["project_id"], steps=steps))
    assert any(error["field"].startswith("steps.0.inputs") for error in problem["errors"])


async def test_an_unknown_input_of_a_step_is_said_naming_the_one_meant(
    routines: Routines, contract
):
    """Issue 52: a step's inputs' problems said pydantic's raw message, without the near miss
    every other body's 422 names (issue 31)."""
    steps = [
        {"type": "workflow", "workflow_id": "wf_extract_key_terms", "inputs": {"document_id": []}}
    ]
    problem = await routines.create(422, **weekly(contract["project_id"], steps=steps))
    assert problem["errors"] == [
        {
            "field": "steps.0.inputs.document_id",
            "message": "Extra inputs are not permitted; did you mean `document_ids`?",
        }
    ]


async def test_another_tenants_or_environments_routine_is_404(owner_and_strangers):
    own, strangers = owner_and_strangers
    project_id = await own.create_project()
    created = await Routines(own).create(**weekly(project_id))
    path = f"/api/v2/routines/{created['id']}"
    for stranger in strangers:
        other = Routines(stranger)
        await other.request("GET", path, 404)
        await other.request("PATCH", path, 404, json={"name": "mine"})
        await other.request("GET", path + "/schedule", 404)
        await other.request("GET", path + "/runs", 404)
        await other.request("POST", path + "/runs", 404, json={})
        await other.request("DELETE", path, 404)
        listed = await other.request("GET", "/api/v2/routines")
        assert created["id"] not in [item["id"] for item in listed["data"]]
    await Routines(own).request("GET", path)


async def test_at_most_max_routines_per_tenant(routines: Routines, contract, monkeypatch):
    from strongroom.routines import service

    monkeypatch.setattr(service, "MAX_ROUTINES", 2)
    for _ in range(2):
        await routines.create(**weekly(contract["project_id"]))
    problem = await routines.create(422, **weekly(contract["project_id"]))
    assert "At most 2 routines" in problem["detail"]


async def test_create_replays_with_the_same_idempotency_key(routines: Routines, contract):
    body = weekly(contract["project_id"])
    first = await routines.create(headers={"Idempotency-Key": "routine-1"}, **body)
    response = await routines.client.post(
        "/api/v2/routines", json=body, headers={**routines.headers, "Idempotency-Key": "routine-1"}
    )
    assert response.status_code == 201
    assert response.headers["Idempotent-Replayed"] == "true"
    assert (await response.get_json())["id"] == first["id"]
    listed = await routines.request("GET", "/api/v2/routines")
    assert len(listed["data"]) == 1


async def test_creating_costs_2_and_reading_1(routines: Routines, contract):
    response = await routines.client.post(
        "/api/v2/routines", json=weekly(contract["project_id"]), headers=routines.headers
    )
    assert response.headers["X-RateLimit-Cost"] == "2"
    routine_id = (await response.get_json())["id"]
    response = await routines.client.get(f"/api/v2/routines/{routine_id}", headers=routines.headers)
    assert response.headers["X-RateLimit-Cost"] == "1"


async def test_the_scopes_are_routines_read_and_write(client, make_credential, contract):
    from tests.vault.conftest import Vault

    reader = Vault(client, (await make_credential(scopes=["routines:read"])).headers)
    problem = await Routines(reader).create(403, **weekly(contract["project_id"]))
    assert problem["missing_scopes"] == ["routines:write"]
    await Routines(reader).request("GET", "/api/v2/routines")
    writer = Vault(client, (await make_credential(scopes=["routines:write"])).headers)
    problem = await Routines(writer).request("GET", "/api/v2/routines", 403)
    assert problem["missing_scopes"] == ["routines:read"]


# --- the calendar preview -------------------------------------------------------------------


async def daily_2am(routines: Routines, project_id: str, zone: str) -> str:
    trigger = {"type": "schedule", "cron": "0 2 * * *", "timezone": zone}
    return (await routines.create(**weekly(project_id, trigger=trigger, enabled=False)))["id"]


async def test_preview_sydney_2027_dst_changes(routines: Routines, contract):
    routine_id = await daily_2am(routines, contract["project_id"], "Australia/Sydney")
    path = f"/api/v2/routines/{routine_id}/schedule?count=3&after=2027-04-02T00:00:00Z"
    april = await routines.request("GET", path)
    # 4 April 2027: 2:00 happens twice (3:00 AEDT goes back to 2:00 AEST): once, the first.
    assert [item["at"] for item in april["data"]] == [
        "2027-04-02T15:00:00+00:00", "2027-04-03T15:00:00+00:00", "2027-04-04T16:00:00+00:00",
    ]  # fmt: skip
    assert [item["local"] for item in april["data"]] == [
        "2027-04-03T02:00:00+11:00", "2027-04-04T02:00:00+11:00", "2027-04-05T02:00:00+10:00",
    ]  # fmt: skip
    assert april["enabled"] is False  # a preview whether or not the routine is enabled
    path = f"/api/v2/routines/{routine_id}/schedule?count=2&after=2027-10-01T12:00:00Z"
    october = await routines.request("GET", path)
    # 3 October 2027: 2:00 does not exist (2:00 AEST jumps to 3:00 AEDT): skipped.
    assert [item["local"] for item in october["data"]] == [
        "2027-10-02T02:00:00+10:00", "2027-10-04T02:00:00+11:00",
    ]  # fmt: skip


async def test_preview_new_york_2027_dst_changes(routines: Routines, contract):
    routine_id = await daily_2am(routines, contract["project_id"], "America/New_York")
    path = f"/api/v2/routines/{routine_id}/schedule?count=2&after=2027-03-13T12:00:00Z"
    march = await routines.request("GET", path)
    # 14 March 2027: 2:00 EST jumps to 3:00 EDT: no 2:00 that day.
    assert [item["at"] for item in march["data"]] == [
        "2027-03-15T06:00:00+00:00", "2027-03-16T06:00:00+00:00",
    ]  # fmt: skip
    path = f"/api/v2/routines/{routine_id}/schedule?count=2&after=2027-11-06T12:00:00Z"
    november = await routines.request("GET", path)
    # 7 November 2027: 2:00 EDT goes back to 1:00 EST; 2:00 (EST) happens once.
    assert [item["local"] for item in november["data"]] == [
        "2027-11-07T02:00:00-05:00", "2027-11-08T02:00:00-05:00",
    ]  # fmt: skip


async def test_preview_count_is_1_to_500(routines: Routines, contract):
    routine_id = await daily_2am(routines, contract["project_id"], "UTC")
    path = f"/api/v2/routines/{routine_id}/schedule"
    assert len((await routines.request("GET", path + "?count=500"))["data"]) == 500
    assert len((await routines.request("GET", path))["data"]) == 10
    for bad in ("0", "501", "ten", "-1"):
        problem = await routines.request("GET", f"{path}?count={bad}", 422)
        assert problem["code"] == "validation_error"
    problem = await routines.request("GET", f"{path}?after=2027-01-01T00:00:00", 422)
    assert problem["code"] == "validation_error"  # no offset: which clock?
    for far in ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"):
        problem = await routines.request("GET", f"{path}?after={far}", 422)
        assert problem["errors"][0]["field"] == "after"


async def test_preview_of_a_routine_without_a_schedule_is_422(routines: Routines, contract):
    created = await routines.create(**weekly(contract["project_id"], trigger={"type": "manual"}))
    problem = await routines.request("GET", f"/api/v2/routines/{created['id']}/schedule", 422)
    assert problem["code"] == "validation_error"


async def test_documents_from_step_names_an_earlier_step_whose_documents_the_step_can_read(
    routines: Routines, contract
):
    project_id, document_id = contract["project_id"], contract["document"]["id"]
    ask = {"type": "chat", "query": "Who is the employer?"}
    summary = {"type": "workflow", "workflow_id": "wf_summarise_documents", "inputs": {}}
    compare = {
        "type": "workflow",
        "workflow_id": "wf_compare_documents",
        "inputs": {"left_document_id": document_id, "right_document_id": document_id},
    }
    named = summary | {"inputs": {"document_ids": [document_id]}}
    for steps, field in (
        ([ask | {"documents_from_step": 1}], "steps.0.documents_from_step"),
        ([ask, ask | {"documents_from_step": 2}], "steps.1.documents_from_step"),
        ([ask, compare | {"documents_from_step": 1}], "steps.1.documents_from_step"),
        ([ask, named | {"documents_from_step": 1}], "steps.1.documents_from_step"),
    ):
        problem = await routines.create(422, **weekly(project_id, steps=steps))
        assert [error["field"] for error in problem["errors"]] == [field], steps
    steps = [ask, summary | {"documents_from_step": 1}, ask | {"documents_from_step": 2}]
    created = await routines.create(**weekly(project_id, steps=steps))
    assert [step.get("documents_from_step") for step in created["steps"]] == [None, 1, 2]
