"""The admin CLI (issue 2, item 3): tenants and keys against the same database the API reads."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from datetime import timedelta

import pytest
from click.testing import CliRunner
from sqlmodel import func, select

from strongroom.cli import main
from strongroom.corpus.models import DocumentChunk
from tests.embeddings.fake_upstream import FakeEmbeddingsUpstream


@pytest.fixture
def cli_env(settings) -> dict[str, str]:
    return {
        "STRONGROOM_DATABASE_URL": settings.resolved_database_url,
        "STRONGROOM_KEY_PEPPER": settings.key_pepper.get_secret_value(),
        "STRONGROOM_SECRET_KEY": settings.secret_key.get_secret_value(),
        "STRONGROOM_DATA_DIR": str(settings.data_dir),
        "STRONGROOM_BASE_URL": settings.base_url,
        "STRONGROOM_EMBEDDINGS_PROVIDER": settings.embeddings_provider,
    }


@pytest.fixture
def cli(cli_env):
    """Run `strongroom ...` in a worker thread (it runs its own event loop)."""
    env = cli_env

    async def invoke(*args: str, **more_env: str):
        runner = CliRunner()
        return await asyncio.to_thread(runner.invoke, main, list(args), env=env | more_env)

    return invoke


async def create_tenant(cli, **options) -> dict:
    name = f"cli-{uuid.uuid4().hex[:8]}"
    args = ["tenants", "create", name, "--email", "Admin@Example.com", "--json"]
    for option, value in options.items():
        args += [f"--{option}", str(value)]
    result = await cli(*args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


async def create_key(cli, tenant: str, *extra: str) -> dict:
    result = await cli(
        "keys",
        "create",
        "--tenant",
        tenant,
        "--email",
        "dev@example.com",
        "--name",
        "ci",
        "--environment",
        "test",
        "--scopes",
        "vault:read vault:write",
        "--json",
        *extra,
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


async def test_tenants_create_sets_tier_credits_and_first_user(cli):
    tenant = await create_tenant(cli, tier="pro", credits=500)
    assert tenant["rate_limit_tier"] == "pro"
    assert tenant["credits"] == 500
    assert tenant["email"] == "admin@example.com"


async def test_tenants_start_with_100000_credits(cli):
    assert (await create_tenant(cli))["credits"] == 100_000


async def test_keys_create_prints_a_working_key_once(cli, client):
    tenant = await create_tenant(cli)
    created = await create_key(cli, tenant["name"], "--tier", "free")
    assert created["key"].startswith("ak_test_") and len(created["key"]) == 60
    assert created["prefix"] == created["key"][:12]
    assert created["scopes"] == ["vault:read", "vault:write"]
    response = await client.get("/api/v2/me", headers={"Authorization": f"Bearer {created['key']}"})
    body = await response.get_json()
    assert body["api_key_id"] == created["id"]
    assert body["rate_limit_tier"] == "free"


async def test_keys_create_builds_the_database_alone_not_a_runtime(cli, cli_env):
    """A command that only writes rows imports neither a runtime's stores nor Redis
    (issue 29): `keys create` started in twice the time it needs."""
    tenant = await create_tenant(cli)
    program = (
        "import sys\nfrom strongroom.cli import main\n"
        f"main(['keys', 'create', '--tenant', {tenant['name']!r}, '--email', 'd@example.com',"
        " '--name', 'n', '--environment', 'test', '--scopes', 'vault:read'],"
        " standalone_mode=False)\n"
        "print(sorted({'strongroom.runtime', 'redis', 'quart'} & set(sys.modules)))"
    )
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", program],
        env=os.environ | cli_env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert result.stdout.strip().splitlines()[-1] == "[]"


async def test_keys_create_plain_output_is_the_key_alone(cli):
    tenant = await create_tenant(cli)
    result = await cli(
        "keys",
        "create",
        "--tenant",
        tenant["tenant_id"],
        "--email",
        "a@example.com",
        "--name",
        "n",
        "--environment",
        "live",
        "--scopes",
        "vault:read",
    )
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0].startswith("ak_live_")


async def test_keys_list_shows_prefixes_never_keys(cli):
    tenant = await create_tenant(cli)
    created = await create_key(cli, tenant["name"])
    for args in (["--json"], []):
        result = await cli("keys", "list", "--tenant", tenant["name"], *args)
        assert result.exit_code == 0
        assert created["prefix"] in result.output
        assert created["key"] not in result.output
        assert created["key"][12:20] not in result.output


async def test_keys_list_shows_each_keys_tier_and_scopes(cli):
    """Issue 44 point 15: the plain listing says what a key may do and how fast: its scopes,
    and its tier (its own, or its tenant's when it was given none)."""
    tenant = await create_tenant(cli, tier="pro")
    own = await create_key(cli, tenant["name"], "--tier", "free")
    inherited = await create_key(cli, tenant["name"])
    result = await cli("keys", "list", "--tenant", tenant["name"])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines()}
    assert "tier free " in lines[own["id"]]
    assert "tier pro (the tenant's) " in lines[inherited["id"]]
    for key in (own, inherited):
        assert "scopes vault:read,vault:write " in lines[key["id"]]


