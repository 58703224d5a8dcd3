"""Secrets never leak (D9, D12, D32-D34, D38; issue 10 item 3).

A full flow runs with every logger at DEBUG: API keys made by the service (in-process) or the
CLI (real processes), used, revoked, wrong, and sent where they must not be (a query string, a
cookie, a JSON field: D12); OAuth with confidential clients (client secrets, PKCE verifiers,
codes, access tokens, refresh tokens, rotation, replay, revocation); chat with the `openai`
engine against the stand-in provider (tests/chat_upstream.py) with an upstream key set. Then
no secret may appear in:

- any log record: its message, its args, every extra field, its exception text, and the
  record as strongroom/logs.py's JSON formatter writes it;
- any response, body or header, except the one response that hands the secret out (the
  registration's client secret, the authorization redirect's code, the token response's
  tokens): spec and D38 require those, nowhere else may they come back;
- the Prometheus metrics text.

The secrets are every credential above plus the server's own: key pepper, secret key (and
the session key derived from it), the OAuth signing keys' private parts, the upstream chat
key, the OpenID client secret, the S3 secret key and, on PostgreSQL, the database password.
A secret is found when it, its URL-encoded form, or any piece of it of 35 characters or more
(past a part that is public by design, such as the display prefix of a key) appears.

The in-process test runs on both backends (on SQLite, documents are stored in S3 on moto's
server, so the S3 secret signs real requests); the second test does it all again against real
`strongroom serve` and `strongroom worker` processes on PostgreSQL, Redis and S3,
logging JSON at DEBUG to files, with a key made and another revoked by the `strongroom` CLI,
and scrapes the server's /metrics.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
import logging
import re
import secrets
import traceback
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from aiobotocore.session import get_session
from moto.server import ThreadedMotoServer
from prometheus_client import REGISTRY, generate_latest
from pydantic import SecretStr
from werkzeug.datastructures import Headers

from strongroom.admin import revoke_api_key
from strongroom.app import create_app
from strongroom.auth.keys import display_prefix
from strongroom.billing.accounts import create_tenant
from strongroom.logs import JsonFormatter
from strongroom.runtime import Runtime
from strongroom.tenants.models import RateLimitTier
from strongroom.tenants.partition import Environment
from tests.chat.conftest import parse_events
from tests.chat_upstream import FakeUpstream, Reply
from tests.conftest import (
    REDIS_URL,
    issue_credential,
    make_settings,
    migrated,
    own_postgres_database,
)
from tests.oauth.flow import (
    Client,
    authorize_query,
    pkce_pair,
    post_form,
    query_of,
    register,
    sign_in_and_approve,
)
from tests.processes import READY_SECONDS, STRONGROOM, WorkerProcess, environment_of, free_port
from tests.vault.conftest import Vault, unique_word

AUTHORIZE = "/api/v2/oauth/authorize"
TOKEN = "/api/v2/oauth/token"
REVOKE = "/api/v2/oauth/revoke"
# Pieces of this many characters, one every WINDOW // 2, stand for a secret: any run of
# WINDOW + WINDOW // 2 - 1 = 35 characters of it holds one whole.
WINDOW = 24
S3_KEY_ID = "AKIASTRONGROOMTEST"
ALL_SCOPES_TEXT = "vault:read vault:write chat:read chat:write templates:read " \
    "templates:write workflows:read workflows:write webhooks:read webhooks:write " \
    "meta:read"  # fmt: skip


# -- what counts as a secret, and where it was seen ------------------------------------------


@dataclass
class Secret:
    name: str
    value: str
    # The index of the exchange whose response handed it out (and may carry it), if any.
    issued_by: int | None = None
    public_prefix: int = 0  # characters shown by design (a key's display prefix)

    @cached_property
    def fragments(self) -> set[str]:
        found = {self.value, quote(self.value, safe="")}
        tail = self.value[self.public_prefix :]
        if len(tail) <= WINDOW:
            found.add(tail)
        else:
            found.update(
                tail[i : i + WINDOW] for i in range(0, len(tail) - WINDOW + 1, WINDOW // 2)
            )
            found.add(tail[-WINDOW:])
        return {fragment for fragment in found if len(fragment) >= 12}


@dataclass
class Secrets:
    items: list[Secret] = field(default_factory=list)

    def add(self, name: str, value: str, **options: Any) -> str:
        assert value and len(value) >= 12, f"{name} is too short to look for: {value!r}"
        self.items.append(Secret(name, value, **options))
        return value

    def add_jwt(self, name: str, token: str, **options: Any) -> str:
        """An access token: its header is the same for every token of a signing key and much
        of its claims for every token of a user, so its signature is what identifies it."""
        signature = token.rsplit(".", 1)[1]
        return self.add(name, token, public_prefix=len(token) - len(signature), **options)

    def found_in(self, text: str, *, exchange: int | None = None) -> list[str]:
        """The names of the secrets `text` holds (the exchange that issued one may hold it)."""
        return [
            secret.name
            for secret in self.items
            if (exchange is None or secret.issued_by != exchange)
            and any(fragment in text for fragment in secret.fragments)
        ]


# -- every log record of every logger, at DEBUG ----------------------------------------------


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def every_log_record() -> Iterator[list[logging.LogRecord]]:
    """Every record of every logger, the root and all others at DEBUG, for the block."""
    keep = _Keep()
    root = logging.getLogger()
    saved_root, saved_disable = root.level, logging.root.manager.disable
    logging.disable(logging.NOTSET)
    root.addHandler(keep)
    root.setLevel(logging.DEBUG)
    changed = []
    for logger in list(logging.root.manager.loggerDict.values()):
        if not isinstance(logger, logging.Logger):
            continue
        changed.append((logger, logger.level, logger.disabled))
        if logger.level > logging.DEBUG:
            logger.setLevel(logging.DEBUG)
        logger.disabled = False
        if not logger.propagate:
            logger.addHandler(keep)
    try:
        yield keep.records
    finally:
        for logger, level, disabled in changed:
            logger.setLevel(level)
            logger.disabled = disabled
            if keep in logger.handlers:
                logger.removeHandler(keep)
        root.removeHandler(keep)
        root.setLevel(saved_root)
        logging.disable(saved_disable)


def texts_of(record: logging.LogRecord, formatter: JsonFormatter) -> Iterator[str]:
    """Everything a record carries: as the JSON formatter writes it, and field by field."""
    yield formatter.format(record)
    yield str(record.msg)
    yield repr(record.args)
    if isinstance(record.args, tuple | dict):
        values = record.args.values() if isinstance(record.args, dict) else record.args
        yield from (str(value) for value in values)
    for value in vars(record).values():
        yield repr(value)
        yield str(value)
    if record.exc_info and record.exc_info[1] is not None:
        yield "".join(traceback.format_exception(record.exc_info[1]))
    if record.stack_info:
        yield record.stack_info


def leaks_in_records(records: list[logging.LogRecord], vault: Secrets) -> list[str]:
    formatter = JsonFormatter()
    leaks = []
    for record in records:
        for text in texts_of(record, formatter):
            if names := vault.found_in(text):
                leaks.append(f"{record.name} {record.levelname} {names}: {text[:300]}")
                break
    return leaks


# -- a client that keeps every response ------------------------------------------------------


@dataclass
class Exchange:
    method: str
    path: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def header_text(self) -> str:
        return "\n".join(f"{name}: {value}" for name, value in self.headers)


class Answer:
    """A response as Quart's test client gives it (what tests/oauth/flow.py and the Vault
    helper read), for either transport."""

    def __init__(self, exchange: Exchange) -> None:
        self.status_code = exchange.status
        self.headers = Headers(exchange.headers)
        self._body = exchange.body

    async def get_data(self, as_text: bool = False):
        return self._body.decode() if as_text else self._body

    async def get_json(self):
        return json.loads(self._body)


Send = Callable[..., Awaitable[tuple[int, list[tuple[str, str]], bytes]]]


class Recorder:
    """get/post/open like Quart's test client, over `send`; keeps every exchange."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.exchanges: list[Exchange] = []

    @property
    def last(self) -> int:
        return len(self.exchanges) - 1

    async def open(self, path: str, *, method: str = "GET", **options: Any) -> Answer:
        status, headers, body = await self._send(method, path, **options)
        exchange = Exchange(method, path, status, headers, body)
        self.exchanges.append(exchange)
        return Answer(exchange)

    async def get(self, path: str, **options: Any) -> Answer:
        return await self.open(path, method="GET", **options)

    async def post(self, path: str, **options: Any) -> Answer:
        return await self.open(path, method="POST", **options)


