"""Imports on demand (issue 29): making the app, a worker's runtime or the CLI does not import
the libraries only some requests, jobs or settings use. Each of these took from a tenth of a
second to well over a second to import on every start; which modules load is checked here,
not how long they take (speed is measured in bench/, never in a timed test)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# What each library is used for, and so when it may be imported.
ON_DEMAND = {
    "numpy": "ranking and embedding (the first search or embedding)",
    "tokenizers": "the minilm embeddings provider",
    "onnxruntime": "the minilm embeddings provider (its int8 runtime)",
    "onnx": "building the minilm provider's int8 model (once, then cached)",
    "aiobotocore": "the S3 blob store",
    "botocore": "the S3 blob store",
    "boto3": "the S3 blob store",
    "mcp": "the first request to /mcp",
    "mcp_types": "the first request to /mcp",
    "starlette": "the first request to /mcp (the MCP SDK's, and the door's refusals)",
    "anyio": "the first request to /mcp (the MCP SDK), httpx",
    "httpx": "an upstream OpenID provider, /mcp's forwarding, the openai engines",
    "pypdf": "reading a PDF (ingestion jobs)",
    "openpyxl": "reading a workbook (ingestion jobs)",
    "charset_normalizer": "guessing a text upload's charset",
    "olefile": "telling an XLS from an Outlook message (an upload), reading either (a job)",
    "xlrd": "reading a legacy workbook (ingestion jobs)",
    "pptx": "reading slides (ingestion jobs)",
    "PIL": "reading an image or a scan (ingestion jobs, in the parsing child)",
    "pypdfium2": "rendering a scanned PDF page (ingestion jobs, in the parsing child)",
    "tesserocr": "OCR (ingestion jobs, in the parsing child)",
    "docx": "reading or filling a DOCX (ingestion and template-fill jobs)",
    "lxml": "reading or filling a DOCX (ingestion and template-fill jobs)",
    "joserfc.jwt": "the first OAuth token signed or verified (OAuth is off without keys)",
    "joserfc.jwk": "the first OAuth token signed or verified, or keys read or written",
    "strongroom.workflows.analysis_compare": "the first comparison run (its patterns)",
    "strongroom.workflows.analysis_terms": "the first key-terms run (its patterns)",
    "strongroom.workflows.analysis_summary": "the first summary run",
    "authlib": "OAuth's tokens (OAuth is off without signing keys)",
    "strongroom.oauth.tokens": "OAuth's tokens (OAuth is off without signing keys)",
    "strongroom.oauth.clients": "the first OAuth request (registration, authorization, tokens)",
    "strongroom.oauth.models": "the first OAuth request or token",
    # An area's work behind its routes: its first request (or, where jobs run, its job).
    "strongroom.chat.service": "the first chat request (the search, the answer's checks)",
    "strongroom.templates.service": "the first template-fill request",
    "strongroom.workflows.models": "the first workflow run started or read",
    "strongroom.workflows.runner": "the first workflow run started",
    "strongroom.outbox.models": "the first webhooks request",
    "strongroom.webhooks.endpoints": "the first webhooks request",
    "strongroom.outbox.dispatch": "delivering webhooks (a worker, the embedded default)",
    # What a setting switches on: the embedded default (SQLite, in-process stores) has none.
    "redis": "a Redis client (STRONGROOM_REDIS_URL): the stores behind the request path",
    "strongroom.redis_batch": "a Redis client (the rate limit's and idempotency's scripts)",
    "opentelemetry": "a Redis client (redis-py imports it), the first request to /mcp",
    "psycopg": "a PostgreSQL database (its engine's dialect, the reads on hot paths)",
    "psycopg_binary": "a PostgreSQL database",
    "psycopg_pool": "the PostgreSQL job queue (procrastinate's connections)",
    "procrastinate": "the PostgreSQL job queue (its runtime defers, `strongroom worker` runs)",
    "croniter": "the PostgreSQL job queue (procrastinate imports it)",
}

# Loaded by a runtime on PostgreSQL (the job queue, the driver) and by one with Redis.
POSTGRESQL = ["croniter", "procrastinate", "psycopg", "psycopg_binary", "psycopg_pool"]
REDIS = ["opentelemetry", "redis", "strongroom.redis_batch"]

RUNTIME = (
    "import tempfile\n"
    "from strongroom.runtime import Runtime\n"
    "from strongroom.settings import Settings\n"
    "with tempfile.TemporaryDirectory() as data:\n"
    "    Runtime.create(Settings(database_url={database!r}, redis_url={redis!r},"
    " data_dir=data, key_pepper='p' * 32, secret_key='s' * 32))"
)
SQLITE = "sqlite+aiosqlite:///:memory:"
POSTGRES = "postgresql+psycopg://x@127.0.0.1/x"


def _loaded_after(code: str) -> list[str]:
    program = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=120
    )
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    # A library is named by its package; a module of ours, or one part of a library, in full.
    return sorted(({name.split(".")[0] for name in loaded} | set(loaded)) & ON_DEMAND.keys())


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import strongroom.app", []),  # what `strongroom serve`'s workers import
        ("import strongroom.cli", []),  # every command
        # a worker's or the operator's without Redis: the PostgreSQL parts, nothing else
        (RUNTIME.format(database=POSTGRES, redis=None), POSTGRESQL),
    ],
    ids=["app", "cli", "postgresql-runtime"],
)
def test_starting_imports_no_library_that_only_some_work_uses(
    code: str, expected: list[str]
) -> None:
    assert _loaded_after(code) == expected


def test_the_embedded_default_imports_neither_redis_nor_postgresql_parts() -> None:
    """`strongroom dev`'s runtime: SQLite, in-process stores and jobs. (It turns OAuth on,
    with keys it generates, so OAuth's libraries load with it.)"""
    loaded = _loaded_after(RUNTIME.format(database=SQLITE, redis=None))
    assert "strongroom.oauth.tokens" in loaded  # what it loads is seen
    assert not set(loaded) & set(POSTGRESQL + REDIS)


