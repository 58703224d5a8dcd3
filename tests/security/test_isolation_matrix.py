"""Tenant and environment isolation, all capabilities together (D4, D13; issue 10 item 2).

One tenant's `test` key (the owner) makes a real resource of every kind: a project, a
document (uploaded and ingested), a conversation (POST /chat), a template-fill job (a DOCX
template filled from the document) and a workflow run. Two strangers must never see any of
it: another tenant, and the owner's own tenant in its other environment (`live`). Each
stranger has a project, a document with the same unique word and a conversation of its own,
so that its lists and searches are not empty by accident: they find the stranger's things
and never the owner's.

The capabilities whose path takes an id are enumerated from `strongroom.app.AREAS`, so a
new endpoint is in the matrix as soon as it is declared, and fails here until it has a case
in `CASES`. Per-area tests (tests/vault, tests/chat, tests/templates, tests/workflows) check
some of this too; this is the one place that checks all of it together.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from strongroom.api.capability import Capability
from strongroom.app import AREAS
from strongroom.tenants.models import RateLimitTier
from strongroom.tenants.partition import Environment
from tests.chat.conftest import parse_events
from tests.conftest import issue_credential
from tests.documents import make_docx_template
from tests.vault.conftest import JOB_DEADLINE, Vault, unique_word

_PATH_PARAMETER = re.compile(r"<(?:[a-z]+:)?(\w+)>")

# Every capability whose path takes an id, from the declarations themselves.
ID_CAPABILITIES: dict[str, Capability] = {
    capability.name: capability
    for routes in AREAS
    for capability, _ in routes.entries
    if _PATH_PARAMETER.search(capability.path)
}

STRANGERS = ("another tenant", "the other environment")


@dataclass
class World:
    owner: Vault
    strangers: dict[str, Vault]
    word: str
    owner_marker: str
    project_id: str
    document: dict
    ingestion_job_id: str
    conversation_id: str
    fill_job_id: str
    run_id: str
    endpoint_id: str
    delivery_id: str
    # Endpoints for the deletion probes, one per stranger (each is gone after its probe).
    doomed_endpoint_ids: list[str] = field(default_factory=list)
    doomed_conversation_ids: list[str] = field(default_factory=list)
    doomed_document_ids: list[str] = field(default_factory=list)
    doomed_project_ids: list[str] = field(default_factory=list)
    # A document of the owner's that the reprocessing probes may send through ingestion again.
    spare_document_id: str = ""
    # What each stranger made for itself: project, document and conversation ids.
    own: dict[str, dict[str, str]] = field(default_factory=dict)
    # Routines (issue 43): a scheduled routine (disabled) with a review before its step, a
    # run of it, and spares the probes use up (deleted routines, runs approved or rejected).
    routine_id: str = ""
    routine_run_id: str = ""
    doomed_routine_ids: list[str] = field(default_factory=list)
    waiting_run_ids: list[str] = field(default_factory=list)

    def owner_ids(self) -> set[str]:
        return {
            self.project_id, self.document["id"], self.ingestion_job_id,
            self.conversation_id, self.fill_job_id, self.run_id, self.endpoint_id,
            self.delivery_id, *self.doomed_endpoint_ids, *self.doomed_conversation_ids,
            *self.doomed_document_ids, *self.doomed_project_ids, self.spare_document_id,
            self.routine_id, self.routine_run_id, *self.doomed_routine_ids, *self.waiting_run_ids,
        }  # fmt: skip

    def deleted(self, probe: Probe) -> None:
        """The probe's resource is gone: the next deletion probe takes another."""
        for doomed in (
            self.doomed_endpoint_ids,
            self.doomed_conversation_ids,
            self.doomed_document_ids,
            self.doomed_project_ids,
            self.doomed_routine_ids,
        ):
            for value in probe.path.values():
                if value in doomed:
                    doomed.remove(value)


@dataclass(frozen=True)
class Probe:
    """One request to a capability: its path parameters and, for writes, its JSON body."""

    path: dict[str, str]
    body: dict[str, Any] | None = None


