"""Documents (D42) through the API, on both backends: upload, type detection from content,
ingestion to `ready` or `failed`, list, get, content, and every refusal the issue lists."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import pytest
from sqlmodel import func, select
from urllib3 import encode_multipart_formdata

from strongroom.app import create_app
from strongroom.auth.keys import generate_key
from strongroom.corpus.models import Document, DocumentChunk
from strongroom.tenants.partition import Environment
from tests.documents import (
    make_docx,
    make_encrypted_pdf,
    make_pdf,
    make_xlsx,
    make_zip_bomb_docx,
)
from tests.unit.ingest.hostile import docx_of_empty_paragraphs, pdf_sharing_one_stream
from tests.vault.conftest import Vault, unique_word


def stored_files(settings) -> set[Path]:
    """Every file in the local blob store, spool directory included."""
    return {path for path in Path(settings.blob_location).rglob("*") if path.is_file()}


async def test_text_upload_is_accepted_with_its_ingestion_job_and_becomes_ready(vault):
    project_id = await vault.create_project()
    word = unique_word()
    content = f"The cladding contract names {word} as the facade supplier.\n".encode()
    response = await vault.upload(project_id, content, "notes.txt")
    assert response.status_code == 202, await response.get_json()
    document = await response.get_json()
    assert document["status"] == "processing"
    assert document["document_type"] == "text"
    assert document["content_type"].startswith("text/plain")
    assert document["size_bytes"] == len(content)
    assert document["sha256"] == hashlib.sha256(content).hexdigest()
    assert document["name"] == "notes.txt"
    assert document["project_id"] == project_id
    job = await vault.wait_for_job(document["ingestion_job_id"])
    assert job["status"] == "succeeded", job["error"]
    assert job["document_id"] == document["id"]
    assert job["progress"] == 1.0
    assert job["started_at"] is not None and job["finished_at"] is not None
    fetched = await vault.get(f"/api/v2/vault/documents/{document['id']}")
    assert fetched["status"] == "ready"
    assert fetched["page_count"] == 1
    assert fetched["error"] is None


def _formats(word: str) -> dict[str, tuple[bytes, str, int, int]]:
    """type -> (content, file name, pages, page the word is on)."""
    return {
        "pdf": (make_pdf(["General conditions.", f"Retention held by {word}."]), "a.pdf", 2, 2),
        "docx": (
            make_docx(["Scope of works.", f"Programme agreed with {word}."], page_break_after=[0]),
            "a.docx", 2, 2,
        ),
        "xlsx": (
            make_xlsx({"Summary": [["Total", 10]], "Rates": [["Steel", word, 42]]}),
            "a.xlsx", 2, 2,
        ),
        "markdown": (f"# Minutes\n\nAction on {word}.\n".encode(), "m.md", 1, 1),
        "html": (
            f"<!doctype html><html><body><p>Site visit by {word}</p>"
            "<script>var hidden = 1;</script></body></html>".encode(),
            "visit.html", 1, 1,
        ),
        "csv": (f"item,supplier\nrebar,{word}\n".encode(), "items.csv", 1, 1),
        "text": (f"Page one.\fPage two names {word}.".encode(), "t.txt", 2, 2),
    }  # fmt: skip


@pytest.mark.parametrize(
    "document_type", ["pdf", "docx", "xlsx", "markdown", "html", "csv", "text"]
)
async def test_each_supported_type_is_detected_read_and_searchable_on_its_page(
    vault, document_type
):
    word = unique_word()
    content, filename, pages, page = _formats(word)[document_type]
    project_id = await vault.create_project()
    document = await vault.ingested(content, filename, project_id)
    assert document["document_type"] == document_type
    assert document["status"] == "ready", document["error"]
    assert document["page_count"] == pages
    hits = (await vault.search(query=word))["data"]
    assert [(hit["document_id"], hit["page_number"]) for hit in hits] == [(document["id"], page)]
    assert word in hits[0]["content"]


@pytest.mark.parametrize(
    ("encoding", "charset"), [("cp1252", "windows-1252"), ("utf-16", "utf-16")]
)
async def test_text_in_another_charset_is_read_in_it_and_served_with_it(vault, encoding, charset):
    """An Excel CSV export in Windows-1252, a UTF-16 text with its BOM: read in their
    charset (search finds the accented words), downloaded as uploaded, charset declared."""
    word = unique_word()
    text = (
        "Poste;Montant;Remarque\n"
        f"Façade nord;1 200,50 €;Réunion à Besançon avec {word}\n"
        "Clôture du chantier;300;« coût estimé »\n"
    ) * 3
    content = text.encode(encoding)
    project_id = await vault.create_project()
    document = await vault.ingested(content, "costs.csv", project_id)
    assert document["status"] == "ready", document["error"]
    assert document["content_type"] == f"text/csv; charset={charset}"
    hits = (await vault.search(query=f"{word} Besançon"))["data"]
    assert hits and hits[0]["document_id"] == document["id"]
    assert "Réunion à Besançon" in hits[0]["content"]
    download = await vault.client.get(
        f"/api/v2/vault/documents/{document['id']}/content", headers=vault.headers
    )
    assert download.headers["Content-Type"] == f"text/csv; charset={charset}"
    assert await download.get_data() == content


async def test_the_type_comes_from_content_not_the_name(vault):
    project_id = await vault.create_project()
    pdf_named_txt = await vault.upload(project_id, make_pdf(["A drawing register."]), "x.txt")
    text_named_pdf = await vault.upload(project_id, b"Plain minutes of meeting.", "x.pdf")
    assert (await pdf_named_txt.get_json())["document_type"] == "pdf"
    assert (await pdf_named_txt.get_json())["name"] == "x.txt"
    assert (await text_named_pdf.get_json())["document_type"] == "text"


async def test_an_empty_file_is_422_and_nothing_is_stored(vault, settings):
    project_id = await vault.create_project()
    before = stored_files(settings)
    response = await vault.upload(project_id, b"", "empty.pdf")
    assert response.status_code == 422
    body = await response.get_json()
    assert body["code"] == "validation_error"
    assert body["errors"] == [{"field": "file", "message": "the file is empty"}]
    assert stored_files(settings) - before == set()


# D12: a key in a form field (its value or its name) or in the file's name would be stored
# as data; it is refused as in a JSON body, and the spooled file is removed (issue 19).
@pytest.mark.parametrize("place", ["field value", "field name", "file name"])
async def test_a_key_in_a_form_field_is_400_credentials_in_request(vault, settings, place):
    project_id = await vault.create_project()
    key = generate_key(Environment.LIVE)
    fields, filename = {"name": "notes"}, "notes.txt"
    if place == "field value":
        fields = {"name": key}
    elif place == "field name":
        fields = {key: "notes"}
    else:
        filename = f"{key}.txt"
    before = stored_files(settings)
    response = await vault.upload(project_id, b"plain words", filename, **fields)
    assert response.status_code == 400
    body = await response.get_json()
    assert body["code"] == "credentials_in_request"
    assert key not in str(body)
    assert stored_files(settings) - before == set()


async def test_a_binary_file_of_no_supported_type_is_400_unsupported_file_type(vault, settings):
    project_id = await vault.create_project()
    before = stored_files(settings)
    response = await vault.upload(project_id, b"GIF89a" + bytes(range(256)) * 8, "a.pdf")
    assert response.status_code == 400
    assert (await response.get_json())["code"] == "unsupported_file_type"
    assert stored_files(settings) - before == set()


async def test_a_file_over_the_limit_is_413_and_leaves_nothing_in_storage(
    settings, make_credential, worker
):
    app = create_app(settings.model_copy(update={"upload_max_bytes": 4096}))
    async with app.test_app():
        credential = await make_credential()
        vault = Vault(app.test_client(), credential.headers)
        project_id = await vault.create_project()
        before = stored_files(settings)
        response = await vault.upload(project_id, b"word " * 2000, "big.txt")
        assert response.status_code == 413
        body = await response.get_json()
        assert body["code"] == "file_too_large"
        assert body["max_bytes"] == 4096
        assert stored_files(settings) - before == set()
        under = await vault.upload(project_id, b"word " * 800, "small.txt")
        assert under.status_code == 202


@pytest.mark.parametrize(
    ("content", "filename", "detail"),
    [
        (b"%PDF-1.7\n" + b"\x00garbage" * 200, "corrupt.pdf", "could not be read as pdf"),
        (make_encrypted_pdf(["secret"], user_password="pw"), "locked.pdf", "encrypted"),
        (make_zip_bomb_docx(600 * 1024 * 1024), "bomb.docx", "expands"),
    ],
    ids=["corrupt-pdf", "encrypted-pdf", "zip-bomb-docx"],
)
async def test_an_unreadable_document_fails_with_a_problem_and_the_worker_carries_on(
    vault, content, filename, detail
):
    project_id = await vault.create_project()
    document = await vault.ingested(content, filename, project_id)
    assert document["status"] == "failed"
    assert document["error"]["code"] == "unreadable_document"
    assert detail in document["error"]["detail"]
    job = await vault.get(f"/api/v2/vault/ingestion-jobs/{document['ingestion_job_id']}")
    assert job["status"] == "failed"
    assert job["error"] == document["error"]
    after = await vault.ingested(b"The worker is still here.", "next.txt", project_id)
    assert after["status"] == "ready"


@pytest.mark.parametrize(
    ("content", "filename", "detail"),
    [
        (pdf_sharing_one_stream(100, 1024 * 1024), "shared.pdf", "on page 1"),
        (docx_of_empty_paragraphs(100 * 1024 * 1024), "paragraphs.docx", "XML tags"),
    ],
    ids=["pdf-pages-sharing-a-1-mib-stream", "docx-of-100-mib-of-empty-paragraphs"],
)
async def test_a_document_past_a_bound_fails_document_too_large_and_stores_nothing(
    vault, runtime, content, filename, detail
):
    """Issue 18: a small file that would give too much text, too many passages or too large
    a tree fails its job with `document_too_large`; no passage of it is stored."""
    project_id = await vault.create_project()
    document = await vault.ingested(content, filename, project_id)
    assert document["status"] == "failed"
    assert document["error"]["code"] == "document_too_large"
    assert document["error"]["status"] == 422
    assert detail in document["error"]["detail"]
    job = await vault.get(f"/api/v2/vault/ingestion-jobs/{document['ingestion_job_id']}")
    assert job["status"] == "failed"
    assert job["error"] == document["error"]
    async with runtime.sessions() as session:
        statement = select(func.count()).where(
            DocumentChunk.document_id == uuid.UUID(document["id"])
        )
        assert (await session.exec(statement)).one() == 0


async def test_an_owner_password_alone_does_not_stop_ingestion(vault):
    project_id = await vault.create_project()
    word = unique_word()
    document = await vault.ingested(make_encrypted_pdf([f"Owner only {word}"]), "o.pdf", project_id)
    assert document["status"] == "ready", document["error"]
    assert (await vault.search(query=word))["data"][0]["document_id"] == document["id"]


async def test_a_project_of_another_tenant_or_environment_is_404(owner_and_strangers):
    owner, strangers = owner_and_strangers
    project_id = await owner.create_project()
    for stranger in strangers:
        response = await stranger.upload(project_id, b"notes", "n.txt")
        assert response.status_code == 404
        assert (await response.get_json())["code"] == "not_found"


@pytest.mark.parametrize(
    ("project_id", "with_file", "field"),
    [(None, True, "project_id"), ("nope", True, "project_id"), ("", False, "file")],
    ids=["no-project", "bad-project-id", "no-file"],
)
async def test_an_incomplete_form_is_422_naming_the_field(vault, project_id, with_file, field):
    if with_file:
        response = await vault.upload(project_id, b"notes", "n.txt")
    else:
        body, content_type = encode_multipart_formdata({"project_id": project_id or "x"})
        response = await vault.client.post(
            "/api/v2/vault/documents",
            data=body,
            headers={**vault.headers, "Content-Type": content_type},
        )
    assert response.status_code == 422
    body = await response.get_json()
    assert body["code"] == "validation_error"
    assert body["errors"][0]["field"] == field


async def test_a_json_body_is_415(vault):
    response = await vault.client.post(
        "/api/v2/vault/documents", json={"file": "x"}, headers=vault.headers
    )
    assert response.status_code == 415
    assert (await response.get_json())["code"] == "unsupported_media_type"


async def test_uploads_ignore_idempotency_keys_spec_4_1_rule_9(vault):
    project_id = await vault.create_project()
    vault.headers = {**vault.headers, "Idempotency-Key": "upload-1"}
    first = await vault.upload(project_id, b"same bytes", "a.txt")
    second = await vault.upload(project_id, b"same bytes", "a.txt")
    assert first.status_code == second.status_code == 202
    assert "Idempotent-Replayed" not in second.headers
    assert (await first.get_json())["id"] != (await second.get_json())["id"]


async def test_an_upload_costs_10_rate_limit_tokens_d19(vault):
    project_id = await vault.create_project()
    response = await vault.upload(project_id, b"costed", "c.txt")
    assert response.headers["X-RateLimit-Cost"] == "10"


async def test_documents_list_newest_first_filtered_by_project_with_bound_cursors(vault):
    first_project, second_project = await vault.create_project(), await vault.create_project()
    ids = []
    for index in range(3):
        response = await vault.upload(first_project, f"doc {index}".encode(), f"{index}.txt")
        ids.append((await response.get_json())["id"])
    other = await vault.upload(second_project, b"elsewhere", "e.txt")
    page = await vault.get(f"/api/v2/vault/documents?project_id={first_project}&limit=2")
    assert [item["id"] for item in page["data"]] == ids[::-1][:2]
    assert page["has_more"] is True
    rest = await vault.get(
        f"/api/v2/vault/documents?project_id={first_project}&limit=2&cursor={page['next_cursor']}"
    )
    assert [item["id"] for item in rest["data"]] == ids[:1]
    assert rest["has_more"] is False and rest["next_cursor"] is None
    everything = await vault.get("/api/v2/vault/documents?limit=100")
    assert {item["id"] for item in everything["data"]} == {*ids, (await other.get_json())["id"]}
    crossed = await vault.client.get(
        f"/api/v2/vault/documents?project_id={second_project}&cursor={page['next_cursor']}",
        headers=vault.headers,
    )
    assert crossed.status_code == 422
    assert (await crossed.get_json())["code"] == "invalid_cursor"


async def test_content_is_the_original_bytes_with_type_and_file_name(vault):
    project_id = await vault.create_project()
    content = make_pdf(["Drawing register, revision C."])
    response = await vault.upload(
        project_id, content, "Register rev C \u2013 \u00abfinal\u00bb.pdf"
    )
    document = await response.get_json()
    download = await vault.client.get(
        f"/api/v2/vault/documents/{document['id']}/content", headers=vault.headers
    )
    assert download.status_code == 200
    assert await download.get_data() == content
    assert download.headers["Content-Type"] == "application/pdf"
    assert download.headers["Content-Length"] == str(len(content))
    disposition = download.headers["Content-Disposition"]
    assert disposition.startswith('attachment; filename="Register rev C _ _final_.pdf"')
    assert "filename*=UTF-8''Register%20rev%20C%20%E2%80%93%20%C2%ABfinal%C2%BB.pdf" in disposition
    assert download.headers["X-Content-Type-Options"] == "nosniff"


async def test_documents_and_jobs_of_another_tenant_or_environment_are_404(owner_and_strangers):
    owner, strangers = owner_and_strangers
    project_id = await owner.create_project()
    document = await (await owner.upload(project_id, b"private", "p.txt")).get_json()
    for stranger in strangers:
        for path in (
            f"/api/v2/vault/documents/{document['id']}",
            f"/api/v2/vault/documents/{document['id']}/content",
            f"/api/v2/vault/ingestion-jobs/{document['ingestion_job_id']}",
        ):
            body = await stranger.get(path, status=404)
            assert body["code"] == "not_found"
        assert (await stranger.get("/api/v2/vault/documents"))["data"] == []
        await stranger.get(f"/api/v2/vault/documents?project_id={project_id}", status=404)


async def test_a_ready_document_counts_its_passages_for_search(vault, runtime):
    """Search's BM25 corpus size is the sum of its documents' `passage_count` (issue 15:
    counting passages on every query cost a third of a search): ingestion stores it with
    the passages."""
    project_id = await vault.create_project()
    paragraphs = "\n\n".join(
        f"Clause {n}. The {unique_word()} supplier shall deliver the facade panels on time." * 12
        for n in range(20)
    )
    document = await vault.ingested(paragraphs.encode(), "long.txt", project_id)
    assert document["status"] == "ready"
    async with runtime.sessions() as session:
        stored = (
            await session.exec(
                select(func.count()).where(DocumentChunk.document_id == uuid.UUID(document["id"]))
            )
        ).one()
        row = await session.get(Document, uuid.UUID(document["id"]))
    assert stored > 1
    assert row.passage_count == stored
