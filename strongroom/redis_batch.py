"""Run one Lua script for many concurrent callers in shared round trips.

Every caller still gets its own atomic script execution; what is shared is the pipeline
that carries them. Calls made while a batch is on the wire wait for the next one, so under
load a worker sends one pipeline per round trip instead of one command per request. redis-py
spends about 70 us of CPU per lone EVALSHA and about 17 us per command in a pipeline of 32
(bench/RESULTS.md), and the rate-limit step runs on every request.
"""

from __future__ import annotations

import asyncio
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import NoScriptError

MAX_BATCH = 256


class ScriptBatcher:
    def __init__(self, redis: Redis, source: str) -> None:
        self._redis = redis
        self._script = redis.register_script(source)
        self._pending: list[tuple[list[Any], asyncio.Future]] = []
        self._sender: asyncio.Task | None = None

    async def __call__(self, keys: list[str], args: list[Any]) -> Any:
        """Run the script for `keys` and `args`; raises what Redis raised."""
        future = asyncio.get_running_loop().create_future()
        self._pending.append(([len(keys), *keys, *args], future))
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send())
        return await future

    async def _send(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
            try:
                results = await self._execute([arguments for arguments, _ in batch])
            except BaseException as error:  # the connection failed: every caller learns it
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                if isinstance(error, asyncio.CancelledError):
                    raise
                continue
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    if isinstance(result, Exception):
                        future.set_exception(result)
                    else:
                        future.set_result(result)

    async def _execute(self, calls: list[list[Any]]) -> list[Any]:
        for attempt in range(2):
            pipeline = self._redis.pipeline(transaction=False)
            for arguments in calls:
                pipeline.evalsha(self._script.sha, *arguments)
            results = await pipeline.execute(raise_on_error=False)
            if attempt == 0 and any(isinstance(result, NoScriptError) for result in results):
                await self._redis.script_load(self._script.script)  # Redis restarted: reload
                continue
            return results
        return results