def url_of(capability: Capability, parameters: dict[str, str]) -> str:
    """The capability's declared path with its parameters filled in."""
    names = _PATH_PARAMETER.findall(capability.path)
    assert set(names) == set(parameters), (capability.name, names, parameters)
    return _PATH_PARAMETER.sub(lambda match: parameters[match.group(1)], capability.path)


# What to call, for each capability whose path takes an id, to reach the owner's resource.
# `workflows.start_run`'s id is a workflow of the built-in catalogue, the same for everyone:
# what it must refuse is the owner's project or documents named in the body.
CASES: dict[str, Callable[[World], list[Probe]]] = {
    "vault.get_project": lambda w: [Probe({"project_id": w.project_id})],
    "vault.get_document": lambda w: [Probe({"document_id": w.document["id"]})],
    "vault.delete_document": lambda w: [Probe({"document_id": w.doomed_document_ids[-1]})],
    "vault.reprocess_document": lambda w: [Probe({"document_id": w.spare_document_id})],
    "vault.delete_project": lambda w: [Probe({"project_id": w.doomed_project_ids[-1]})],
    "vault.get_document_content": lambda w: [Probe({"document_id": w.document["id"]})],
    "vault.get_ingestion_job": lambda w: [Probe({"job_id": w.ingestion_job_id})],
    "vault.update_project": lambda w: [
        Probe({"project_id": w.project_id}, {"name": "Owner's project"})
    ],
    "chat.get_conversation": lambda w: [Probe({"conversation_id": w.conversation_id})],
    "chat.update_conversation": lambda w: [
        Probe({"conversation_id": w.conversation_id}, {"title": "The owner's question"})
    ],
    "chat.delete_conversation": lambda w: [
        Probe({"conversation_id": w.doomed_conversation_ids[-1]})
    ],
    "templates.get_fill": lambda w: [Probe({"job_id": w.fill_job_id})],
    "templates.get_fill_result": lambda w: [Probe({"job_id": w.fill_job_id})],
    "workflows.start_run": lambda w: [
        Probe({"workflow_id": "wf_summarise_documents"}, {"project_id": w.project_id}),
        Probe(
            {"workflow_id": "wf_extract_key_terms"},
            {"inputs": {"document_ids": [w.document["id"]]}},
        ),
        Probe(
            {"workflow_id": "wf_compare_documents"},
            {
                "inputs": {
                    "left_document_id": w.document["id"],
                    "right_document_id": w.document["id"],
                }
            },
        ),
    ],
    "workflows.get_run": lambda w: [Probe({"run_id": w.run_id})],
    "webhooks.get_endpoint": lambda w: [Probe({"endpoint_id": w.endpoint_id})],
    "webhooks.update_endpoint": lambda w: [
        Probe({"endpoint_id": w.endpoint_id}, {"status": "disabled"})
    ],
    "webhooks.delete_endpoint": lambda w: [Probe({"endpoint_id": w.doomed_endpoint_ids[-1]})],
    "webhooks.rotate_secret": lambda w: [Probe({"endpoint_id": w.endpoint_id})],
    "webhooks.list_deliveries": lambda w: [Probe({"endpoint_id": w.endpoint_id})],
    "webhooks.retry_delivery": lambda w: [
        Probe({"endpoint_id": w.endpoint_id, "delivery_id": w.delivery_id})
    ],
    # Routines (issue 43). Approving or rejecting uses a waiting run up (the owner's call
    # decides it), so each probe takes one of its own.
    "routines.get": lambda w: [Probe({"routine_id": w.routine_id})],
    "routines.update": lambda w: [Probe({"routine_id": w.routine_id}, {"name": "Owner's"})],
    "routines.delete": lambda w: [Probe({"routine_id": w.doomed_routine_ids[-1]})],
    "routines.schedule": lambda w: [Probe({"routine_id": w.routine_id})],
    "routines.start_run": lambda w: [Probe({"routine_id": w.routine_id}, {})],
    "routines.list_runs": lambda w: [Probe({"routine_id": w.routine_id})],
    "routines.get_run": lambda w: [Probe({"run_id": w.routine_run_id})],
    "routines.approve_run": lambda w: [Probe({"run_id": w.waiting_run_ids.pop()}, {})],
    "routines.reject_run": lambda w: [Probe({"run_id": w.waiting_run_ids.pop()}, {})],
}


