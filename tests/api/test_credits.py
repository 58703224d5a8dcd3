"""D21 and spec 1: credits. Every 2xx live call bills its cost (D19) in the same transaction
as its work; test calls are free; replays and failures are not billed; at zero, live calls
are refused; the ledger always sums to the balance."""

from __future__ import annotations

import asyncio
import uuid
from functools import partial

import pytest
from sqlalchemy import func, insert, select

from strongroom.admin import grant_credits
from strongroom.api.capability import Call
from strongroom.auth.principal import Principal
from strongroom.billing.credits import InsufficientCredits, WriteDebit, debit_alone
from strongroom.billing.models import CreditEntry
from strongroom.tenants.models import RateLimitTier, Tenant
from strongroom.tenants.partition import Environment

ME = "/api/v2/me"
PROJECTS = "/api/v2/vault/projects"
BODY = {"name": "Harbour Tower", "project_type": "commercial"}


async def balance_and_ledger(runtime, tenant_id) -> tuple[int, int, int]:
    """(balance, ledger sum, billed calls)."""
    async with runtime.sessions() as session:
        tenant = await session.get(Tenant, tenant_id)
        total, debits = (
            await session.exec(
                select(
                    func.sum(CreditEntry.amount), func.count().filter(CreditEntry.amount < 0)
                ).where(CreditEntry.tenant_id == tenant_id)
            )
        ).one()
    return tenant.credits, total, debits


async def live(make_credential, **options):
    return await make_credential(environment=Environment.LIVE, **options)


async def test_new_tenants_start_with_100000_credits_in_the_ledger(runtime, credential):
    assert await balance_and_ledger(runtime, credential.tenant.id) == (100_000, 100_000, 0)


async def test_live_calls_bill_their_cost(client, runtime, make_credential):
    credential = await live(make_credential)
    assert (await client.get(ME, headers=credential.headers)).status_code == 200
    assert (await client.post(PROJECTS, headers=credential.headers, json=BODY)).status_code == 201
    assert await balance_and_ledger(runtime, credential.tenant.id) == (99_997, 99_997, 2)


async def test_live_reads_that_query_the_database_are_billed_with_their_ledger_entry(
    client, runtime, make_credential
):
    """A GET's queries run without a transaction (issue 29); its debit and ledger entry still
    commit together, once per call."""
    credential = await live(make_credential)
    created = await client.post(PROJECTS, headers=credential.headers, json=BODY)
    project_id = (await created.get_json())["id"]
    listed = await client.get(f"{PROJECTS}?limit=5", headers=credential.headers)
    assert (await listed.get_json())["data"][0]["id"] == project_id
    fetched = await client.get(f"{PROJECTS}/{project_id}", headers=credential.headers)
    assert fetched.status_code == 200
    # the create costs 2, each read 1
    assert await balance_and_ledger(runtime, credential.tenant.id) == (99_996, 99_996, 3)


async def test_test_calls_are_free(client, runtime, credential):
    await client.get(ME, headers=credential.headers)
    await client.post(PROJECTS, headers=credential.headers, json=BODY)
    assert await balance_and_ledger(runtime, credential.tenant.id) == (100_000, 100_000, 0)


async def test_failed_calls_are_not_billed(client, runtime, make_credential):
    credential = await live(make_credential)
    await client.post(PROJECTS, headers=credential.headers, json={"name": ""})
    await client.get(f"{PROJECTS}/{uuid.uuid4()}", headers=credential.headers)
    assert await balance_and_ledger(runtime, credential.tenant.id) == (100_000, 100_000, 0)


async def test_an_idempotent_replay_is_not_billed_again(client, runtime, make_credential):
    credential = await live(make_credential)
    headers = {**credential.headers, "Idempotency-Key": "bill-once"}
    for _ in range(3):
        await client.post(PROJECTS, headers=headers, json=BODY)
    assert await balance_and_ledger(runtime, credential.tenant.id) == (99_998, 99_998, 1)


async def test_a_crashed_handler_neither_keeps_its_writes_nor_is_billed(
    probe_client, runtime, make_credential
):
    credential = await live(make_credential)
    assert (
        await probe_client.post("/api/v2/test/crash", headers=credential.headers)
    ).status_code == 500
    listed = await (await probe_client.get(PROJECTS, headers=credential.headers)).get_json()
    assert listed["data"] == []
    assert await balance_and_ledger(runtime, credential.tenant.id) == (
        99_999,
        99_999,
        1,
    )  # the list


async def test_concurrent_calls_are_each_billed_once(client, runtime, make_credential):
    credential = await live(make_credential, tier=RateLimitTier.ENTERPRISE)
    responses = await asyncio.gather(
        *(client.get(ME, headers=credential.headers) for _ in range(40)),
        *(client.post(PROJECTS, headers=credential.headers, json=BODY) for _ in range(10)),
    )
    assert all(r.status_code in (200, 201) for r in responses)
    assert await balance_and_ledger(runtime, credential.tenant.id) == (99_940, 99_940, 50)