def quart_sender(test_client) -> Send:
    async def send(method, path, *, headers=None, json=None, data=None, form=None):
        options = {"headers": headers, "json": json, "data": data, "form": form}
        response = await test_client.open(
            path, method=method, **{k: v for k, v in options.items() if v is not None}
        )
        return response.status_code, list(response.headers.items()), await response.get_data()

    return send


def httpx_sender(http: httpx.AsyncClient) -> Send:
    async def send(method, path, *, headers=None, json=None, data=None, form=None):
        response = await http.request(
            method, path, headers=headers, json=json, content=data, data=form
        )
        return response.status_code, list(response.headers.items()), response.content

    return send


def leaks_in_responses(exchanges: list[Exchange], vault: Secrets) -> list[str]:
    leaks = []
    for index, exchange in enumerate(exchanges):
        for where, text in (
            ("headers", exchange.header_text),
            ("body", exchange.body.decode(errors="replace")),
        ):
            if names := vault.found_in(text, exchange=index):
                leaks.append(
                    f"{exchange.method} {exchange.path} -> {exchange.status} {where} {names}: "
                    f"{text[:300]}"
                )
    return leaks


def leaks_in_metrics(text: str, vault: Secrets) -> list[str]:
    leaks = [f"metrics hold {names}" for names in [vault.found_in(text)] if names]
    for shape in (r"ak_(?:live|test)_[A-Z2-7]{5,}", r"\brt_[\w-]{10,}", r"eyJ[\w-]{10,}\."):
        leaks += [f"metrics hold something shaped like a credential: {m}" for m in
                  re.findall(shape, text)]  # fmt: skip
    return leaks


