"""`strongroom dev`: the embedded default in one process.

Migrates the SQLite file under the data directory, seeds a tenant (on the `enterprise` tier),
a user and a test API key with every scope on first start, then serves on Hypercorn; once
the port takes connections it prints the key (once, as `STRONGROOM_API_KEY=...` on a line of
its own so scripts can read it) and the URL.
"""

from __future__ import annotations

import asyncio
import os
import signal

import uvloop
from hypercorn.asyncio import serve
from sqlmodel import select

from strongroom.app import create_app
from strongroom.auth.scopes import ALL_SCOPES
from strongroom.auth.service import create_key
from strongroom.billing.accounts import create_tenant
from strongroom.db.migrate import upgrade
from strongroom.logs import configure_logging
from strongroom.runtime import Runtime
from strongroom.server import answer_unread_requests_with_problems, hypercorn_config
from strongroom.settings import Settings
from strongroom.tenants.models import RateLimitTier, Tenant
from strongroom.tenants.partition import Environment
from strongroom.tenants.service import ensure_user

DEV_TENANT = "dev"
DEV_EMAIL = "dev@strongroom.local"
# Generous (1500 tokens/min, burst 3000, D18): exploring the API by hand, chat streams
# included, is never throttled. Its keys take the tenant's tier.
DEV_TIER = RateLimitTier.ENTERPRISE


async def seed(runtime: Runtime) -> str | None:
    """Create the dev tenant, user and key when the database has no tenant yet.

    Returns the raw key when it was created now, else None (it cannot be shown again).
    """
    async with runtime.sessions() as session:
        if (await session.exec(select(Tenant).limit(1))).first() is not None:
            return None
        tenant = await create_tenant(session, DEV_TENANT, tier=DEV_TIER)
        user = await ensure_user(session, tenant, DEV_EMAIL, name="Dev User")
        _, raw = await create_key(
            session,
            runtime.key_pepper,
            tenant=tenant,
            user=user,
            name="dev",
            environment=Environment.TEST,
            scopes=list(ALL_SCOPES),
        )
        await session.commit()
        return raw


def secure_data_files(settings: Settings) -> None:
    """The data directory 0700 and the default SQLite file (and its journal files) 0600 at
    each start (issue 18): they hold every tenant's documents and key digests. A missing
    file is created so before SQLite opens it, never existing with the umask's mode."""
    if not settings.is_embedded or settings.database_url is not None:
        return  # a database elsewhere: its owner sets its permissions
    directory = settings.data_dir
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)
    database = directory / "strongroom.db"
    os.close(os.open(database, os.O_CREAT | os.O_RDWR, 0o600))
    for path in (database, *directory.glob("strongroom.db-*")):  # -wal, -shm, -journal
        path.chmod(0o600)


async def prepare(settings: Settings) -> str | None:
    await asyncio.to_thread(secure_data_files, settings)
    runtime = Runtime.create(settings)
    try:
        await upgrade(runtime.engine)
        return await seed(runtime)
    finally:
        await runtime.close()


async def _serve(settings: Settings, host: str, port: int) -> None:
    raw_key = await prepare(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    answer_unread_requests_with_problems(settings.base_url)
    server = asyncio.create_task(
        serve(create_app(settings), hypercorn_config(host, port), shutdown_trigger=stop.wait)
    )
    # The key and the URL once the port takes connections (issue 52: they came about 11 s
    # before, while the application started, and a first request was refused); printed
    # too if the server stops first, so that a key seeded now is never lost.
    await listening(host, port, server)
    print_banner(settings, raw_key)
    await server


async def listening(host: str, port: int, server: asyncio.Task) -> bool:
    """Wait until a connection to `host:port` succeeds (True), or the server ends (False)."""
    address = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)  # noqa: S104
    while not server.done():
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(address, port), 1)
        except (OSError, TimeoutError):
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return True
    return False


def print_banner(settings: Settings, raw_key: str | None) -> None:
    if raw_key is not None:
        print(f"STRONGROOM_API_KEY={raw_key}", flush=True)
        print("# the dev API key above is shown once; keep it", flush=True)
    else:
        print("# dev data exists; create another key with `strongroom keys create`", flush=True)
    print("# OAuth sign-ins (the dev sign-in page, MCP clients) act in the live environment;"
          " the test key's data is not visible there (D13, docs/oauth.md)", flush=True)  # fmt: skip
    print(f"# Strongroom embedded default on {settings.base_url}", flush=True)


def run_embedded(settings: Settings, *, host: str, port: int) -> None:
    if "base_url" not in settings.model_fields_set:
        settings = settings.model_copy(update={"base_url": f"http://{host}:{port}"})
    if "dev_sign_in" not in settings.model_fields_set:  # the embedded default signs in by e-mail
        settings = settings.model_copy(update={"dev_sign_in": True})
    if "webhooks_allow_private_urls" not in settings.model_fields_set:  # a receiver beside it
        settings = settings.model_copy(update={"webhooks_allow_private_urls": True})
    configure_logging(settings.log_level)
    uvloop.run(_serve(settings, host, port))
