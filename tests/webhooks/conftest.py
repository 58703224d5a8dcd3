"""Webhook tests run on both backends, each on a database of its own: its deliveries are
made by its own dispatcher only (on PostgreSQL a real `strongroom worker` started here, on
SQLite the embedded default's app), with the short retry waits and timeouts of a test, and
private addresses allowed (the receivers are on 127.0.0.1)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from quart import Quart

from strongroom.app import create_app
from strongroom.runtime import Runtime
from strongroom.tenants.models import RateLimitTier
from tests.conftest import (
    REDIS_URL,
    Credential,
    issue_credential,
    make_settings,
    migrated,
    own_postgres_database,
)
from tests.processes import WorkerProcess
from tests.vault.conftest import Vault

WEBHOOK_SETTINGS: dict[str, Any] = {
    "webhooks_allow_private_urls": True,
    "webhooks_timeout_seconds": 2.0,
    "webhooks_first_retry_seconds": 0.3,
    "webhooks_max_attempts": 4,
    "webhooks_poll_seconds": 0.2,
}


def environment_of_webhooks(overrides: dict[str, Any]) -> dict[str, str]:
    def text(value: Any) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)

    return {f"STRONGROOM_{name.upper()}": text(value) for name, value in overrides.items()}


@dataclass
class Hooks:
    """One deployment under test: its app, its worker (PostgreSQL) and its settings."""

    app: Quart
    worker: WorkerProcess | None

    @property
    def runtime(self) -> Runtime:
        return self.app.extensions["strongroom"]

    @property
    def settings(self):
        return self.runtime.settings

    async def credential(self, **options) -> Credential:
        """A fresh tenant's key, on a tier that lets a test poll jobs freely."""
        return await issue_credential(
            self.runtime, **({"tier": RateLimitTier.ENTERPRISE} | options)
        )

    async def vault(self, **options) -> Vault:
        return Vault(self.app.test_client(), (await self.credential(**options)).headers)


@pytest.fixture(scope="session", params=["postgresql", "sqlite"])
async def hooks(request, tmp_path_factory, redis_prefix) -> AsyncIterator[Hooks]:
    async with deployed(request.param, tmp_path_factory, redis_prefix, WEBHOOK_SETTINGS) as hooks:
        yield hooks


@contextlib.asynccontextmanager
async def deployed(
    backend: str, tmp_path_factory, redis_prefix: str, overrides: dict[str, Any]
) -> AsyncIterator[Hooks]:
    """A deployment of `backend` on a database of its own, with `overrides` set in the app
    and (PostgreSQL) in its worker."""
    data_dir = tmp_path_factory.mktemp(f"webhooks-{backend}")
    if backend == "sqlite":
        url = f"sqlite+aiosqlite:///{data_dir / 'strongroom.db'}"
        settings = await migrated(make_settings(url, data_dir, **overrides))
        app = create_app(settings)
        async with app.test_app():
            yield Hooks(app, None)
        return
    async with own_postgres_database() as url:
        settings = await migrated(
            make_settings(
                url, data_dir, redis_url=REDIS_URL, redis_prefix=redis_prefix, **overrides
            )
        )
        app = create_app(settings)
        extra = environment_of_webhooks(overrides)
        async with app.test_app(), WorkerProcess(settings, **extra) as worker:
            yield Hooks(app, worker)


async def create_endpoint(vault: Vault, url: str, events: list[str] | None = None, **extra):
    """POST an endpoint; the response."""
    body = {"url": url, "events": events or ALL_EVENTS, **extra}
    return await vault.client.post("/api/v2/webhooks/endpoints", json=body, headers=vault.headers)


ALL_EVENTS = [
    "document.ready",
    "document.failed",
    "template_fill.succeeded",
    "template_fill.failed",
    "workflow_run.succeeded",
    "workflow_run.failed",
]