# -- the flow --------------------------------------------------------------------------------


@dataclass
class Keys:
    email: str
    test: str  # every scope, test environment
    live: str  # every scope, live environment
    doomed: str  # revoked half-way by `revoke`
    revoke: Callable[[], Awaitable[None]]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def status_and_code(http: Recorder, path: str, token: str | None, **options):
    headers = {**(bearer(token) if token else {}), **options.pop("headers", {})}
    response = await http.open(path, headers=headers, **options)
    body = await response.get_data()
    code = json.loads(body).get("code") if body.startswith(b"{") else None
    return response.status_code, code


async def use_api_keys(http: Recorder, keys: Keys, vault: Secrets) -> None:
    """Keys used, revoked, wrong, malformed, and sent outside the header (D12)."""
    me = await (await http.get("/api/v2/me", headers=bearer(keys.test))).get_json()
    assert me["api_key_prefix"] == display_prefix(keys.test)
    assert await status_and_code(http, "/api/v2/me", keys.doomed) == (200, None)
    await keys.revoke()
    async with asyncio.timeout(10):  # D16: within 2 s on every replica
        while True:
            if await status_and_code(http, "/api/v2/me", keys.doomed) == (401, "api_key_revoked"):
                break
            await asyncio.sleep(0.2)
    wrong = vault.add(
        "a wrong API key",
        "ak_test_" + base64.b32encode(secrets.token_bytes(32)).decode().rstrip("="),
        public_prefix=12,
    )
    assert await status_and_code(http, "/api/v2/me", wrong) == (401, "invalid_api_key")
    malformed = vault.add("a malformed API key", "ak_live_" + secrets.token_hex(12))
    assert await status_and_code(http, "/api/v2/me", malformed) == (401, "invalid_api_key")
    for path, options in (
        (f"/api/v2/me?api_key={keys.test}", {}),
        (f"/api/v2/vault/projects?limit=5&token={quote(keys.live)}", {}),
        ("/api/v2/me", {"headers": {"Cookie": f"api_key={keys.test}"}}),
        (
            "/api/v2/vault/projects",
            {"method": "POST", "json": {"name": keys.live, "project_type": "commercial"}},
        ),
    ):
        assert await status_and_code(http, path, keys.test, **options) == (
            400,
            "credentials_in_request",
        ), path
    assert await status_and_code(http, f"/api/v2/vault/projects/{keys.test}", keys.test) == (
        404,
        "not_found",
    )
    made = await http.post(
        "/api/v2/vault/projects",
        json={"name": "Billed", "project_type": "other"},
        headers=bearer(keys.live),
    )
    assert made.status_code == 201  # a live call, billed (D21)