async def call(vault: Vault, capability: Capability, probe: Probe):
    url = url_of(capability, probe.path)
    if capability.method == "GET":
        return await vault.client.get(url, headers=vault.headers)
    return await vault.client.open(
        url, method=capability.method, json=probe.body, headers=vault.headers
    )


async def ask(vault: Vault, path: str = "/api/v2/chat", status: int = 200, **body):
    response = await vault.client.post(path, json=body, headers=vault.headers)
    assert response.status_code == status, await response.get_data(as_text=True)
    return response


def document_text(word: str, marker: str, retention: str) -> bytes:
    return (
        f"Building contract {word}.\n\nThe retention for {word} is {retention}. "
        f"The reference of this contract is {marker}.\n"
    ).encode()


async def start_fill(vault: Vault, template: bytes, **fields: str):
    return await vault.post_form("/api/v2/templates/fill", template, "notice.docx", **fields)


@pytest.fixture(scope="module")
async def world(app, runtime, worker) -> World:
    """The owner's resources of every kind, and two strangers with things of their own."""
    client = app.test_client()
    own = await issue_credential(runtime, tier=RateLimitTier.ENTERPRISE)
    other_tenant = await issue_credential(runtime, tier=RateLimitTier.ENTERPRISE)
    other_environment = await issue_credential(
        runtime, tier=RateLimitTier.ENTERPRISE, environment=Environment.LIVE, tenant=own.tenant
    )
    owner = Vault(client, own.headers)
    strangers = {
        STRANGERS[0]: Vault(client, other_tenant.headers),
        STRANGERS[1]: Vault(client, other_environment.headers),
    }
    word, owner_marker = unique_word(), unique_word()

    project_id = await owner.create_project("Owner's project")
    hook = await owner.client.post(
        "/api/v2/webhooks/endpoints",
        json={"url": "https://93.184.216.34/owner-hook", "events": ["document.ready"]},
        headers=owner.headers,
    )
    assert hook.status_code == 201, await hook.get_json()
    endpoint_id = (await hook.get_json())["id"]
    doomed = []
    for _ in STRANGERS:
        spare = await owner.client.post(
            "/api/v2/webhooks/endpoints",
            json={"url": "https://93.184.216.34/spare", "events": ["document.failed"]},
            headers=owner.headers,
        )
        doomed.append((await spare.get_json())["id"])
    upload = await owner.upload(
        project_id, document_text(word, owner_marker, "five per cent"), "owner.txt"
    )
    assert upload.status_code == 202, await upload.get_json()
    accepted = await upload.get_json()
    job = await owner.wait_for_job(accepted["ingestion_job_id"])
    assert job["status"] == "succeeded", job
    document = await owner.get(f"/api/v2/vault/documents/{accepted['id']}")

    answer = await (await ask(owner, query=f"What is the retention for {word}?")).get_json()
    assert [c["document_id"] for c in answer["citations"]] == [document["id"]], answer
    doomed_conversations = [  # for the deletion probes, one per stranger
        (await (await ask(owner, query=f"Who retains for {word}?")).get_json())["conversation_id"]
        for _ in STRANGERS
    ]

    template = make_docx_template(
        [f"Retention: {{{{ retention | What is the retention for {word}? }}}}"]
    )
    fill = await start_fill(owner, template, project_id=project_id)
    assert fill.status_code == 202, await fill.get_json()
    fill_job_id = (await fill.get_json())["job_id"]
    filled = await owner.until_finished(f"/api/v2/templates/fill/{fill_job_id}")
    assert filled["status"] == "succeeded", filled

    run = await owner.client.post(
        "/api/v2/workflows/wf_summarise_documents/runs",
        json={"project_id": project_id},
        headers=owner.headers,
    )
    assert run.status_code == 202, await run.get_json()
    run_id = (await run.get_json())["run_id"]
    ran = await owner.until_finished(f"/api/v2/workflows/runs/{run_id}")
    assert ran["status"] == "succeeded", ran

    deliveries = await owner.get(f"/api/v2/webhooks/endpoints/{endpoint_id}/deliveries")
    [delivery] = deliveries["data"]  # the document's `document.ready`
    doomed_documents = []  # for the deletion probes, one per stranger
    for index, _ in enumerate(STRANGERS):
        spare = await owner.upload(project_id, b"A spare document.", f"spare-{index}.txt")
        assert spare.status_code == 202, await spare.get_json()
        doomed_documents.append((await spare.get_json())["id"])
    doomed_projects = [await owner.create_project(f"Spare {n}") for n, _ in enumerate(STRANGERS)]
    spare = await owner.upload(project_id, b"A document to read again.", "again.txt")
    assert spare.status_code == 202, await spare.get_json()

    made = World(
        owner=owner, strangers=strangers, word=word, owner_marker=owner_marker,
        project_id=project_id, document=document, ingestion_job_id=accepted["ingestion_job_id"],
        conversation_id=answer["conversation_id"], fill_job_id=fill_job_id, run_id=run_id,
        endpoint_id=endpoint_id, delivery_id=delivery["id"], doomed_endpoint_ids=doomed,
        doomed_conversation_ids=doomed_conversations, doomed_document_ids=doomed_documents,
        doomed_project_ids=doomed_projects, spare_document_id=(await spare.get_json())["id"],
    )  # fmt: skip
    for name, stranger in strangers.items():
        stranger_project = await stranger.create_project("Stranger's project")
        stranger_document = await stranger.ingested(
            document_text(word, unique_word(), "ten per cent"), "stranger.txt", stranger_project
        )
        assert stranger_document["status"] == "ready", stranger_document
        chat = await (await ask(stranger, query="What is a retention?")).get_json()
        made.own[name] = {
            "project_id": stranger_project,
            "document_id": stranger_document["id"],
            "conversation_id": chat["conversation_id"],
        }
    await make_routines(made)
    return made


