"""What one request costs the process, without a server or a network: N requests per
endpoint driven straight into the app's ASGI callable (issue 29). This process's CPU time per
request swings much less than wrk's numbers and is only ours, so a change to the request path
is compared with it before and after. `--concurrency` keeps requests in flight at once, as
under load (Redis round trips then carry several requests' scripts); `--profile` prints
cProfile's top entries. The endpoints and seed are bench/http_bench.py's.

    .venv/bin/python bench/request_cost.py --requests 2000            # CPU µs per request
    .venv/bin/python bench/request_cost.py --requests 8000 --concurrency 32   # as under load
    .venv/bin/python bench/request_cost.py --requests 1000 --profile --only list
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from bench import stack
from bench.http_bench import prepare
from strongroom.app import create_app

CREATE_BODY = b'{"name": "Bench", "project_type": "other"}'


def endpoints(key: str, live_key: str) -> dict[str, tuple[str, str, list, bytes]]:
    auth = (b"authorization", f"Bearer {key}".encode())
    live = (b"authorization", f"Bearer {live_key}".encode())
    json_type = (b"content-type", b"application/json")
    return {
        "healthz": ("GET", "/healthz", [], b""),
        "me": ("GET", "/api/v2/me", [auth], b""),
        "me_live": ("GET", "/api/v2/me", [live], b""),  # billed (D21)
        "list": ("GET", "/api/v2/vault/projects", [auth], b"limit=25"),
        "create": ("POST", "/api/v2/vault/projects", [auth, json_type], CREATE_BODY),
        "create_idempotent": ("POST", "/api/v2/vault/projects", [auth, json_type], CREATE_BODY),
    }


async def one_request(app, method: str, path: str, headers, body_or_query: bytes, n: int) -> int:
    """Send one request into `app`; returns its status."""
    headers = [(b"host", b"bench"), *headers]
    query, body = (body_or_query, b"") if method == "GET" else (b"", body_or_query)
    if method != "GET":
        headers.append((b"content-length", str(len(body)).encode()))
    if n >= 0:
        headers.append((b"idempotency-key", f"bench-{uuid.uuid4().hex}".encode()))
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
             "http_version": "1.1", "method": method, "scheme": "http", "path": path,
             "raw_path": path.encode(), "query_string": query, "root_path": "",
             "headers": headers, "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
             "extensions": {}}  # fmt: skip
    sent = False
    done = asyncio.Event()
    status = [0]

    async def receive() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            status[0] = message["status"]
        elif message["type"] == "http.response.body" and not message.get("more_body"):
            done.set()

    await app(scope, receive, send)
    return status[0]


async def concurrently(tasks: int, requests: int, send) -> None:
    """`requests` calls of `send()`, `tasks` at a time."""
    left = requests

    async def one_task() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await send()

    await asyncio.gather(*(one_task() for _ in range(tasks)))


async def floor_costs(requests: int, database_url: str, tenant_id: str) -> dict[str, float]:
    """CPU µs per request of bench/floor_app.py's `GET /` and its list through psycopg alone."""
    os.environ.update(
        FLOOR_DATABASE_URL=database_url, FLOOR_TENANT_ID=tenant_id, FLOOR_ENVIRONMENT="test"
    )
    from bench.floor_app import app as floor

    await floor.startup()
    costs = {}
    try:
        for label, path in (("bare Quart app", "/"), ("list, psycopg alone", "/projects")):
            for _ in range(20):
                await one_request(floor.asgi_app, "GET", path, [], b"", -1)
            cpu = time.process_time()
            for _ in range(requests):
                await one_request(floor.asgi_app, "GET", path, [], b"", -1)
            costs[f"floor: {label}"] = (time.process_time() - cpu) / requests * 1e6
    finally:
        await floor.shutdown()
    return costs


async def run(args: argparse.Namespace, deployed: stack.Deployment) -> dict[str, float]:
    key, live_key, tenant_id, _ = await prepare(deployed.settings)
    app = create_app(deployed.settings.model_copy(update={"log_level": "WARNING"}))
    await app.startup()
    asgi = app.asgi_app
    results: dict[str, float] = {}
    try:
        table = endpoints(key, live_key)
        chosen = [name for name in args.only or table if name in table]
        for name in chosen:  # warm every endpoint: caches, prepared statements, the pool
            method, path, headers, payload = table[name]
            for _ in range(20):
                idem = 0 if name == "create_idempotent" else -1
                status = await one_request(asgi, method, path, headers, payload, idem)
                assert status < 300, f"{name}: {status}"
        if args.only is None or "bare" in args.only:
            results.update(await floor_costs(args.requests, deployed.admin_url, tenant_id))
        profiler = cProfile.Profile() if args.profile else None
        for name in chosen:
            method, path, headers, payload = table[name]
            idem = 0 if name == "create_idempotent" else -1
            if profiler:
                profiler.enable()
            cpu = time.process_time()
            await concurrently(
                args.concurrency,
                args.requests,
                lambda: one_request(asgi, method, path, headers, payload, idem),  # noqa: B023
            )
            results[name] = (time.process_time() - cpu) / args.requests * 1e6
            if profiler:
                profiler.disable()
                out = io.StringIO()
                pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(args.top)
                print(f"\n## {name}\n{out.getvalue()}")
                profiler = cProfile.Profile()
    finally:
        await app.shutdown()
    return results


def main() -> None:
    arguments = stack.parser(__doc__)
    arguments.add_argument("--requests", type=int, default=1000, help="per endpoint")
    arguments.add_argument("--only", action="append", help="an endpoint (repeatable)")
    arguments.add_argument("--concurrency", type=int, default=1, help="requests in flight at once")
    arguments.add_argument("--profile", action="store_true", help="print cProfile's top entries")
    arguments.add_argument("--top", type=int, default=25)
    args = arguments.parse_args()
    with stack.deployment("postgresql", "cost") as deployed:
        results = asyncio.run(run(args, deployed))
    print(*stack.table_head("| Endpoint | CPU µs per request (this process) |"), sep="\n")
    for endpoint, micros in results.items():
        print(stack.row(endpoint, f"{micros:,.0f}"))


if __name__ == "__main__":
    main()
