"""The `strongroom` command: serve, dev, migrate, and the admin commands for tenants and keys."""

from __future__ import annotations

import asyncio
import atexit
import errno
import gc
import json
import os
import re
import secrets
import socket
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click

from strongroom.auth.scopes import parse_scopes
from strongroom.settings import MissingSecretError, Settings
from strongroom.tenants.partition import Environment
from strongroom.tenants.tiers import INITIAL_CREDITS, RateLimitTier

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker
    from sqlmodel.ext.asyncio.session import AsyncSession

T = TypeVar("T")
TIERS = click.Choice([tier.value for tier in RateLimitTier])


def run_with_runtime(work: Callable[[Any], Awaitable[T]]) -> T:
    """Run `work(runtime)` in a fresh event loop; admin errors become clean CLI errors."""
    from strongroom.runtime import Runtime

    async def main() -> T:
        runtime = Runtime.create(Settings())
        try:
            return await work(runtime)
        finally:
            await runtime.close()

    return _run(main)


@dataclass(frozen=True)
class Database:
    """What the commands that only read and write rows use of a process."""

    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    key_pepper: bytes = field(repr=False)


def run_with_database(work: Callable[[Database], Awaitable[T]]) -> T:
    """Run `work(database)` in a fresh event loop, as run_with_runtime does, with the database
    alone: it builds (and imports) none of a runtime's stores, Redis, queue or answer engine,
    which `strongroom keys create` spent most of its start on (issue 29)."""
    from strongroom.db.engine import create_engine, session_factory

    async def main() -> T:
        settings = Settings()
        key_pepper = settings.secret("key_pepper")  # both, before anything opens, as a
        settings.secret("secret_key")  # runtime checks them
        engine = create_engine(settings)
        try:
            return await work(Database(engine, session_factory(engine), key_pepper))
        finally:
            await engine.dispose()

    return _run(main)


def _run(main: Callable[[], Awaitable[T]]) -> T:
    """`main()` in a fresh event loop; admin errors become clean CLI errors."""
    from strongroom.tenants.service import NotFoundError

    try:
        return asyncio.run(main())
    except (MissingSecretError, NotFoundError) as error:
        raise click.ClickException(str(error)) from error


def _require_secrets(settings: Settings) -> None:
    """Fail with a clean message when a shared database lacks the secrets."""
    try:
        for name in ("key_pepper", "secret_key"):
            settings.secret(name)
    except MissingSecretError as error:
        raise click.ClickException(str(error)) from error


@click.group()
@click.version_option(package_name="strongroom")
def main() -> None:
    """Strongroom: a self-hosted multi-tenant API platform."""
    from strongroom.settings.unknown import warn_unknown_names

    # Here, before any command builds its settings: a mistyped STRONGROOM_* name is named at
    # the start of serve, worker, dev, operator and every admin command (issue 54).
    warn_unknown_names(os.environ)
    # At exit, the interpreter clears every module, and the cyclic collector walked all they
    # made again and again as it did: 0.4 s of a one-second `keys create` (issue 29). Frozen
    # out of its way, they are freed as modules are cleared, without those walks.
    atexit.unregister(gc.freeze)  # once, however often main runs in one process (tests)
    atexit.register(gc.freeze)


@main.command()
@click.option("--host", default="0.0.0.0", show_default=True)  # noqa: S104 (a server binds all)
@click.option("--port", default=8080, show_default=True, type=int)
@click.option("--workers", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--metrics-port", default=9090, show_default=True, type=click.IntRange(min=0),
              help="Prometheus /metrics on this port (0: off).")  # fmt: skip
def serve(host: str, port: int, workers: int, metrics_port: int) -> None:
    """Serve the API with Hypercorn (uvloop), WORKERS processes."""
    from strongroom.server import serve_workers

    settings = Settings()
    _require_secrets(settings)  # here, once, rather than in every worker
    _require_free_port(host, port, hint=f"--port {port + 1}")
    if metrics_port:
        _require_free_port(host, metrics_port, hint=f"--metrics-port {metrics_port + 1}")
    with _port_taken_is_an_error(host, port, hint=f"--port {port + 1}"):
        serve_workers(host=host, port=port, workers=workers, metrics_port=metrics_port or None)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8080, show_default=True, type=int)
def dev(host: str, port: int) -> None:
    """The embedded default: SQLite, in-process stores, a seeded dev key printed once."""
    hint = f"PORT={port + 1} make run (or strongroom dev --port {port + 1})"
    _require_free_port(host, port, hint=hint)  # before anything is printed or migrated
    from strongroom.embedded import run_embedded

    with _port_taken_is_an_error(host, port, hint=hint):
        run_embedded(Settings(), host=host, port=port)