async def test_keys_revoke_makes_the_api_refuse_the_key(cli, client):
    tenant = await create_tenant(cli)
    created = await create_key(cli, tenant["name"])
    assert (await cli("keys", "revoke", created["id"])).exit_code == 0
    response = await client.get("/api/v2/me", headers={"Authorization": f"Bearer {created['key']}"})
    assert (await response.get_json())["code"] == "api_key_revoked"


async def test_keys_create_with_expiry_in_the_past_gives_expired_key(cli, client):
    tenant = await create_tenant(cli)
    created = await create_key(cli, tenant["name"], "--expires-at", "2020-01-01T00:00:00+00:00")
    assert created["expires_at"] == "2020-01-01T00:00:00+00:00"
    response = await client.get("/api/v2/me", headers={"Authorization": f"Bearer {created['key']}"})
    assert (await response.get_json())["code"] == "api_key_expired"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scopes", "vault:admin"], "unknown scopes"),
        (["--expires-at", "tomorrow"], "ISO 8601"),
        (["--expires-at", "2030-01-01T00:00:00"], "UTC offset"),
    ],
)
async def test_keys_create_refuses_bad_options(cli, args, message):
    tenant = await create_tenant(cli)
    base = [
        "keys",
        "create",
        "--tenant",
        tenant["name"],
        "--email",
        "a@example.com",
        "--name",
        "n",
        "--environment",
        "test",
        "--scopes",
        "vault:read",
    ]
    result = await cli(*base, *args)
    assert result.exit_code != 0
    assert message in result.output


async def test_unknown_tenant_is_a_clean_error(cli):
    result = await cli("keys", "list", "--tenant", "no-such-tenant")
    assert result.exit_code == 1
    assert "no tenant" in result.output
    assert "Traceback" not in result.output


async def test_revoking_an_unknown_key_is_a_clean_error(cli):
    result = await cli("keys", "revoke", str(uuid.uuid4()))
    assert result.exit_code == 1
    assert "no API key" in result.output


async def test_openapi_command_prints_the_served_document(cli, client):
    result = await cli("openapi")
    assert result.exit_code == 0
    served = await (await client.get("/api/v2/openapi.json")).get_json()
    assert json.loads(result.stdout) == served


async def test_tenants_grant_credits_adds_to_the_balance(cli):
    tenant = await create_tenant(cli, credits=5)
    result = await cli("tenants", "grant-credits", tenant["name"], "1000", "--reason", "invoice 7")
    assert result.exit_code == 0, result.output
    assert "balance 1005" in result.output


@pytest.mark.parametrize("amount", ["0", "-5", "many"])
async def test_tenants_grant_credits_refuses_non_positive_amounts(cli, amount):
    tenant = await create_tenant(cli)
    result = await cli("tenants", "grant-credits", tenant["name"], amount)
    assert result.exit_code == 2


async def test_reindex_reports_how_many_passages_changed(cli):
    result = await cli("reindex")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("passages reindexed: ")


async def test_reembed_without_a_provider_says_one_must_be_configured(cli):
    result = await cli("reembed")
    assert result.exit_code == 1
    assert "STRONGROOM_EMBEDDINGS_PROVIDER" in result.output


