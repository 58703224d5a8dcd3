"""Issue 18: requests that once cost a 500 or held a connection open without bound."""

from __future__ import annotations

import asyncio
import logging

import pytest
from urllib3 import encode_multipart_formdata

from strongroom.app import create_app
from tests.documents import make_docx_template

UPLOADS = ["/api/v2/vault/documents", "/api/v2/templates/fill"]


def form(boundary: str) -> tuple[bytes, str]:
    body, _ = encode_multipart_formdata(
        {"file": ("t.docx", make_docx_template(["{{ a }}"]))}, boundary=boundary
    )
    return body, f"multipart/form-data; boundary={boundary}"


@pytest.mark.parametrize("path", UPLOADS)
@pytest.mark.parametrize("length", [257, 1000])
async def test_a_multipart_boundary_longer_than_256_characters_is_400(
    client, credential, path, length
):
    body, content_type = form("b" * length)
    headers = {**credential.headers, "Content-Type": content_type}
    response = await client.post(path, data=body, headers=headers)
    assert response.status_code == 400, await response.get_data(as_text=True)
    problem = await response.get_json()
    assert problem["code"] == "bad_request"
    assert "boundary" in problem["detail"]


@pytest.fixture
async def impatient(settings):
    configured = settings.model_copy(
        update={"upload_idle_timeout_seconds": 0.5, "upload_timeout_seconds": 2.0}
    )
    app = create_app(configured)
    async with app.test_app():
        yield app


async def slow_upload(app, headers, pieces: list[bytes], pause: float) -> tuple[int, dict]:
    """Send the body's pieces `pause` seconds apart, never completing it unless the server
    answers first; the response's status and problem."""
    _, content_type = form("slowboundary")
    connection = app.test_client().request(
        UPLOADS[0], method="POST", headers={**headers, "Content-Type": content_type}
    )
    async with asyncio.timeout(20):
        async with connection:
            for piece in pieces:
                await connection.send(piece)
                await asyncio.sleep(pause)
        # Leaving the block waited for the app to answer: the body was never completed.
        response = await connection.as_response()
    return response.status_code, await response.get_json()


async def test_an_upload_that_stops_sending_is_408(impatient, credential):
    body, _ = form("slowboundary")
    status, problem = await slow_upload(impatient, credential.headers, [body[:100]], 0)
    assert status == 408
    assert problem["code"] == "request_timeout"
    assert "sent nothing for 0.5 seconds" in problem["detail"]


async def test_an_upload_that_trickles_is_408_at_its_deadline(impatient, credential):
    body, _ = form("slowboundary")
    trickle = [body[index : index + 10] for index in range(0, 200, 10)]  # 10 bytes / 0.3 s
    status, problem = await slow_upload(impatient, credential.headers, trickle, 0.3)
    assert status == 408
    assert "did not arrive within 2 seconds" in problem["detail"]


@pytest.mark.parametrize(
    ("uploaded", "offered"),
    [
        ("../../etc/cron.d/evil.txt", "evil.txt"),
        ("..\\..\\Windows\\evil.txt", "evil.txt"),
        ("notes/../../.bashrc", "bashrc"),
        ("..", "download"),
    ],
)
async def test_a_download_name_keeps_no_directory_components(client, credential, uploaded, offered):
    project = await client.post(
        "/api/v2/vault/projects",
        json={"name": "Harbour Tower", "project_type": "commercial"},
        headers=credential.headers,
    )
    body, content_type = encode_multipart_formdata(
        {"project_id": (await project.get_json())["id"], "file": (uploaded, b"plain text")}
    )
    headers = {**credential.headers, "Content-Type": content_type}
    response = await client.post(UPLOADS[0], data=body, headers=headers)
    assert response.status_code == 202, await response.get_json()
    document = await response.get_json()
    download = await client.get(
        f"/api/v2/vault/documents/{document['id']}/content", headers=credential.headers
    )
    assert download.status_code == 200
    disposition = download.headers["Content-Disposition"]
    assert f'filename="{offered}"' in disposition
    assert f"filename*=UTF-8''{offered}" in disposition
    assert ".." not in disposition and "%2F" not in disposition and "%5C" not in disposition


@pytest.mark.parametrize(
    ("sent", "logged"),
    [
        ("r" * 10_000, None),
        ("r" * 65, None),
        ("order-1234:retry.2", "order-1234:retry.2"),
        ("0b9c3c52-5d2e-4c3e-9f1a-6f4d2b8e7a10", "0b9c3c52-5d2e-4c3e-9f1a-6f4d2b8e7a10"),
        ("01JDZ3QK8X5N7R2M4T6V8W0Y1Z", "01JDZ3QK8X5N7R2M4T6V8W0Y1Z"),
        ("ak_live_" + "A" * 52, None),
        ("ak_test_" + "B2" * 26, None),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", None),
        ("kX9vQ2mZ7pL4wR8tY1nB5cF3hJ6dG0sA", None),  # 32 random letters and digits
        ("x-9vQ2mZ7pL4wR8tY1nB5c", None),  # 20 mixed-case random letters and digits
        ("x-QZ7KJ3MWB5TXR4NLP2DA", None),  # a slice of a key's body: base32, capitals and 2-7
        ("deploy-20261129-a1b2c3d4e5f6a7b8", "deploy-20261129-a1b2c3d4e5f6a7b8"),  # hex
        ("with space", None),
        ("line\u2028break", None),
    ],
    ids=[
        "10000-chars",
        "65-chars",
        "safe-token",
        "uuid",
        "ulid",
        "live-key",
        "test-key",
        "jwt",
        "high-entropy",
        "mixed-case-slice",
        "key-body-slice",
        "hex-run",
        "space",
        "unicode-line-separator",
    ],
)
async def test_a_clients_x_request_id_is_logged_only_if_short_safe_and_no_credential(
    client, caplog, sent, logged
):
    """Issue 28: an API key sent as X-Request-Id was written to the log."""
    with caplog.at_level(logging.INFO, logger="strongroom.api"):
        response = await client.get("/api/v2/me", headers={"X-Request-Id": sent})
    assert response.status_code == 401
    [record] = [r for r in caplog.records if r.getMessage() == "request"]
    assert record.client_request_id == logged
    assert record.request_id.startswith("req_")
