"""HTTP benchmark: endpoints as a share of the bare route on the same server, same run.

Starts `strongroom serve` against a throwaway PostgreSQL database and the local Redis (the
production setup), seeds a tenant, a key and 50 projects, and loads each endpoint with wrk
(installed with apt-get when missing). The key's tier is made too large to limit, so every
request runs the whole request path, rate limiting included. Client and server share the
machine, so compare the ratios, not the absolute numbers.

    make bench            # or: .venv/bin/python bench/http_bench.py --workers 2 --seconds 15
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).parents[1]))

from strongroom.auth.scopes import ALL_SCOPES
from strongroom.auth.service import create_key
from strongroom.billing.accounts import create_tenant
from strongroom.db.migrate import upgrade
from strongroom.runtime import Runtime
from strongroom.settings import Settings
from strongroom.tenants.models import RateLimitTier
from strongroom.tenants.partition import Environment
from strongroom.tenants.service import ensure_user
from strongroom.vault.models import Project

ADMIN_URL = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
UNLIMITED = '{"standard": [60, 120], "enterprise": [600000000, 600000000]}'
# wrk script: POST a project, each request with an Idempotency-Key of its own.
POST_SCRIPT = """
local counter = 0
local threads = 0
-- thread_id is a global each thread gets from setup(); a local would shadow it.
function setup(thread) threads = threads + 1; thread:set("thread_id", threads) end
function request()
  counter = counter + 1
  local headers = {["Content-Type"] = "application/json", ["Authorization"] = AUTH}
  if USE_KEY then headers["Idempotency-Key"] = RUN .. "-" .. thread_id .. "-" .. counter end
  return wrk.format("POST", "/api/v2/vault/projects", headers,
                    '{"name": "Bench", "project_type": "other"}')
end
"""
PEPPER, SECRET = "bench-pepper-" + "p" * 20, "bench-secret-" + "s" * 20


def ensure_wrk() -> str:
    if shutil.which("wrk") is None:
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True)
    return "wrk"


async def prepare(database_url: str) -> str:
    settings = Settings(
        database_url=database_url, key_pepper=PEPPER, secret_key=SECRET, redis_url=REDIS_URL
    )
    runtime = Runtime.create(settings)
    await upgrade(runtime.engine)
    async with runtime.sessions() as session:
        tenant = await create_tenant(session, "bench")
        user = await ensure_user(session, tenant, "bench@example.com")
        _, raw = await create_key(
            session,
            runtime.key_pepper,
            tenant=tenant,
            user=user,
            name="bench",
            environment=Environment.TEST,
            scopes=list(ALL_SCOPES),
            tier=RateLimitTier.ENTERPRISE,
        )
        for index in range(50):
            session.add(
                Project(
                    tenant_id=tenant.id,
                    environment="test",
                    owner_id=user.id,
                    name=f"p{index}",
                    project_type="other",
                )
            )
        await session.commit()
    await runtime.close()
    return raw


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wrk(
    url: str, key: str | None, seconds: int, connections: int, script: Path | None = None
) -> tuple[float, str]:
    command = [ensure_wrk(), "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", url]
    if key:
        command[1:1] = ["-H", f"Authorization: Bearer {key}"]
    if script:
        command[1:1] = ["-s", str(script)]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    p99 = re.search(r"99%\s+(\S+)", output).group(1)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    assert non2xx is None, f"{url}: {non2xx.group(1)} failed responses"
    return rps, p99


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args()

    name = f"strongroom_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    database_url = ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    port = free_port()
    server = None
    try:
        key = asyncio.run(prepare(database_url))
        env = {
            **os.environ,
            "STRONGROOM_REDIS_URL": os.environ.get("BENCH_SERVER_REDIS_URL", REDIS_URL),
            "STRONGROOM_REDIS_PREFIX": f"{name}:",
            "STRONGROOM_RATE_LIMIT_TIERS": UNLIMITED,
            "STRONGROOM_DATABASE_URL": database_url,
            "STRONGROOM_KEY_PEPPER": PEPPER,
            "STRONGROOM_SECRET_KEY": SECRET,
            "STRONGROOM_LOG_LEVEL": os.environ.get("BENCH_SERVER_LOG_LEVEL", "WARNING"),
        }
        server = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("strongroom")),
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                str(args.workers),
                "--metrics-port",  # metrics on, as in production (multiprocess mode)
                str(free_port()),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(os.environ.get("BENCH_SERVER_LOG", os.devnull), "w"),
        )
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/readyz", timeout=1)  # noqa: S310
                break
            except OSError:
                time.sleep(0.1)
        targets = [
            ("GET /healthz (bare route, no auth)", f"{base}/healthz", None),
            ("GET /api/v2/me", f"{base}/api/v2/me", key),
            ("GET /api/v2/vault/projects?limit=25", f"{base}/api/v2/vault/projects?limit=25", key),
        ]
        rows = []
        for label, url, credential in targets:
            rps, p99 = wrk(url, credential, args.seconds, args.connections)
            rows.append((label, rps, p99))
        for label, use_key in (
            ("POST /api/v2/vault/projects", False),
            ("POST /api/v2/vault/projects + Idempotency-Key", True),
        ):
            script = Path(tempfile.mkstemp(suffix=".lua")[1])
            script.write_text(
                f'AUTH = "Bearer {key}"\nUSE_KEY = {str(use_key).lower()}\n'
                f'RUN = "{uuid.uuid4().hex[:8]}"\n{POST_SCRIPT}'
            )
            rps, p99 = wrk(f"{base}/api/v2/vault/projects", None, args.seconds,
                           args.connections, script)  # fmt: skip
            rows.append((label, rps, p99))
            script.unlink()
        bare = rows[0][1]
        print(
            f"\n{datetime.now(UTC):%Y-%m-%d}, {platform.node()}, {os.cpu_count()} cores, "
            f"{args.workers} workers, wrk -t2 -c{args.connections} -d{args.seconds}s\n"
        )
        print("| Endpoint | req/s | p99 | share of bare route |")
        print("|---|---|---|---|")
        for label, rps, p99 in rows:
            print(f"| {label} | {rps:,.0f} | {p99} | {rps / bare:.2f} |")
    finally:
        if server is not None:
            server.terminate()
            server.wait(30)
        with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
