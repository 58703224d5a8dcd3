"""Contract fuzzing: schemathesis against the served OpenAPI document.

The app under test is a fresh `create_app(settings)` on the session's database (both
backends), called in-process through schemathesis's ASGI transport, which runs the app and
its lifespan (the runtime) on an event loop thread of its own.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

import pytest
import schemathesis
from hypothesis import strategies as st
from schemathesis import BaseSchema
from schemathesis.config import PositiveDataAcceptanceConfig
from schemathesis.python import asgi

from strongroom.app import create_app
from strongroom.corpus.models import DocumentType
from strongroom.jobs.runner import unfinished_jobs
from strongroom.runtime import Runtime
from strongroom.settings import Settings
from strongroom.tenants.models import RateLimitTier
from tests.conftest import Credential
from tests.documents import make_docx_template, make_pdf, make_xlsx
from tests.vault.conftest import worker  # noqa: F401 (fixture)

OPENAPI_PATH = "/api/v2/openapi.json"
# Examples per operation and generation mode with a key (and per stateful run); raise it for
# a longer local run. Without a key every answer is the same 401: half as many suffice.
EXAMPLES = int(os.environ.get("STRONGROOM_FUZZ_EXAMPLES", "15"))
EXAMPLES_WITHOUT_KEY = max(EXAMPLES // 2, 5)
JOBS_END_SECONDS = 60

# Files of the media types an upload documents (`encoding.contentType` of its `file` part), so
# that generated uploads are documents often enough to be ingested: real ones of each kind,
# any text (some of it not UTF-8 text once encoded with NUL bytes), or random bytes.
_TEXT = st.text(max_size=300).map(str.encode)
_FILES = {
    DocumentType.PDF: st.sampled_from(
        [make_pdf(["Liquidated damages apply."]), make_pdf(["One", "Two pages"])]
    ),
    DocumentType.DOCX: st.just(make_docx_template(["{{ party }} shall pay {{ amount }}."])),
    DocumentType.XLSX: st.just(make_xlsx({"Costs": [["item", "cost"], ["steel", 12]]})),
    DocumentType.TEXT: _TEXT | st.binary(max_size=300),
    DocumentType.MARKDOWN: _TEXT,
    DocumentType.HTML: _TEXT.map(lambda text: b"<html><body>" + text + b"</body></html>"),
    DocumentType.CSV: _TEXT,
}
for _type, _strategy in _FILES.items():
    schemathesis.openapi.media_type(_type.content_type.split(";")[0], _strategy)


@pytest.fixture(scope="module")
async def fuzz_schema(
    settings: Settings,
    runtime: Runtime,
    worker,  # noqa: F811 (the fixture)
) -> AsyncIterator[BaseSchema]:
    """The served document, loaded from (and bound to) an app of its own. The jobs its calls
    queue (ingestion, template fills, workflow runs) run as the vault tests' do: in the app on
    SQLite, in the `worker` process on PostgreSQL."""
    app = create_app(settings)
    schema = schemathesis.openapi.from_asgi(OPENAPI_PATH, app)
    # The credential is each test's choice (a key, or none), never generated or negated.
    # Stateful runs chain valid calls; invalid data is the stateless tests' part.
    schema.config.generation.update(
        with_security_parameters=False, modes=[schemathesis.GenerationMode.POSITIVE]
    )
    # Valid data may still be refused for what the schema cannot say (a cursor or a file that
    # is not one, an id that is not the caller's, a whitespace-only query); never as a body
    # of the wrong type or size (413, 415) or a server error.
    schema.config.checks.positive_data_acceptance = PositiveDataAcceptanceConfig.from_dict(
        {"expected-statuses": ["2xx", "400", "401", "403", "404", "409", "422", "429"]}
    )
    yield schema
    # Let the jobs end: an app stopped mid-job leaves it to the next embedded start, and a
    # backlog in the worker would hold up the next module's jobs.
    for _ in range(JOBS_END_SECONDS * 5):
        if not await unfinished_jobs(runtime):
            break
        await asyncio.sleep(0.2)
    asgi.shutdown_lifespans()  # closes the app's runtime


@pytest.fixture
async def fuzz_credential(make_credential) -> Credential:
    """A fresh tenant's test key with every scope; enterprise, so that the rate limit is
    rarely what answers. One per test: each operation gets a full bucket."""
    return await make_credential(tier=RateLimitTier.ENTERPRISE)


@pytest.fixture
async def fuzz_project(client, fuzz_credential: Credential) -> str:
    """A project of the credential's tenant, for generated requests to refer to."""
    response = await client.post(
        "/api/v2/vault/projects",
        json={"name": "fuzzed", "project_type": "other"},
        headers=fuzz_credential.headers,
    )
    assert response.status_code == 201
    return (await response.get_json())["id"]


@pytest.fixture
async def fuzz_credentials(make_credential) -> list[Credential]:
    """Keys for the stateful run, one per scenario (reused in turn past the pool)."""
    return [await make_credential(tier=RateLimitTier.ENTERPRISE) for _ in range(EXAMPLES + 10)]