async def chat_with_the_upstream(
    http: Recorder, keys: Keys, upstream: FakeUpstream, upstream_key: str
) -> None:
    """Documents, then chat through the `openai` engine with its key; the upstream also fails,
    once echoing the key in its error as real providers do."""
    documents = Vault(http, bearer(keys.test))
    word = unique_word()
    project_id = await documents.create_project()
    document = await documents.ingested(
        f"The retention for {word} is five per cent.".encode(), "retention.txt", project_id
    )
    assert document["status"] == "ready", document["error"]
    question = {"query": f"What is the retention for {word}?"}
    upstream.script(Reply(text="The retention is five per cent [1].", usage=(30, 8)))
    answer = await http.post("/api/v2/chat", json=question, headers=documents.headers)
    assert answer.status_code == 200, await answer.get_data()
    assert (await answer.get_json())["citations"][0]["document_id"] == document["id"]
    stream = await http.post("/api/v2/chat/stream", json=question, headers=documents.headers)
    assert parse_events(await stream.get_data())[-1][0] == "done"
    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {upstream_key}"}})
    for reply in (
        Reply(body=f"data: {echo}\n\n"),
        Reply(body=echo, content_type="application/json"),
        Reply(status=401),
    ):
        upstream.script(reply)
        failed = await http.post("/api/v2/chat", json=question, headers=documents.headers)
        assert failed.status_code == 502, await failed.get_data()
        upstream.script(reply)
        streamed = await http.post("/api/v2/chat/stream", json=question, headers=documents.headers)
        assert parse_events(await streamed.get_data())[-1][0] == "error"
    # The key was really in play: every call upstream carried it.
    assert upstream.requests, "the upstream was never called"
    assert {r.authorization for r in upstream.requests} == {f"Bearer {upstream_key}"}


async def login(
    http: Recorder, client: Client, email: str, vault: Secrets, *, replay_code: bool = False
) -> dict:
    """PKCE authorization and code exchange; returns the token response. With `replay_code`
    the code is then used again, which fails and revokes the tokens it gave (D33)."""
    verifier, challenge = pkce_pair()
    vault.add("a PKCE code verifier", verifier)
    query = authorize_query(client, challenge, scope="vault:read meta:read chat:read")
    redirect = await sign_in_and_approve(http, f"{AUTHORIZE}?{query}", email)
    assert redirect.status_code in (302, 303), await redirect.get_data()
    code = vault.add("an authorization code", query_of(redirect.headers["Location"])["code"],
                     issued_by=http.last)  # fmt: skip
    form, headers = client.authenticate({
        "grant_type": "authorization_code", "code": code,
        "redirect_uri": client.redirect_uri, "code_verifier": verifier,
    })  # fmt: skip
    token = await post_form(http, TOKEN, form, headers=headers)
    assert token.status_code == 200, await token.get_data()
    tokens = await token.get_json()
    vault.add_jwt("an access token", tokens["access_token"], issued_by=http.last)
    vault.add("a refresh token", tokens["refresh_token"], issued_by=http.last, public_prefix=3)
    if replay_code:
        again = await post_form(http, TOKEN, form, headers=headers)
        assert (await again.get_json())["error"] == "invalid_grant"
    return tokens | {"code": code, "verifier": verifier}


