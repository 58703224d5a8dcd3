"""CPU per script call through strongroom/redis_batch.py, on the local Redis (issue 29):
the rate limit's script, called one at a time (each call its own round trip) and 32 at a
time (calls share round trips, as under load), with the round trips counted.

    .venv/bin/python bench/redis_batch_bench.py [--calls 5000]

CPU time of this process only (Redis's own is not in it); compare runs made one after the
other on the same machine.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from redis.asyncio import Redis

import strongroom.redis_batch as redis_batch
from strongroom.ratelimit.buckets import _TAKE, Tier

REDIS_URL = "redis://127.0.0.1:6379/0"


async def measure(calls: int, in_flight: int) -> tuple[float, float]:
    """CPU µs per call, and calls per round trip."""
    client = Redis.from_url(REDIS_URL, socket_timeout=1.0)
    script = redis_batch.batched_script(client, _TAKE)
    tier = Tier("bench", 60_000_000, 1_000_000)
    key = f"bench:rl:{uuid.uuid4().hex}"
    arguments = [repr(tier.per_ms), tier.burst, 1]
    round_trips = 0
    original = redis_batch._round_trip

    async def counted(connection, commands):
        nonlocal round_trips
        round_trips += 1
        return await original(connection, commands)

    left = calls

    async def caller() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await script([key], arguments)

    try:
        for _ in range(200):  # a connection, the script loaded, the code warm
            await script([key], arguments)
        redis_batch._round_trip = counted
        cpu = time.process_time()
        await asyncio.gather(*(caller() for _ in range(in_flight)))
        cpu = time.process_time() - cpu
    finally:
        redis_batch._round_trip = original
        await client.delete(key)
        await client.aclose()
    return cpu / calls * 1e6, calls / round_trips


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    print("| Calls in flight | CPU µs per call | calls per round trip |")
    print("|---|---|---|")
    for in_flight in (1, 32):
        micros, per_trip = asyncio.run(measure(args.calls, in_flight))
        print(f"| {in_flight} | {micros:.1f} | {per_trip:.1f} |")


if __name__ == "__main__":
    main()