async def make_routines(world: World) -> None:
    """The owner's routine, a run of it, spare routines and runs waiting for review."""
    owner = world.owner
    routine = {
        "name": "Owner's routine",
        "project_id": world.project_id,
        "enabled": False,
        "trigger": {"type": "schedule", "cron": "0 7 * * 1", "timezone": "Australia/Sydney"},
        "steps": [{"type": "chat", "query": f"What is the retention for {world.word}?"}],
        "review": {"before_step": 1},
    }
    made = []
    for _ in range(1 + len(STRANGERS)):
        response = await owner.client.post("/api/v2/routines", json=routine, headers=owner.headers)
        assert response.status_code == 201, await response.get_json()
        made.append((await response.get_json())["id"])
    world.routine_id, *world.doomed_routine_ids = made
    runs = []
    for _ in range(1 + 2 * len(STRANGERS)):  # one to read, one per approve and reject probe
        response = await owner.client.post(
            f"/api/v2/routines/{world.routine_id}/runs", json={}, headers=owner.headers
        )
        assert response.status_code == 202, await response.get_json()
        run_id = (await response.get_json())["id"]
        async with asyncio.timeout(JOB_DEADLINE):
            while True:
                run = await owner.get(f"/api/v2/routine-runs/{run_id}")
                if run["status"] not in {"queued", "running"}:
                    break
                await asyncio.sleep(0.1)
        assert run["status"] == "waiting_for_review", run
        runs.append(run_id)
    world.routine_run_id, *world.waiting_run_ids = runs


def assert_nothing_of_the_owner(
    world: World, body: bytes | str, sent: tuple[str, ...] = ()
) -> None:
    """No id or text of the owner's in `body`, other than the ids the stranger sent itself
    (a 404 may name the id it did not find)."""
    text = body.decode(errors="replace") if isinstance(body, bytes) else body
    for echoed in sent:
        text = text.replace(echoed, "")
    leaked = [item for item in (*world.owner_ids(), world.owner_marker) if item in text]
    assert not leaked, f"the owner's {leaked} reached a stranger: {text[:500]}"


# -- the matrix ------------------------------------------------------------------------------


