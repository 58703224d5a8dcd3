"""Scripts of concurrent callers in shared round trips (strongroom/redis_batch.py), on the
real Redis: each caller gets its own reply or error (StoreUnavailable, from what Redis
answered or why it could not be reached), scripts Redis forgot are loaded again, and the
batcher does not keep its client alive."""

from __future__ import annotations

import asyncio
import gc
import uuid
import weakref

import pytest
from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError

from strongroom.redis_batch import _pack, batched_script
from strongroom.unavailable import StoreUnavailable
from tests.conftest import REDIS_URL
from tests.processes import free_port

ECHO = "return ARGV[1]"
# Busy for ARGV[1] seconds of Redis's clock, then answers.
SPIN = """
local started = redis.call('TIME')
local limit = tonumber(ARGV[1]) * 1000000
repeat
  local now = redis.call('TIME')
until (now[1] - started[1]) * 1000000 + (now[2] - started[2]) >= limit
return 'done'
"""
FAIL_ON_BOOM = "if ARGV[1] == 'boom' then return redis.error_reply('boom') end return ARGV[1]"


@pytest.fixture
async def redis():
    client = Redis.from_url(REDIS_URL)
    yield client
    await client.aclose()


async def test_concurrent_calls_share_a_round_trip_and_each_gets_its_own_reply(redis):
    echo = batched_script(redis, ECHO)
    fail = batched_script(redis, FAIL_ON_BOOM)
    key = f"test:{uuid.uuid4().hex}"
    results = await asyncio.gather(
        echo([key], ["one"]),
        fail([key], ["boom"]),
        fail([key], ["two"]),
        return_exceptions=True,
    )
    assert results[0] == b"one"
    assert isinstance(results[1], StoreUnavailable)
    assert isinstance(results[1].__cause__, ResponseError) and "boom" in str(results[1].__cause__)
    assert results[1].reason == "ResponseError"
    assert results[2] == b"two"


async def test_scripts_redis_forgot_are_loaded_again(redis):
    echo = batched_script(redis, ECHO)
    key = f"test:{uuid.uuid4().hex}"
    assert await echo([key], ["before"]) == b"before"
    await redis.script_flush()  # as after a restart of Redis
    first, second = await asyncio.gather(echo([key], ["after"]), echo([key], ["again"]))
    assert (first, second) == (b"after", b"again")


async def test_the_batcher_lets_its_client_go():
    client = Redis.from_url(REDIS_URL)
    echo = batched_script(client, ECHO)
    assert await echo(["test:gone"], ["x"]) == b"x"
    await client.aclose()
    gone = weakref.ref(client)
    del client, echo
    gc.collect()
    assert gone() is None


async def test_an_unreachable_redis_is_store_unavailable():
    client = Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_connect_timeout=0.5)
    try:
        with pytest.raises(StoreUnavailable) as raised:
            await batched_script(client, ECHO)(["test:away"], ["x"])
        assert isinstance(raised.value.__cause__, RedisError | OSError)
    finally:
        await client.aclose()


async def test_a_round_trip_is_bounded_by_the_clients_socket_timeout_and_the_next_one_reconnects():
    """One timer for the whole round trip (the connection's own timeouts are left off):
    a script that outlasts the client's socket timeout fails its caller, and the batcher's
    next call gets a fresh connection rather than the late reply."""
    client = Redis.from_url(REDIS_URL, socket_timeout=0.05)
    spin = batched_script(client, SPIN)
    echo = batched_script(client, ECHO)
    try:
        with pytest.raises(StoreUnavailable) as raised:
            await spin(["test:spin"], ["0.25"])
        assert isinstance(raised.value.__cause__, TimeoutError)
        await asyncio.sleep(0.25)  # the script ends; its reply went to a closed connection
        assert await echo(["test:after"], ["fresh"]) == b"fresh"
    finally:
        await client.aclose()


@pytest.mark.parametrize(
    "command",
    [
        (b"EVALSHA", "a" * 40, 1, "rl:ключ", "0.0016666666666666668", 100, 0),
        (b"EVALSHA", b"sha", 2, "k1", "k2", b"bytes \r\n with CRLF \x00", -5, ""),
    ],
)
def test_commands_are_encoded_as_redis_py_encodes_them(command):
    from redis.asyncio.connection import Connection

    expected = b"".join(Connection().pack_commands([command]))
    assert _pack([command, command]) == expected * 2


@pytest.mark.parametrize("argument", [1.5, None, True, ["list"]])
def test_an_argument_redis_py_would_convert_silently_is_refused(argument):
    with pytest.raises(TypeError):
        _pack([(b"EVALSHA", b"sha", 0, argument)])