def _require_free_port(host: str, port: int, *, hint: str) -> None:
    """Say in one line that the port is taken, and how to pick another, rather than let
    Hypercorn fail with a traceback once the server is starting (issue 19). Binds as
    Hypercorn does (SO_REUSEADDR), so a port only in TIME_WAIT counts as free."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise click.ClickException(f"cannot listen on {host}: {error.strerror}") from error
    family, kind, protocol, _, address = addresses[0]
    with socket.socket(family, kind, protocol) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with _port_taken_is_an_error(host, port, hint=hint):
            probe.bind(address)


@contextmanager
def _port_taken_is_an_error(host: str, port: int, *, hint: str) -> Iterator[None]:
    """EADDRINUSE as one line naming the port and how to pick another (also if the port is
    taken between the check and the server's own bind)."""
    try:
        yield
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        raise click.ClickException(
            f"{host}:{port} is already in use (another Strongroom running?); pick another "
            f"port: {hint}"
        ) from error


@main.command()
@click.option("--namespace", "namespaces", multiple=True, help="Watch these namespaces only.")
@click.option("--peering", default=None, help="kopf peering name: of several replicas one is "
              "active, the others stand by (docs/operator.md); default: standalone, run one "
              "replica.")  # fmt: skip
@click.option("--priority", type=int, default=None, help="With --peering: this replica's "
              "priority (the highest is active); default: a random one at startup.")  # fmt: skip
def operator(namespaces: tuple[str, ...], peering: str | None, priority: int | None) -> None:
    """Run the kopf operator for Tenant, ApiKey and OAuthClient resources."""
    import kopf

    import strongroom.operator.handlers  # noqa: F401 (registers the handlers)
    from strongroom.logs import configure_logging

    configure_logging(Settings().log_level)
    if peering is not None:  # the identity kopf records, known to the startup handler too
        os.environ.setdefault("POD_ID", f"{socket.gethostname()}/{os.getpid()}/"
                                        f"{secrets.token_hex(3)}")  # fmt: skip
    kopf.run(
        clusterwide=not namespaces,
        namespaces=list(namespaces),
        standalone=peering is None,
        peering_name=peering,
        priority=priority,
        # where to peer (handlers.start): the namespaces named exactly, not kopf's patterns
        memo=kopf.Memo(namespaces=[name for name in namespaces
                                   if re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name)]),
    )  # fmt: skip


@main.command()
def worker() -> None:
    """Run background jobs (document ingestion) from the PostgreSQL queue."""
    # One process: its metrics live in memory. A PROMETHEUS_MULTIPROC_DIR inherited from
    # `strongroom serve`'s environment must go before prometheus-client is first imported.
    for name in ("PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir"):
        os.environ.pop(name, None)
    from strongroom.logs import configure_logging
    from strongroom.worker import run_worker

    settings = Settings()
    configure_logging(settings.log_level)
    if settings.is_embedded:
        raise click.ClickException(
            "strongroom worker needs PostgreSQL (STRONGROOM_DATABASE_URL); "
            "the embedded default runs its jobs in-process"
        )
    _require_secrets(settings)
    asyncio.run(run_worker(settings))


@main.command()
def config() -> None:
    """Print the effective settings by area, secrets masked (docs/configuration.md)."""
    from pydantic import ValidationError

    from strongroom.settings.show import render

    try:
        settings = Settings()
    except ValidationError as error:  # each setting named, never its value (a secret?)
        problems = "; ".join(
            f"STRONGROOM_{'_'.join(map(str, detail['loc'])).upper()}: {detail['msg']}"
            if detail["loc"]
            else detail["msg"]
            for detail in error.errors(include_input=False, include_url=False)
        )
        raise click.ClickException(f"the settings are refused: {problems}") from None
    click.echo(render(settings), nl=False)


@main.command()
def migrate() -> None:
    """Upgrade the database to the latest schema."""
    from strongroom.db.migrate import upgrade

    async def work(database: Database) -> None:
        await upgrade(database.engine)

    run_with_database(work)
    click.echo("database is up to date")


@main.group()
def tenants() -> None:
    """Manage tenants."""