def test_every_capability_whose_path_takes_an_id_has_an_isolation_case():
    """A new endpoint with an id in its path fails here until CASES covers it; a case for an
    endpoint that is gone fails too."""
    assert ID_CAPABILITIES, "no capability takes an id: the enumeration is broken"
    missing = sorted(set(ID_CAPABILITIES) - set(CASES))
    stale = sorted(set(CASES) - set(ID_CAPABILITIES))
    assert not missing, f"no isolation case for {missing}: add one to CASES"
    assert not stale, f"isolation cases for capabilities that no longer exist: {stale}"


@pytest.mark.parametrize("stranger", STRANGERS)
@pytest.mark.parametrize("name", sorted(ID_CAPABILITIES))
async def test_a_resource_of_another_tenant_or_environment_is_404_not_found(world, name, stranger):
    capability = ID_CAPABILITIES[name]
    if name not in CASES:
        pytest.fail(f"no isolation case for {name} ({capability.path}): add one to CASES")
    for probe in CASES[name](world):
        # A deletion is tried by the stranger first: the owner's own call then shows the
        # resource was still there to delete.
        if capability.method != "DELETE":
            await assert_the_owner_reaches(world, capability, probe)
        theirs = await call(world.strangers[stranger], capability, probe)
        body = await theirs.get_data()
        assert theirs.status_code == 404, (probe, body)
        assert theirs.headers["Content-Type"] == "application/problem+json"
        assert json.loads(body)["code"] == "not_found"
        assert_nothing_of_the_owner(world, body, sent=sent_ids(probe))
        if capability.method == "DELETE":
            await assert_the_owner_reaches(world, capability, probe)
            world.deleted(probe)


async def assert_the_owner_reaches(world: World, capability: Capability, probe: Probe) -> None:
    """The probe names a real resource of the owner's, by the declared path."""
    mine = await call(world.owner, capability, probe)
    assert mine.status_code == capability.status, (probe, await mine.get_data(as_text=True))


def sent_ids(probe: Probe) -> tuple[str, ...]:
    return tuple(re.findall(r"[0-9a-f-]{36}|run_[\w-]+", json.dumps([probe.path, probe.body])))


# -- lists, search and chat never return it --------------------------------------------------


async def everything(vault: Vault, path: str) -> list[dict]:
    """Every item of a paginated list, following `next_cursor` to the end."""
    items, cursor = [], None
    while True:
        page = await vault.get(path + (f"&cursor={cursor}" if cursor else ""))
        items += page["data"]
        if not page["has_more"]:
            return items
        cursor = page["next_cursor"]


@pytest.mark.parametrize("stranger", STRANGERS)
async def test_lists_never_return_a_resource_of_another_tenant_or_environment(world, stranger):
    vault, own = world.strangers[stranger], world.own[stranger]
    for path, key, owners in (
        ("/api/v2/vault/projects?limit=100", "project_id", world.project_id),
        ("/api/v2/vault/documents?limit=100", "document_id", world.document["id"]),
        ("/api/v2/conversations?limit=100", "conversation_id", world.conversation_id),
    ):
        ids = [item["id"] for item in await everything(vault, path)]
        assert own[key] in ids, (path, ids)  # the stranger's own things are listed
        assert owners not in ids, path
        assert owners in [item["id"] for item in await everything(world.owner, path)]
    # Filtering by the owner's project names a project the stranger does not have.
    response = await vault.client.get(
        f"/api/v2/vault/documents?project_id={world.project_id}", headers=vault.headers
    )
    assert response.status_code == 404
    assert (await response.get_json())["code"] == "not_found"


@pytest.mark.parametrize("stranger", STRANGERS)
async def test_search_never_returns_a_passage_of_another_tenant_or_environment(world, stranger):
    vault, own = world.strangers[stranger], world.own[stranger]
    owners = await world.owner.search(query=f"retention {world.word}")
    assert world.document["id"] in {hit["document_id"] for hit in owners["data"]}
    found = await vault.search(query=f"retention {world.word}")
    assert {hit["document_id"] for hit in found["data"]} == {own["document_id"]}
    assert_nothing_of_the_owner(world, json.dumps(found))
    assert (await vault.search(query=world.owner_marker))["data"] == []
    # Naming the owner's project or document as a filter is 404, as any unknown id is
    # (issue 42): another tenant's id looks exactly like one that does not exist.
    for filters in (
        {"project_ids": [world.project_id]},
        {"document_ids": [world.document["id"]]},
    ):
        refused = await vault.search(404, query=f"retention {world.word}", **filters)
        assert refused["code"] == "not_found"
        assert_nothing_of_the_owner(world, json.dumps(refused), sent=tuple(*filters.values()))