async def test_at_zero_live_calls_are_payment_required_until_credits_are_granted(
    client, runtime, make_credential
):
    credential = await live(make_credential, credits=2)
    assert (await client.post(PROJECTS, headers=credential.headers, json=BODY)).status_code == 201
    refused = await client.get(ME, headers=credential.headers)  # cached key, yet refused now
    assert (await refused.get_json())["code"] == "payment_required"
    await grant_credits(runtime, str(credential.tenant.id), 10, "top-up")
    assert (await client.get(ME, headers=credential.headers)).status_code == 200
    assert await balance_and_ledger(runtime, credential.tenant.id) == (9, 9, 2)


async def test_a_debit_at_zero_is_refused_whole_and_leaves_no_ledger_entry(
    runtime, make_credential
):
    """billing.credits: on PostgreSQL the balance's UPDATE and the ledger's INSERT are one
    statement (the INSERT takes its row from what the UPDATE returned), so a refused debit
    writes neither, and an accepted one both, under its request id."""
    # An email of its own: the tenant is left owing, and an OAuth login elsewhere in the
    # session's database finds its user by email.
    credential = await live(make_credential, credits=1, email=f"{uuid.uuid4().hex}@example.com")
    tenant_id = credential.tenant.id
    bill = partial(debit_alone, runtime.reads, runtime.sessions, tenant_id, 3, reason="meta.me")
    assert await bill(request_id="req_first") == -2  # the last call may take it below zero
    with pytest.raises(InsufficientCredits):
        await bill(request_id="req_second")
    assert await balance_and_ledger(runtime, tenant_id) == (-2, -2, 1)
    async with runtime.sessions() as session:
        entry = (
            await session.exec(
                select(CreditEntry).where(
                    CreditEntry.tenant_id == tenant_id, CreditEntry.amount < 0
                )
            )
        ).one()[0]
    assert (entry.tenant_id, entry.amount, entry.request_id) == (tenant_id, -3, "req_first")


async def test_reads_billed_at_once_share_a_statement_and_each_keep_their_entry(
    runtime, make_credential
):
    """billing.credits._ReadDebits: on PostgreSQL the reads of one tenant billed while its
    statement runs share the next one (so they do not queue one by one behind the
    balance's row lock); each still has its own ledger entry under its own request id."""
    credential = await live(make_credential)
    tenant_id = credential.tenant.id
    balances = await asyncio.gather(
        *(
            debit_alone(
                runtime.reads, runtime.sessions, tenant_id, 1, reason="meta.me", request_id=f"r{n}"
            )
            for n in range(20)
        )
    )
    assert min(balances) == 99_980
    assert await balance_and_ledger(runtime, tenant_id) == (99_980, 99_980, 20)
    async with runtime.sessions() as session:
        entries = (
            await session.exec(
                select(CreditEntry.request_id, CreditEntry.created_at).where(
                    CreditEntry.tenant_id == tenant_id, CreditEntry.amount == -1
                )
            )
        ).all()
    assert sorted(request_id for request_id, _ in entries) == sorted(f"r{n}" for n in range(20))
    if runtime.reads.on_postgresql:  # SQLite bills each in a transaction of its own
        statements = len({created_at for _, created_at in entries})  # one time per statement
        assert statements < 20


def a_call(runtime, credential) -> Call:
    """A call of the credential's, as the request path makes one for a handler."""
    principal = Principal(
        auth_method="api_key",
        user_id=credential.user.id,
        tenant_id=credential.tenant.id,
        email=credential.user.email,
        environment=Environment.LIVE,
        rate_limit_tier="standard",
        scopes=frozenset(),
    )
    return Call(principal=principal, services=runtime)


@pytest.mark.parametrize("transaction", ["open", "none"])
async def test_a_write_refused_at_zero_by_its_debit_commits_none_of_its_work(
    runtime, make_credential, transaction
):
    """billing.credits.WriteDebit: the debit is the last statement of the call's
    transaction, sent with its COMMIT (db/together.py); at zero it aborts the transaction,
    so the call's work is not committed either: work its session flushed first (a
    transaction open), or work left for the commit alone (`write_at_commit`)."""

    def add_work(call, name):
        if transaction == "open":
            call.session.add(Tenant(name=name))  # still unflushed
        else:
            call.write_at_commit(insert(Tenant.__table__), Tenant(name=name).model_dump())

    credential = await live(make_credential, credits=0, email=f"{uuid.uuid4().hex}@example.com")
    work = f"work-{uuid.uuid4().hex}"
    call = a_call(runtime, credential)
    add_work(call, work)
    debit = WriteDebit(credential.tenant.id, 2, reason="vault.create_project", request_id=work)
    with pytest.raises(InsufficientCredits):
        await call.commit(debit)
    await call.close()
    async with runtime.sessions() as session:
        assert (await session.exec(select(Tenant).where(Tenant.name == work))).first() is None
    assert await balance_and_ledger(runtime, credential.tenant.id) == (0, 0, 0)

    granted = await live(make_credential, email=f"{uuid.uuid4().hex}@example.com")
    call = a_call(runtime, granted)
    add_work(call, work)
    debit = WriteDebit(granted.tenant.id, 2, reason="vault.create_project", request_id=f"{work}-1")
    assert await call.commit(debit) == [99_998]
    await call.close()
    async with runtime.sessions() as session:
        assert (await session.exec(select(Tenant).where(Tenant.name == work))).first()
    assert await balance_and_ledger(runtime, granted.tenant.id) == (99_998, 99_998, 1)