@pytest.mark.parametrize(
    ("database", "expected"),
    [(SQLITE, REDIS), (POSTGRES, POSTGRESQL + REDIS)],
    ids=["sqlite", "postgresql"],
)
def test_a_runtime_with_redis_imports_its_client_and_scripts(
    database: str, expected: list[str]
) -> None:
    """As in production: imported when the runtime is made, not at a first request (where
    the import would stall the event loop), and not missing where they are configured."""
    loaded = _loaded_after(RUNTIME.format(database=database, redis="redis://127.0.0.1:9/0"))
    assert set(expected) <= set(loaded)


def test_the_s3_store_imports_its_client_when_configured() -> None:
    code = (
        "from strongroom.settings import Settings\n"
        "from strongroom.storage import create_blob_store\n"
        "create_blob_store(Settings(storage_url='s3://bucket/prefix',"
        " s3_endpoint_url='http://127.0.0.1:9', key_pepper='p' * 32, secret_key='s' * 32))"
    )
    assert "aiobotocore" in _loaded_after(code)


def _loads(code: str, module: str) -> bool:
    program = f"{code}\nimport sys\nprint({module!r} in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=120
    )
    return result.stdout.strip().splitlines()[-1] == "True"


def test_the_postgresql_dialect_loads_with_a_postgresql_engine_only() -> None:
    dialect = "sqlalchemy.dialects.postgresql"
    assert not _loads("import strongroom.app", dialect)
    assert not _loads(RUNTIME.format(database=SQLITE, redis=None), dialect)
    assert _loads(RUNTIME.format(database=POSTGRES, redis=None), dialect)


def test_the_cli_and_serves_master_process_import_no_tables_and_no_quart() -> None:
    """`strongroom --help` and the master process of `strongroom serve` (which only starts
    the workers; each worker imports the app itself) import click, the settings and
    Hypercorn's runner: a command imports what it needs when it runs."""
    program = (
        "import json, sys\nimport strongroom.cli, strongroom.server\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=120
    )
    loaded = set(json.loads(result.stdout.strip().splitlines()[-1]))
    heavy = {"sqlalchemy", "sqlmodel", "quart", "psycopg", "redis", "strongroom.tenants.models"}
    assert not heavy & loaded
