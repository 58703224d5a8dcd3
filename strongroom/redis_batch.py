"""Run Lua scripts for many concurrent callers in shared round trips.

Every caller still gets its own atomic script execution; what is shared is the round trip
that carries them. Calls made while a batch is on the wire wait for the next one, so under
load a worker sends one batch per round trip instead of one command per request: the
rate-limit step of every request and the idempotency lock of every keyed write ride
together. redis-py spends about 70 us of CPU per lone EVALSHA and about 17 us per command in
a pipeline of 32 (bench/RESULTS.md).

A batch is written to one connection this process keeps for it, and its replies are read
back in order: redis-py's pipeline object, and taking a connection from the pool and giving
it back, cost about 50 us of CPU a batch more than the commands themselves (issue 29).
The connection is redis-py's own: it reconnects by itself, checks its health, and drops
itself on a read error or timeout; a batch that fails on a stale connection is sent once
more (the client's retry policy, strongroom/redis_client.py).

Two things redis-py would do per command are done here per batch instead: the client's
socket timeout bounds the whole round trip, one timer, where redis-py arms one for the write
and one for each reply; and the commands are encoded here (`_pack`: RESP for the strings,
bytes and integers scripts take), where redis-py's encoder inspects every argument in
Python. That took a call's CPU from 49-69 to 33-41 us alone, and from 11-15 to 6 us with 32
in flight (bench/RESULTS.md, issue 29; its retired bench/redis_batch_bench.py).

It is the Redis-backed stores' boundary for their scripts: what Redis answered with an error,
or why it could not be reached, reaches their callers as `StoreUnavailable`. Only those
stores import this module, when they are made (a process without Redis never loads redis-py,
issue 29).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.connection import Connection, ConnectionPool
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError, RedisError, ResponseError

from strongroom.unavailable import StoreUnavailable

MAX_BATCH = 256

Script = Callable[[list[str], list[Any]], Awaitable[Any]]

_batchers: weakref.WeakKeyDictionary[Redis, ScriptBatcher] = weakref.WeakKeyDictionary()


def batched_script(redis: Redis, source: str) -> Script:
    """`source` as a script whose calls share round trips with every other script of
    `redis` run through here: `await script(keys, args)` returns the script's reply, or
    raises StoreUnavailable from what Redis answered (or why it could not be reached)."""
    batcher = _batchers.get(redis)
    if batcher is None:
        batcher = _batchers[redis] = ScriptBatcher(redis.connection_pool)
    return batcher.script(redis.register_script(source))


class ScriptBatcher:
    """The batches of one Redis client's pool. It holds the pool, not the client: the
    client is the key it is found by, and must be free to go."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool
        self._pending: list[tuple[AsyncScript, list[Any], asyncio.Future]] = []
        self._sender: asyncio.Task | None = None
        self._connection: Connection | None = None
        self._timeout: float | None = pool.connection_kwargs.get("socket_timeout")

    def script(self, script: AsyncScript) -> Script:
        async def run(keys: list[str], args: list[Any]) -> Any:
            future = asyncio.get_running_loop().create_future()
            self._pending.append((script, [len(keys), *keys, *args], future))
            if self._sender is None or self._sender.done():
                self._sender = asyncio.create_task(self._send())
            try:
                return await future
            except (RedisError, OSError) as error:
                raise StoreUnavailable("Redis could not run the script") from error

        return run

    async def _send(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
            try:
                async with asyncio.timeout(self._timeout):  # the whole round trip, one timer
                    results = await self._execute([(script, args) for script, args, _ in batch])
            except BaseException as error:  # the connection failed: every caller learns it
                for _, _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                if isinstance(error, asyncio.CancelledError):
                    raise
                continue
            for (_, _, future), result in zip(batch, results, strict=True):
                if not future.done():
                    if isinstance(result, Exception):
                        future.set_exception(result)
                    else:
                        future.set_result(result)

    async def _execute(self, calls: list[tuple[AsyncScript, list[Any]]]) -> list[Any]:
        connection = await self._held_connection()
        commands = [(b"EVALSHA", script.sha, *arguments) for script, arguments in calls]
        results = await connection.retry.call_with_retry(
            lambda: _round_trip(connection, commands), lambda _: connection.disconnect()
        )
        missing = {
            script.script for (script, _), result in zip(calls, results, strict=True)
            if isinstance(result, NoScriptError)
        }  # fmt: skip
        if not missing:
            return results
        # Redis restarted and forgot them: load them, then send those calls again.
        await _round_trip(connection, [(b"SCRIPT", b"LOAD", source) for source in missing])
        again = [index for index, result in enumerate(results) if isinstance(result, NoScriptError)]
        retried = await connection.retry.call_with_retry(
            lambda: _round_trip(connection, [commands[index] for index in again]),
            lambda _: connection.disconnect(),
        )
        for index, result in zip(again, retried, strict=True):
            results[index] = result
        return results

    async def _held_connection(self) -> Connection:
        """This batcher's connection, taken from the pool once and kept (it is closed with
        the pool: `Redis.aclose`). It is never given back, so its own timeout can be left
        off: `_send` bounds each round trip with the client's."""
        if self._connection is None:
            connection = await self._pool.get_connection()
            connection.socket_timeout = None
            self._connection = connection
        return self._connection


async def _round_trip(connection: Connection, commands: list[tuple[Any, ...]]) -> list[Any]:
    """Send `commands` at once and read their replies in order; a reply that is an error
    comes back as the exception, for its caller alone."""
    await connection.send_packed_command(_pack(commands))
    results: list[Any] = []
    for _ in commands:
        try:
            results.append(await connection.read_response())
        except ResponseError as error:
            results.append(error)
    return results


def _pack(commands: list[tuple[Any, ...]]) -> bytes:
    """`commands` in the Redis protocol (RESP arrays of bulk strings). Arguments are str
    (sent as UTF-8), bytes or int, which is all a script's keys and arguments are here."""
    out = bytearray()
    for command in commands:
        out += b"*%d\r\n" % len(command)
        for argument in command:
            if isinstance(argument, str):
                argument = argument.encode()
            elif isinstance(argument, int) and not isinstance(argument, bool):
                argument = b"%d" % argument
            elif not isinstance(argument, bytes):
                raise TypeError(f"a script argument is str, bytes or int, not {argument!r}")
            out += b"$%d\r\n%b\r\n" % (len(argument), argument)
    return bytes(out)