@tenants.command("create")
@click.argument("name")
@click.option("--email", required=True, help="E-mail of the tenant's first user.")
@click.option("--tier", type=TIERS, default=RateLimitTier.STANDARD.value, show_default=True)
@click.option("--credits", type=click.IntRange(min=0), default=INITIAL_CREDITS, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def tenants_create(name: str, email: str, tier: str, credits: int, as_json: bool) -> None:
    """Create tenant NAME with its first user."""
    from strongroom.billing.accounts import create_tenant
    from strongroom.tenants.service import ensure_user

    async def work(database: Database) -> dict[str, Any]:
        async with database.sessions() as session:
            tenant = await create_tenant(session, name, tier=RateLimitTier(tier), credits=credits)
            user = await ensure_user(session, tenant, email)
            await session.commit()
            return {
                "tenant_id": str(tenant.id),
                "name": tenant.name,
                "user_id": str(user.id),
                "email": user.email,
                "rate_limit_tier": tenant.rate_limit_tier,
                "credits": tenant.credits,
            }

    result = run_with_database(work)
    click.echo(json.dumps(result) if as_json else f"tenant {result['tenant_id']} ({name})")


@tenants.command("grant-credits")
@click.argument("tenant_ref", metavar="TENANT")
@click.argument("amount", type=click.IntRange(min=1))
@click.option("--reason", default="grant", show_default=True, help="Recorded in the ledger.")
def tenants_grant_credits(tenant_ref: str, amount: int, reason: str) -> None:
    """Add AMOUNT credits to TENANT (id or name); a past-due tenant with a positive balance
    can make live calls again."""
    from strongroom.admin import grant_credits

    async def work(runtime) -> int:
        return (await grant_credits(runtime, tenant_ref, amount, reason)).credits

    balance = run_with_runtime(work)
    click.echo(f"granted {amount} credits; balance {balance}")


@tenants.command("delete")
@click.argument("tenant_ref", metavar="TENANT")
def tenants_delete(tenant_ref: str) -> None:
    """Delete TENANT (id or name) as deleting its Tenant resource does on a cluster: its access
    ends at once (suspended, its API keys and OAuth grants revoked); its record, users, API key
    records and credit ledger stay for audit; its data's erasure is due after
    STRONGROOM_TENANT_ERASURE_DAYS (`strongroom tenants erase` erases it now). For the embedded
    default and other setups without the operator; with the operator, delete the Tenant."""
    from strongroom.operator.tenants import release_tenant
    from strongroom.tenants.models import Tenant
    from strongroom.tenants.service import find_tenant

    async def work(runtime) -> tuple[Tenant, dict[str, int]]:
        async with runtime.sessions() as session:
            tenant = await find_tenant(session, tenant_ref)
        revoked = await release_tenant(runtime, tenant.name, {"tenantId": str(tenant.id)})
        async with runtime.sessions() as session:
            return await session.get(Tenant, tenant.id), revoked or {}

    tenant, revoked = run_with_runtime(work)
    if tenant.erased_at is not None:
        erasure = f"its data was erased already, {tenant.erased_at:%Y-%m-%d %H:%M:%S} UTC"
    else:
        erasure = (
            f"its data's erasure is due {tenant.erasure_due_at:%Y-%m-%d %H:%M:%S} UTC "
            f"(now: strongroom tenants erase {tenant.id})"
        )
    click.echo(
        f"deleted tenant {tenant.name} ({tenant.id}) on {tenant.deleted_at:%Y-%m-%d %H:%M:%S} "
        f"UTC: {revoked.get('keys', 0)} API keys and {revoked.get('grants', 0)} OAuth grants "
        f"revoked; {erasure}"
    )


@tenants.command("erase")
@click.argument("tenant_ref", metavar="TENANT")
def tenants_erase(tenant_ref: str) -> None:
    """Erase the data of deleted TENANT (id or name) now, without waiting for its erasure to
    be due: documents, files, passages, vectors, conversations, projects, template fills,
    workflow runs, jobs, webhooks. Its row, users, API key records and credit ledger stay
    for audit. A tenant that is not deleted is refused."""
    from strongroom.tenant_erasure import NotDeletedError, erase_tenant_named

    try:
        erasure, tenant = run_with_runtime(lambda runtime: erase_tenant_named(runtime, tenant_ref))
    except NotDeletedError as error:
        raise click.ClickException(str(error)) from error
    erased = ", ".join(
        f"{count} {what.replace('_', ' ')}" for what, count in erasure.counts().items()
    )
    click.echo(
        f"erased tenant {tenant.name} ({tenant.id}) at {tenant.erased_at:%Y-%m-%d %H:%M:%S} UTC: "
        f"{erased}; kept its record, users, API key records and credit ledger"
    )


@main.group()
def keys() -> None:
    """Manage API keys."""


@keys.command("create")
@click.option("--tenant", "tenant_ref", required=True, help="Tenant id or name.")
@click.option("--email", required=True, help="The key's user (created if new).")
@click.option("--name", required=True, help="A name to recognise the key by.")
@click.option("--environment", type=click.Choice(["live", "test"]), required=True)
@click.option("--scopes", required=True, help='Space-separated, e.g. "vault:read vault:write".')
@click.option("--tier", type=TIERS, default=None, help="Default: the tenant's tier.")
@click.option("--expires-at", type=str, default=None, help="ISO 8601 with a UTC offset.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def keys_create(
    tenant_ref: str,
    email: str,
    name: str,
    environment: str,
    scopes: str,
    tier: str | None,
    expires_at: str | None,
    as_json: bool,
) -> None:
    """Create an API key and print it once: it cannot be shown again."""
    from strongroom.auth.service import create_key
    from strongroom.tenants.service import ensure_user, find_tenant

    try:
        scope_list = parse_scopes(scopes)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--scopes") from error
    expiry = _parse_expiry(expires_at)

    async def work(database: Database) -> dict[str, Any]:
        async with database.sessions() as session:
            tenant = await find_tenant(session, tenant_ref)
            user = await ensure_user(session, tenant, email)
            key, raw = await create_key(
                session,
                database.key_pepper,
                tenant=tenant,
                user=user,
                name=name,
                environment=Environment(environment),
                scopes=scope_list,
                tier=RateLimitTier(tier) if tier else None,
                expires_at=expiry,
            )
            await session.commit()
            return {"key": raw, **_key_fields(key)}

    result = run_with_database(work)
    if as_json:
        click.echo(json.dumps(result))
    else:
        click.echo(result["key"])
        click.echo(f"key id {result['id']}: store it now, it cannot be shown again", err=True)


@keys.command("revoke")
@click.argument("key_id", type=click.UUID)
def keys_revoke(key_id: uuid.UUID) -> None:
    """Revoke key KEY_ID: every API replica refuses it within 2 s (D16)."""
    from strongroom.admin import revoke_api_key

    async def work(runtime) -> None:
        await revoke_api_key(runtime, key_id)

    run_with_runtime(work)
    click.echo(f"revoked {key_id}")


@keys.command("list")
@click.option("--tenant", "tenant_ref", required=True, help="Tenant id or name.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def keys_list(tenant_ref: str, as_json: bool) -> None:
    """List a tenant's keys: prefixes only, never the keys; with each key's tier (its own,
    or the tenant's it falls back to) and scopes."""
    from strongroom.auth.service import list_keys
    from strongroom.tenants.service import find_tenant

    async def work(database: Database) -> tuple[str, list[dict[str, Any]]]:
        async with database.sessions() as session:
            tenant = await find_tenant(session, tenant_ref)
            keys = await list_keys(session, tenant.id)
            return tenant.rate_limit_tier, [_key_fields(key) for key in keys]

    tenant_tier, rows = run_with_database(work)
    if as_json:
        click.echo(json.dumps(rows))
        return
    for row in rows:
        state = "revoked" if row["revoked_at"] else "active"
        tier = row["rate_limit_tier"] or f"{tenant_tier} (the tenant's)"
        scopes = ",".join(row["scopes"]) or "none"
        click.echo(
            f"{row['id']}  {row['prefix']}...  {row['environment']}  {state}  tier {tier}  "
            f"scopes {scopes}  {row['name']}"
        )


@main.group()
def oauth() -> None:
    """Manage OAuth clients and signing keys."""


@oauth.command("create-client")
@click.option("--name", required=True)
@click.option("--redirect-uri", "redirect_uris", multiple=True, required=True)
@click.option(
    "--auth-method",
    type=click.Choice(["none", "client_secret_basic", "client_secret_post"]),
    default="client_secret_basic",
    show_default=True,
)
@click.option("--scopes", default="vault:read chat:read templates:read workflows:read meta:read",
              show_default=True, help="Console clients may hold write scopes.")  # fmt: skip
def oauth_create_client(
    name: str, redirect_uris: tuple[str, ...], auth_method: str, scopes: str
) -> None:
    """Register a console client (spec 5.3 rule 4) and print it as JSON; a confidential
    client's secret is printed once."""
    from strongroom.oauth.clients import RegistrationRequest, register_client

    try:
        scope_list = parse_scopes(scopes)
        request = RegistrationRequest(
            client_name=name,
            redirect_uris=list(redirect_uris),
            token_endpoint_auth_method=auth_method,
        )
    except ValueError as error:
        raise click.BadParameter(str(error)) from error

    async def work(database: Database) -> dict[str, Any]:
        async with database.sessions() as session:
            client, secret = await register_client(
                session, request, dynamic=False, scope=" ".join(scope_list)
            )
            await session.commit()
        return {
            "client_id": client.id,
            "client_secret": secret,
            "scope": client.scope,
            "redirect_uris": client.redirect_uris,
            "token_endpoint_auth_method": auth_method,
        }

    click.echo(json.dumps(run_with_database(work)))


@oauth.command("rotate-key")
@click.option(
    "--keep",
    default=2,
    show_default=True,
    type=click.IntRange(min=2),
    help="Keys kept: the new one and the previous ones still verifying tokens.",
)
def oauth_rotate_key(keep: int) -> None:
    """Put a new signing key first in the key file (D29). Restart or roll the API so that it
    signs with it; tokens of the previous key verify until it is dropped by a later rotation
    (wait at least an hour, the access token lifetime, between two rotations)."""
    from strongroom.oauth.signing import load_signing_keys, rotate, write_signing_keys

    settings = Settings()
    try:
        path = settings.signing_keys_path
    except MissingSecretError as error:
        raise click.ClickException(str(error)) from error
    rotated = rotate(load_signing_keys(path, create=settings.is_embedded), keep=keep)
    write_signing_keys(path, rotated)
    click.echo(f"signing with {rotated.active.kid}; verifying {len(rotated.keys)} keys")


@main.command()
def reindex() -> None:
    """Analyse every stored passage again (after the text analysis or thesaurus changed)."""
    from strongroom.vault.reindex import reindex as reindex_passages

    changed = run_with_runtime(reindex_passages)
    click.echo(f"passages reindexed: {changed} changed")


@main.command()
@click.option(
    "--queue",
    is_flag=True,
    help="Queue one `reembedding` job per document for the workers instead of working here.",
)
def reembed(queue: bool) -> None:
    """Embed every passage whose vector is missing or of another model than the configured
    embeddings provider's (after STRONGROOM_EMBEDDINGS_PROVIDER or its model changed)."""
    from strongroom.embeddings import EmbeddingError
    from strongroom.vault.reembedding import queue_reembedding
    from strongroom.vault.reembedding import reembed as reembed_passages

    try:
        if queue:
            queued = run_with_runtime(queue_reembedding)
            click.echo(f"reembedding jobs queued: {queued}")
        else:
            done = run_with_runtime(reembed_passages)
            click.echo(f"passages embedded: {done}")
    except (LookupError, EmbeddingError) as error:
        raise click.ClickException(str(error)) from error


@main.command()
def openapi() -> None:
    """Print the OpenAPI document."""
    from strongroom.app import create_app

    app = create_app(Settings())
    document = app.extensions["QUART_SCHEMA"].openapi_provider.schema()
    json.dump(document, sys.stdout, indent=2)
    sys.stdout.write("\n")


@main.command()
def capabilities() -> None:
    """Print the capability matrix (Markdown) of docs/capabilities.md."""
    from strongroom.api.matrix import capability_matrix
    from strongroom.app import AREAS

    click.echo(capability_matrix(*AREAS), nl=False)


@main.command("mcp-tools")
def mcp_tools() -> None:
    """Print the MCP server's tool reference (Markdown) of docs/mcp.md."""
    from strongroom.app import AREAS
    from strongroom.mcp.reference import tool_reference
    from strongroom.mcp.tools import build_tools

    click.echo(tool_reference(build_tools(AREAS)), nl=False)


@main.command("docs-errors")
def docs_errors() -> None:
    """Print the problem codes' page (Markdown) of docs/errors.md."""
    from strongroom.api.error_pages import errors_markdown

    click.echo(errors_markdown(), nl=False)


def _parse_expiry(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        expiry = datetime.fromisoformat(value)
    except ValueError as error:
        raise click.BadParameter("not an ISO 8601 datetime", param_hint="--expires-at") from error
    if expiry.tzinfo is None:
        raise click.BadParameter("give a UTC offset, e.g. +00:00", param_hint="--expires-at")
    return expiry


def _key_fields(key) -> dict[str, Any]:
    return {
        "id": str(key.id),
        "tenant_id": str(key.tenant_id),
        "user_id": str(key.user_id),
        "name": key.name,
        "prefix": key.prefix,
        "environment": key.environment,
        "scopes": key.scopes,
        "rate_limit_tier": key.rate_limit_tier,
        "expires_at": key.expires_at.isoformat() if key.expires_at else None,
        "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None,
        "created_at": key.created_at.isoformat(),
    }