async def oauth_with_confidential_clients(http: Recorder, email: str, vault: Secrets) -> None:
    for method in ("client_secret_post", "client_secret_basic"):
        client = await register(http, auth_method=method)
        vault.add(f"a client secret ({method})", client.client_secret, issued_by=http.last)
        tokens = await login(http, client, email, vault, replay_code=True)
        # The code's second use revoked these tokens; a fresh login gives live ones.
        assert await status_and_code(http, "/api/v2/me", tokens["access_token"]) == (
            401,
            "invalid_token",
        )
        tokens = await login(http, client, email, vault)
        access, refresh = tokens["access_token"], tokens["refresh_token"]
        assert await status_and_code(http, "/api/v2/me", access) == (200, None)
        assert await status_and_code(http, "/api/v2/vault/projects", access) == (200, None)
        assert await status_and_code(
            http, "/api/v2/vault/projects", access, method="POST",
            json={"name": "x", "project_type": "other"},
        ) == (403, "oauth_not_supported")  # fmt: skip
        forged = access[:-8] + ("A" * 8 if not access.endswith("A" * 8) else "B" * 8)
        assert await status_and_code(http, "/api/v2/me", forged) == (401, "invalid_token")
        # A wrong client secret is invalid_client (D32).
        wrong = Client(client.client_id, client.redirect_uri, "wrong-" + secrets.token_hex(16),
                       method)  # fmt: skip
        vault.add("a wrong client secret", wrong.client_secret)
        form, headers = wrong.authenticate(
            {"grant_type": "refresh_token", "refresh_token": refresh}
        )
        refused = await post_form(http, TOKEN, form, headers=headers)
        assert (
            refused.status_code == 401 and (await refused.get_json())["error"] == "invalid_client"
        )
        # Rotation (D34): a new pair; the old refresh token replayed revokes the chain.
        form, headers = client.authenticate(
            {"grant_type": "refresh_token", "refresh_token": refresh}
        )
        rotated = await post_form(http, TOKEN, form, headers=headers)
        assert rotated.status_code == 200, await rotated.get_data()
        fresh = await rotated.get_json()
        vault.add_jwt("a rotated access token", fresh["access_token"], issued_by=http.last)
        vault.add("a rotated refresh token", fresh["refresh_token"], issued_by=http.last,
                  public_prefix=3)  # fmt: skip
        assert fresh["refresh_token"] != refresh
        assert await status_and_code(http, "/api/v2/me", fresh["access_token"]) == (200, None)
        replay = await post_form(http, TOKEN, form, headers=headers)
        assert (await replay.get_json())["error"] == "invalid_grant"
        assert await status_and_code(http, "/api/v2/me", fresh["access_token"]) == (
            401,
            "invalid_token",
        )
        # Revocation (D40): an access token, then a refresh token and its chain.
        tokens = await login(http, client, email, vault)
        form, headers = client.authenticate({"token": tokens["access_token"]})
        assert (await post_form(http, REVOKE, form, headers=headers)).status_code == 200
        assert await status_and_code(http, "/api/v2/me", tokens["access_token"]) == (
            401,
            "invalid_token",
        )
        form, headers = client.authenticate({"token": tokens["refresh_token"]})
        assert (await post_form(http, REVOKE, form, headers=headers)).status_code == 200
        form, headers = client.authenticate(
            {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
        )
        gone = await post_form(http, TOKEN, form, headers=headers)
        assert (await gone.get_json())["error"] == "invalid_grant"


async def full_flow(
    http: Recorder, keys: Keys, vault: Secrets, upstream: FakeUpstream, upstream_key: str
) -> None:
    await use_api_keys(http, keys, vault)
    await webhook_secrets(http, keys, vault)
    await chat_with_the_upstream(http, keys, upstream, upstream_key)
    await oauth_with_confidential_clients(http, keys.email, vault)


async def webhook_secrets(http: Recorder, keys: Keys, vault: Secrets) -> None:
    """A webhook endpoint's signing secret is answered by its create and by a rotation
    (issue 30), then never again: not by a read, a list or a PATCH."""
    created = await http.post(
        "/api/v2/webhooks/endpoints",
        headers=bearer(keys.test),
        json={"url": "https://93.184.216.34/hook", "events": ["document.ready"]},
    )
    endpoint = await created.get_json()
    vault.add("a webhook secret", endpoint["secret"], public_prefix=6, issued_by=http.last)
    path = f"/api/v2/webhooks/endpoints/{endpoint['id']}"
    rotated = await http.post(path + "/rotate-secret", headers=bearer(keys.test))
    secret = (await rotated.get_json())["secret"]
    vault.add("a rotated webhook secret", secret, public_prefix=6, issued_by=http.last)
    for read in (path, path + "/deliveries", "/api/v2/webhooks/endpoints"):
        assert (await http.get(read, headers=bearer(keys.test))).status_code == 200
    await http.open(path, method="PATCH", headers=bearer(keys.test), json={"description": "d"})


def server_secrets(vault: Secrets, settings, **named: str) -> None:
    """The server's own secrets: pepper, secret key and the session key made from it, the
    private parts of the signing keys, and whatever else the test configured."""
    secret_key = settings.secret_key.get_secret_value()
    vault.add("the key pepper", settings.key_pepper.get_secret_value())
    vault.add("the secret key", secret_key)
    vault.add(
        "the session signing key",
        hmac.new(secret_key.encode(), b"session", "sha256").hexdigest(),
    )
    for jwk in json.loads(Path(settings.oauth_signing_keys_file).read_text())["keys"]:
        vault.add("an OAuth signing key's private part", jwk["d"])
    for name, value in named.items():
        vault.add(name.replace("_", " "), value)


def configured_secrets() -> dict[str, str]:
    return {
        "key_pepper": "pepper-" + secrets.token_urlsafe(24),
        "secret_key": "secret-" + secrets.token_urlsafe(24),
        "the_upstream_chat_key": "sk-upstream-" + secrets.token_urlsafe(24),
        "the_OpenID_client_secret": "oidc-" + secrets.token_urlsafe(24),
        "the_S3_secret_key": "s3-" + secrets.token_urlsafe(24),
        "the_database_password": "pw" + secrets.token_hex(12),
    }


def with_password(url: str, password: str) -> str:
    scheme, rest = url.split("://", 1)
    user, host = rest.split("@", 1)
    return f"{scheme}://{user}:{password}@{host}"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """S3 on moto's server (a real S3 HTTP server on a free port), which checks no signature:
    the S3 secret key is really used, to sign every request, and must leak from none."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


async def s3_storage(endpoint: str, secret_key: str) -> dict[str, Any]:
    """Settings that store documents in a fresh bucket on `endpoint`."""
    bucket = f"secrets-{uuid.uuid4().hex[:12]}"
    options = {"endpoint_url": endpoint, "region_name": "us-east-1",
               "aws_access_key_id": S3_KEY_ID, "aws_secret_access_key": secret_key}  # fmt: skip
    async with get_session().create_client("s3", **options) as client:
        await client.create_bucket(Bucket=bucket)
    return {"storage_url": f"s3://{bucket}/blobs", "s3_endpoint_url": endpoint}


async def stored_in_s3(storage: dict[str, Any], secret_key: str) -> int:
    """How many objects the flow stored in the bucket of `storage` (S3 was really used)."""
    bucket = storage["storage_url"].removeprefix("s3://").split("/", 1)[0]
    options = {"endpoint_url": storage["s3_endpoint_url"], "region_name": "us-east-1",
               "aws_access_key_id": S3_KEY_ID, "aws_secret_access_key": secret_key}  # fmt: skip
    async with get_session().create_client("s3", **options) as client:
        return (await client.list_objects_v2(Bucket=bucket)).get("KeyCount", 0)


# -- in-process, both backends ---------------------------------------------------------------


async def test_no_secret_reaches_logs_error_bodies_headers_or_metrics(
    settings, chat_upstream, worker, s3_endpoint
):
    values = configured_secrets()
    update = {
        "key_pepper": values["key_pepper"],
        "secret_key": values["secret_key"],
        "chat_engine": "openai",
        "chat_openai_base_url": chat_upstream.base_url,
        "chat_openai_model": "test-model",
        "chat_openai_api_key": values["the_upstream_chat_key"],
        "chat_openai_timeout_seconds": 5.0,
        "chat_openai_max_retries": 0,
        # Not contacted (the dev sign-in page wins), but configured, as in production.
        "oidc_issuer": "https://id.example.test",
        "oidc_client_id": "strongroom",
        "oidc_client_secret": values["the_OpenID_client_secret"],
        "s3_access_key_id": S3_KEY_ID,
        "s3_secret_access_key": values["the_S3_secret_key"],
    }
    storage = None
    if settings.is_embedded:  # jobs run in this process, so documents can live in S3
        storage = await s3_storage(s3_endpoint, values["the_S3_secret_key"])
        update |= storage
    secret_fields = ("key_pepper", "secret_key", "chat_openai_api_key", "oidc_client_secret",
                     "s3_secret_access_key")  # fmt: skip
    update = {k: SecretStr(v) if k in secret_fields else v for k, v in update.items()}
    if not settings.is_embedded:
        update["database_url"] = with_password(
            settings.resolved_database_url, values["the_database_password"]
        )
    else:
        values.pop("the_database_password")
    configured = settings.model_copy(update=update)
    vault = Secrets()
    server_secrets(
        vault, configured,
        **{k: v for k, v in values.items() if k not in {"key_pepper", "secret_key"}},
    )  # fmt: skip

    with every_log_record() as records:
        app = create_app(configured)
        async with app.test_app():
            runtime = app.extensions["strongroom"]
            test = await issue_credential(runtime, tier=RateLimitTier.ENTERPRISE)
            live = await issue_credential(
                runtime, tenant=test.tenant, environment=Environment.LIVE,
                email=test.user.email, tier=RateLimitTier.ENTERPRISE,
            )  # fmt: skip
            doomed = await issue_credential(runtime, tenant=test.tenant, email=test.user.email)
            for name, credential in (("test", test), ("live", live), ("revoked", doomed)):
                vault.add(f"the {name} API key", credential.key, public_prefix=12)
            keys = Keys(
                test.user.email, test.key, live.key, doomed.key,
                revoke=lambda: revoke_api_key(runtime, doomed.api_key.id),
            )  # fmt: skip
            http = Recorder(quart_sender(app.test_client()))
            await full_flow(http, keys, vault, chat_upstream, values["the_upstream_chat_key"])
        metrics = generate_latest(REGISTRY).decode()

    # The capture saw the flow, down to DEBUG: the checks below looked at something.
    assert any(r.levelno == logging.DEBUG for r in records), "no DEBUG record was captured"
    requests_logged = [r for r in records if r.name == "strongroom.api" and r.msg == "request"]
    assert len(requests_logged) >= len(http.exchanges) > 50
    assert any(r.name == "strongroom.chat" for r in records), "the upstream failures went unlogged"
    assert "strongroom_auth_failures_total" in metrics
    if storage is not None:
        assert await stored_in_s3(storage, values["the_S3_secret_key"]) > 0

    leaks = (
        leaks_in_records(records, vault)
        + leaks_in_responses(http.exchanges, vault)
        + leaks_in_metrics(metrics, vault)
    )
    assert not leaks, "secrets leaked:\n" + "\n".join(leaks)


def test_the_leak_detector_finds_a_secret_whole_cut_or_url_encoded():
    """The checks above can fail: a secret is found whole, URL-encoded or as a long enough
    piece, but not by its public display prefix alone."""
    vault = Secrets()
    key = vault.add("a key", "ak_test_" + ("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567" * 2)[:52],
                    public_prefix=12)  # fmt: skip
    token = vault.add("a token", "rt_" + "a/b+c" * 9, issued_by=3)
    assert vault.found_in(f"x {key} y") == ["a key"]
    assert vault.found_in(key[5:45]) == ["a key"]
    assert vault.found_in(display_prefix(key)) == []
    assert vault.found_in(quote(token, safe="")) == ["a token"]
    assert vault.found_in(token, exchange=3) == []  # the response that issued it
    assert vault.found_in(token, exchange=4) == ["a token"]
    with every_log_record() as records:
        logging.getLogger("strongroom.anything").debug("got %s", key, extra={"t": token})
    assert len(leaks_in_records(records, vault)) == 1
    assert leaks_in_metrics(f'm{{route="/{key}"}} 1', vault)


# -- real processes: `strongroom serve` and `strongroom worker`, CLI-made keys --------------


async def cli(env: dict[str, str], *arguments: str) -> tuple[str, str]:
    process = await asyncio.create_subprocess_exec(
        STRONGROOM, *arguments, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, (arguments, err.decode())
    return out.decode(), err.decode()


class LoggedServe:
    """`strongroom serve` with /metrics, its stderr (JSON logs) in a file."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env, self.log_path = env, log_path
        self.port, self.metrics_port = free_port(), free_port()
        self.base = f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> LoggedServe:
        with self.log_path.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                STRONGROOM, "serve", "--host", "127.0.0.1", "--port", str(self.port),
                "--workers", "1", "--metrics-port", str(self.metrics_port),
                env=self.env, stdout=log, stderr=log,
            )  # fmt: skip
        try:
            async with httpx.AsyncClient(base_url=self.base) as http:
                async with asyncio.timeout(READY_SECONDS):
                    while self.process.returncode is None:
                        try:
                            if (await http.get("/readyz")).status_code == 200:
                                return self
                        except httpx.TransportError:
                            pass
                        await asyncio.sleep(0.2)
        except TimeoutError:
            pass
        await self.__aexit__()
        raise AssertionError(
            f"strongroom serve was not ready within {READY_SECONDS} s:\n"
            + self.log_path.read_text(errors="replace")[-3000:]
        )

    def scrape(self) -> str:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode()

    async def __aexit__(self, *exc: object) -> None:
        if self.process.returncode is None:
            self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), 30)
            except TimeoutError:
                self.process.kill()
        await self.process.wait()