@pytest.mark.parametrize("stranger", STRANGERS)
async def test_chat_never_cites_a_passage_of_another_tenant_or_environment(world, stranger):
    vault, own = world.strangers[stranger], world.own[stranger]
    question = f"What is the retention for {world.word}?"
    answer = await (await ask(vault, query=question)).get_json()
    assert {c["document_id"] for c in answer["citations"]} == {own["document_id"]}
    assert "ten per cent" in answer["answer"]
    assert_nothing_of_the_owner(world, json.dumps(answer))
    for filters in (
        {"project_ids": [world.project_id]},
        {"document_ids": [world.document["id"]]},
    ):
        response = await ask(vault, status=404, query=question, **filters)  # issue 42
        refused = await response.get_json()
        assert refused["code"] == "not_found"
        assert_nothing_of_the_owner(world, json.dumps(refused), sent=tuple(*filters.values()))
    streamed = await ask(vault, "/api/v2/chat/stream", query=question)
    events = parse_events(await streamed.get_data())
    assert events[-1][0] == "done"
    cited = {data["document_id"] for kind, data in events if kind == "citation"}
    assert cited == {own["document_id"]}
    assert_nothing_of_the_owner(world, json.dumps(events))


@pytest.mark.parametrize("stranger", STRANGERS)
async def test_writes_naming_a_resource_of_another_tenant_or_environment_are_404(world, stranger):
    vault = world.strangers[stranger]
    refused = [
        await vault.upload(world.project_id, b"A stranger's upload.", "s.txt"),
        await ask(vault, status=404, query="Go on.", conversation_id=world.conversation_id),
        await ask(
            vault, "/api/v2/chat/stream", 404, query="Go on.", conversation_id=world.conversation_id
        ),
        await start_fill(vault, make_docx_template(["{{ a }}"]), project_id=world.project_id),
        await start_fill(
            vault, make_docx_template(["{{ a }}"]), document_ids=json.dumps([world.document["id"]])
        ),
    ]
    for response in refused:
        body = await response.get_data()
        assert response.status_code == 404, body
        assert json.loads(body)["code"] == "not_found"
        assert_nothing_of_the_owner(world, body, sent=(world.project_id, world.document["id"]))
    # Nothing was added to the owner's conversation.
    conversation = await world.owner.get(f"/api/v2/conversations/{world.conversation_id}")
    assert len(conversation["messages"]) == 2


@pytest.mark.parametrize("stranger", STRANGERS)
async def test_routines_naming_a_resource_of_another_tenant_or_environment_are_404(world, stranger):
    """Issue 43: a routine's project, and the documents and templates its steps name, must be
    the caller's, when saved."""
    vault = world.strangers[stranger]
    own_project = world.own[stranger]["project_id"]
    theirs = [world.document["id"]]
    for body in (
        {"project_id": world.project_id, "steps": [{"type": "chat", "query": "?"}]},
        {"project_id": own_project, "steps": [{"type": "template_fill", "template_id": theirs[0]}]},
        {
            "project_id": own_project,
            "steps": [
                {"type": "workflow", "workflow_id": "wf_extract_key_terms",
                 "inputs": {"document_ids": theirs}},
            ],
        },
    ):  # fmt: skip
        response = await vault.client.post(
            "/api/v2/routines",
            json={"name": "r", "trigger": {"type": "manual"}, **body},
            headers=vault.headers,
        )
        refused = await response.get_data()
        assert response.status_code == 404, refused
        assert json.loads(refused)["code"] == "not_found"
        assert_nothing_of_the_owner(world, refused, sent=(world.project_id, world.document["id"]))
    listed = await everything(vault, "/api/v2/routines?limit=100")
    assert world.routine_id not in [item["id"] for item in listed]