async def test_reembed_embeds_what_is_missing_then_nothing_more(cli, runtime):
    """Against the FAKE embeddings upstream of tests/embeddings (no model can run as a
    service here): every passage lacking this model's vector is embedded once."""
    async with runtime.sessions() as session:
        passages = (await session.exec(select(func.count()).select_from(DocumentChunk))).one()
    async with FakeEmbeddingsUpstream() as upstream:
        provider = {
            "STRONGROOM_EMBEDDINGS_PROVIDER": "openai",
            "STRONGROOM_EMBEDDINGS_OPENAI_BASE_URL": upstream.base_url,
            "STRONGROOM_EMBEDDINGS_OPENAI_MODEL": f"fake-{uuid.uuid4().hex[:8]}",
        }
        first = await cli("reembed", **provider)
        again = await cli("reembed", **provider)
    assert first.exit_code == 0, first.output
    assert first.output == f"passages embedded: {passages}\n"
    assert again.output == "passages embedded: 0\n"


async def test_tenants_erase_refuses_a_tenant_that_is_not_deleted(
    cli, make_credential, runtime, tmp_path
):
    """Issue 42, item 5: only a deleted tenant's data is erased; nothing is touched."""
    from tests.test_tenant_erasure import ERASED, counts, seed

    credential = await make_credential()
    await seed(runtime, credential, tmp_path)
    before = await counts(runtime, credential.tenant.id, ERASED)
    result = await cli("tenants", "erase", credential.tenant.name)
    assert result.exit_code == 1
    assert "is not deleted" in result.output and "Traceback" not in result.output
    assert await counts(runtime, credential.tenant.id, ERASED) == before


async def test_tenants_erase_erases_a_deleted_tenant_at_once_and_says_what(
    cli, make_credential, runtime, tmp_path
):
    """Due in 30 days, erased now; the ledger, users and keys stay."""
    from tests.test_tenant_erasure import ERASED, KEPT, counts, delete, seed, stored

    credential = await make_credential()
    await seed(runtime, credential, tmp_path)
    kept = await counts(runtime, credential.tenant.id, KEPT)
    await delete(runtime, credential.tenant.id, erasure_days=30)

    result = await cli("tenants", "erase", credential.tenant.name)

    assert result.exit_code == 0, result.output
    assert f"erased tenant {credential.tenant.name} ({credential.tenant.id})" in result.output
    assert "2 documents, 2 template fills, 2 workflow runs" in result.output
    assert "2 conversations, 2 projects" in result.output
    assert set((await counts(runtime, credential.tenant.id, ERASED)).values()) == {0}
    assert await stored(runtime, credential.tenant.id) == []
    assert await counts(runtime, credential.tenant.id, KEPT) == kept
    result = await cli("tenants", "erase", str(credential.tenant.id))  # again: nothing left
    assert result.exit_code == 0 and "0 documents" in result.output


async def test_tenants_delete_ends_access_at_once_and_sets_the_erasure_due(
    cli, make_credential, runtime, tmp_path
):
    """Issue 52, a first hour: on the embedded default no command deleted a tenant (only the
    operator's Tenant deletion did), so its erasure could not be tried."""
    from strongroom.auth.models import ApiKey
    from strongroom.tenants.models import Tenant
    from tests.test_tenant_erasure import ERASED, KEPT, counts, seed

    credential = await make_credential()
    await seed(runtime, credential, tmp_path)
    kept = await counts(runtime, credential.tenant.id, KEPT)

    result = await cli("tenants", "delete", credential.tenant.name)

    assert result.exit_code == 0, result.output
    assert f"deleted tenant {credential.tenant.name} ({credential.tenant.id})" in result.output
    assert "API keys and 0 OAuth grants revoked" in result.output
    assert "erasure is due" in result.output
    async with runtime.sessions() as session:
        tenant = await session.get(Tenant, credential.tenant.id)
        keys = (await session.exec(select(ApiKey).where(ApiKey.tenant_id == tenant.id))).all()
    assert tenant.suspended and tenant.deleted_at is not None
    assert tenant.erasure_due_at == tenant.deleted_at + timedelta(days=30)
    assert keys and all(key.revoked_at is not None for key in keys)
    assert await counts(runtime, credential.tenant.id, KEPT) == kept  # nothing erased yet
    # The erasure can be tried now.
    erased = await cli("tenants", "erase", credential.tenant.name)
    assert erased.exit_code == 0, erased.output
    assert set((await counts(runtime, credential.tenant.id, ERASED)).values()) == {0}
    again = await cli("tenants", "delete", str(credential.tenant.id))
    assert again.exit_code == 0 and "its data was erased already" in again.output
    unknown = await cli("tenants", "delete", "no-such-tenant")
    assert unknown.exit_code == 1 and "no tenant" in unknown.output