@pytest.fixture
async def private_database() -> Any:
    """A database of this test's own: its job queue is served by its own worker only."""
    async with own_postgres_database() as url:
        yield url


def json_log_lines(path: Path) -> list[dict]:
    entries = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue
    return entries


async def test_a_real_server_and_worker_at_debug_leak_no_secret(
    private_database, redis_prefix, chat_upstream, s3_endpoint, tmp_path
):
    values = configured_secrets()
    url = with_password(private_database, values["the_database_password"])
    settings = await migrated(
        make_settings(
            url, tmp_path, redis_url=REDIS_URL, redis_prefix=f"{redis_prefix}secrets:",
            key_pepper=values["key_pepper"], secret_key=values["secret_key"],
        )
    )  # fmt: skip
    vault = Secrets()
    server_secrets(
        vault, settings,
        **{k: v for k, v in values.items() if k not in {"key_pepper", "secret_key"}},
    )  # fmt: skip
    extra = {
        "STRONGROOM_LOG_LEVEL": "DEBUG",
        "STRONGROOM_CHAT_ENGINE": "openai",
        "STRONGROOM_CHAT_OPENAI_BASE_URL": chat_upstream.base_url,
        "STRONGROOM_CHAT_OPENAI_MODEL": "test-model",
        "STRONGROOM_CHAT_OPENAI_API_KEY": values["the_upstream_chat_key"],
        "STRONGROOM_CHAT_OPENAI_TIMEOUT_SECONDS": "5",
        "STRONGROOM_CHAT_OPENAI_MAX_RETRIES": "0",
        "STRONGROOM_OIDC_ISSUER": "https://id.example.test",
        "STRONGROOM_OIDC_CLIENT_ID": "strongroom",
        "STRONGROOM_OIDC_CLIENT_SECRET": values["the_OpenID_client_secret"],
        "STRONGROOM_S3_ACCESS_KEY_ID": S3_KEY_ID,
        "STRONGROOM_S3_SECRET_ACCESS_KEY": values["the_S3_secret_key"],
    }
    storage = await s3_storage(s3_endpoint, values["the_S3_secret_key"])
    extra["STRONGROOM_STORAGE_URL"] = storage["storage_url"]
    extra["STRONGROOM_S3_ENDPOINT_URL"] = storage["s3_endpoint_url"]
    env = environment_of(settings, **extra)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)

    # The tenant and two keys by the service, one key by the CLI, whose output is the one place
    # a key is shown (its stdout: what it prints elsewhere must hold none); revoked by the CLI.
    runtime = Runtime.create(settings)
    async with runtime.sessions() as session:
        tenant = await create_tenant(session, f"secrets-{uuid.uuid4().hex[:8]}")
        await session.commit()
    email = f"{tenant.name}@example.com"
    live = await issue_credential(
        runtime, tenant=tenant, email=email, environment=Environment.LIVE,
        tier=RateLimitTier.ENTERPRISE,
    )  # fmt: skip
    doomed = await issue_credential(runtime, tenant=tenant, email=email)
    await runtime.close()
    out, err = await cli(
        env, "keys", "create", "--tenant", tenant.name, "--email", email, "--name", "cli",
        "--environment", "test", "--scopes", ALL_SCOPES_TEXT, "--tier", "enterprise", "--json",
    )  # fmt: skip
    cli_output = [("", err)]
    test_key = json.loads(out)["key"]
    for name, key in (("test", test_key), ("live", live.key), ("revoked", doomed.key)):
        vault.add(f"the {name} API key", key, public_prefix=12)

    async def revoke() -> None:
        cli_output.append(await cli(env, "keys", "revoke", str(doomed.api_key.id)))

    keys = Keys(email, test_key, live.key, doomed.key, revoke)
    server_log = tmp_path / "serve.log"
    worker = WorkerProcess(settings, **extra)
    async with LoggedServe(env, server_log) as server, worker:  # the worker starts second
        async with httpx.AsyncClient(base_url=server.base, timeout=30) as browser:
            http = Recorder(httpx_sender(browser))
            await full_flow(http, keys, vault, chat_upstream, values["the_upstream_chat_key"])
        metrics = await asyncio.to_thread(server.scrape)

    served, worked = json_log_lines(server_log), json_log_lines(worker.log_path)
    assert any(entry["level"] == "debug" for entry in served), "serve logged nothing at DEBUG"
    assert any(entry["level"] == "debug" for entry in worked), "the worker logged no DEBUG"
    assert sum(entry.get("message") == "request" for entry in served) >= len(http.exchanges)
    assert 'strongroom_auth_failures_total{code="api_key_revoked"}' in metrics
    assert await stored_in_s3(storage, values["the_S3_secret_key"]) > 0

    leaks = leaks_in_responses(http.exchanges, vault) + leaks_in_metrics(metrics, vault)
    for label, path in (("serve log", server_log), ("worker log", worker.log_path)):
        for line in path.read_text(errors="replace").splitlines():
            if names := vault.found_in(line):
                leaks.append(f"{label} {names}: {line[:300]}")
    for out, err in cli_output:
        if names := vault.found_in(out + err):
            leaks.append(f"CLI output {names}: {(out + err)[:300]}")
    assert not leaks, "secrets leaked:\n" + "\n".join(leaks)
