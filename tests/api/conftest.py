"""A probe app: the real app plus test-only capabilities whose handlers wait, count, echo
large bodies or crash, to drive the request path through states real handlers pass too fast.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator

import pytest
from pydantic import BaseModel
from quart import Quart

from strongroom.api import request_path
from strongroom.api.capability import Call, Capability, Routes
from strongroom.app import create_app
from strongroom.auth.principal import Principal
from strongroom.vault.models import Project


class Echo(BaseModel):
    data: str


class Executions(BaseModel):
    executions: int


class Probes:
    def __init__(self) -> None:
        self.executions: Counter[str] = Counter()
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.routes = Routes()
        self._declare()

    def _declare(self) -> None:
        def capability(name: str, **options) -> Capability:
            return Capability(
                name=f"test.{name}", method="POST", path=f"/api/v2/test/{name}",
                summary=name, tag="test", status=201, response=Executions, **options,
            )  # fmt: skip

        @self.routes.capability(capability("slow"))
        async def slow(call: Call) -> Executions:
            self.executions["slow"] += 1
            self.started.set()
            await self.release.wait()
            return Executions(executions=self.executions["slow"])

        @self.routes.capability(capability("slow_write"))
        async def slow_write(call: Call) -> Executions:
            """Waits, then writes: two attempts of one key can both reach their commit."""
            self.executions["slow_write"] += 1
            execution = self.executions["slow_write"]
            self.started.set()
            await self.release.wait()
            call.session.add(project_of(call.principal, f"slow write {execution}"))
            await call.session.flush()
            return Executions(executions=execution)

        @self.routes.capability(capability("echo", body=Echo))
        async def echo(call: Call) -> Executions:
            self.executions["echo"] += 1
            return Executions(executions=self.executions["echo"])

        @self.routes.capability(capability("crash"))
        async def crash(call: Call) -> Executions:
            """Writes, then dies: the write must not survive, nor be billed."""
            self.executions["crash"] += 1
            call.session.add(project_of(call.principal, "written then crashed"))
            await call.session.flush()
            raise RuntimeError("handler crashed mid-request")


def project_of(principal: Principal, name: str) -> Project:
    return Project(
        tenant_id=principal.tenant_id,
        environment=principal.environment.value,
        owner_id=principal.user_id,
        name=name,
        project_type="other",
    )


@pytest.fixture
def probes() -> Probes:
    return Probes()


@pytest.fixture
async def probe_app(settings, probes) -> AsyncIterator[Quart]:
    app = create_app(settings)
    request_path.install(app, probes.routes)
    async with app.test_app():
        yield app


@pytest.fixture
def probe_client(probe_app):
    return probe_app.test_client()
