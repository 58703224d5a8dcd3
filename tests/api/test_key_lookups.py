"""D16's key cache when it misses: requests that miss it together share one database
lookup, and none shares a lookup that began before an invalidation it came after."""

from __future__ import annotations

import asyncio

import pytest

from strongroom.admin import revoke_api_key
from strongroom.auth.authenticate import ApiKeyAuthenticator
from strongroom.auth.cache import KeyCache
from strongroom.problems import Problem


class SlowCountingReads:
    """The runtime's reads, counted, each answer held back a while after it was read (a
    lookup under load), so that other requests come while it is under way."""

    def __init__(self, reads) -> None:
        self._reads = reads
        self.lookups = 0
        self.read = asyncio.Event()

    async def all(self, statement, params):
        self.lookups += 1
        rows = await self._reads.all(statement, params)
        self.read.set()
        await asyncio.sleep(0.1)
        return rows


@pytest.fixture
def reads(runtime) -> SlowCountingReads:
    return SlowCountingReads(runtime.reads)


@pytest.fixture
def cache() -> KeyCache:
    return KeyCache(2.0)


@pytest.fixture
def authenticator(runtime, reads, cache) -> ApiKeyAuthenticator:
    return ApiKeyAuthenticator(reads, runtime.key_pepper, cache)


async def test_requests_that_miss_the_cache_together_share_one_lookup(
    authenticator, reads, credential
):
    principals = await asyncio.gather(
        *(authenticator.authenticate(credential.key) for _ in range(32))
    )
    assert reads.lookups == 1
    assert {principal.api_key_id for principal in principals} == {credential.api_key.id}
    await authenticator.authenticate(credential.key)  # cached now
    assert reads.lookups == 1


async def test_a_request_that_goes_away_does_not_take_the_lookup_with_it(
    authenticator, reads, credential
):
    first = asyncio.ensure_future(authenticator.authenticate(credential.key))
    second = asyncio.ensure_future(authenticator.authenticate(credential.key))
    await reads.read.wait()
    first.cancel()
    assert (await second).api_key_id == credential.api_key.id
    assert reads.lookups == 1


async def test_a_request_after_an_invalidation_does_not_join_a_lookup_begun_before_it(
    runtime, authenticator, reads, cache, credential
):
    before = asyncio.ensure_future(authenticator.authenticate(credential.key))
    await reads.read.wait()  # it has read the key as it was: not revoked
    await revoke_api_key(runtime, credential.api_key.id)
    cache.invalidate({"api_key_id": str(credential.api_key.id)})  # the event, to this cache
    with pytest.raises(Problem) as refused:
        await authenticator.authenticate(credential.key)
    assert refused.value.code == "api_key_revoked"
    assert reads.lookups == 2
    # The request that came before the revocation may still get in, as it could before.
    assert (await before).api_key_id == credential.api_key.id


async def test_a_lookup_that_fails_fails_every_request_waiting_for_it_and_is_not_kept(
    runtime, cache, credential
):
    class FailingReads:
        lookups = 0

        async def all(self, statement, params):
            self.lookups += 1
            await asyncio.sleep(0.05)
            raise ConnectionError("the database went away")

    reads = FailingReads()
    authenticator = ApiKeyAuthenticator(reads, runtime.key_pepper, cache)
    outcomes = await asyncio.gather(
        *(authenticator.authenticate(credential.key) for _ in range(4)), return_exceptions=True
    )
    assert all(isinstance(outcome, ConnectionError) for outcome in outcomes)
    assert reads.lookups == 1
    with pytest.raises(ConnectionError):
        await authenticator.authenticate(credential.key)  # a new lookup, not the failed one
    assert reads.lookups == 2
