"""Probes: /healthz (liveness) and /readyz (the database answers)."""

from __future__ import annotations

from strongroom.app import create_app
from tests.conftest import make_settings


async def test_healthz_is_ok(client):
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert await response.get_json() == {"status": "ok"}


async def test_readyz_is_ok_when_database_answers(client):
    response = await client.get("/readyz")
    assert response.status_code == 200


async def test_readyz_is_503_when_database_is_unreachable(tmp_path):
    settings = make_settings("postgresql://postgres@127.0.0.1:1/nowhere", tmp_path)
    app = create_app(settings)
    async with app.test_app():
        response = await app.test_client().get("/readyz")
    assert response.status_code == 503
    body = await response.get_json()
    assert body["code"] == "service_unavailable"
    assert response.headers["Retry-After"] == "5"


async def test_readyz_names_the_ocr_engine(client, settings):
    """Issue 51: /readyz says which engine reads scans, or that OCR is off."""
    details = (await (await client.get("/readyz")).get_json())["details"]
    assert details["ocr"].startswith("tesseract (tesserocr ")


async def test_readyz_says_when_ocr_is_off(tmp_path, sqlite_url):
    settings = make_settings(sqlite_url, tmp_path).model_copy(update={"ocr": "off"})
    app = create_app(settings)
    async with app.test_app():
        body = await (await app.test_client().get("/readyz")).get_json()
    assert body["details"]["ocr"] == "off"


async def test_readyz_shows_each_background_task_of_the_process(tmp_path, sqlite_url):
    """Issue 54: the embedded default runs every background task but the worker's job sweep,
    and /readyz shows each with its last round, failures and restarts."""
    app = create_app(make_settings(sqlite_url, tmp_path))
    async with app.test_app():
        body = await (await app.test_client().get("/readyz")).get_json()
    background = body["background"]
    assert set(background) == {
        "key_cache_invalidations",
        "webhook_delivery",
        "routine_fires",
        "idempotency_expiry",
        "blob_sweep",
        "tenant_erasure",
    }
    assert all(task["restarts"] == 0 and task["failures"] == 0 for task in background.values())
    assert background["routine_fires"]["started_at"] is not None
