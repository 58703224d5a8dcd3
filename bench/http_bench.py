"""HTTP benchmark: endpoints as a share of the bare route on the same server, same run.

`strongroom serve` on a throwaway PostgreSQL database and the local Redis, a tenant with a
test key, a live key (billed, D21) and 50 projects, each endpoint loaded with wrk (installed
with apt-get when missing); the keys' tier too large to limit. Every endpoint is warmed for
--warmup seconds first; the bare route is measured first and last and the share is of their
mean. Beside it the floor (bench/floor_app.py): a bare Quart app, and the same list query and
INSERT through psycopg alone. Each row's CPU per request in the server, PostgreSQL and Redis
comes from /proc. `--only REGEX` measures some rows (and the bare route).

    make bench            # or: .venv/bin/python bench/http_bench.py --workers 2 --seconds 15
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from bench import stack
from strongroom.runtime import Runtime
from strongroom.settings import Settings
from strongroom.tenants.partition import Environment
from strongroom.vault.models import Project

# wrk script: POST a project, each request with an Idempotency-Key of its own.
POST_SCRIPT = """
local counter = 0
local threads = 0
-- thread_id is a global each thread gets from setup(); a local would shadow it.
function setup(thread) threads = threads + 1; thread:set("thread_id", threads) end
function request()
  counter = counter + 1
  local headers = {["Content-Type"] = "application/json"}
  if AUTH then headers["Authorization"] = AUTH end
  if USE_KEY then headers["Idempotency-Key"] = RUN .. "-" .. thread_id .. "-" .. counter end
  return wrk.format("POST", PATH, headers,
                    '{"name": "Bench", "project_type": "other"}')
end
"""


def ensure_wrk() -> str:
    """wrk, installed with Debian's apt-get (through sudo unless root) when missing."""
    if shutil.which("wrk") is None:
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        install = [*sudo, "apt-get", "install", "-y", "-qq", "wrk"]
        if subprocess.run(install, check=False).returncode != 0:
            subprocess.run([*sudo, "apt-get", "update", "-qq"], check=True)
            subprocess.run(install, check=True)
    return "wrk"


async def prepare(settings: Settings) -> tuple[str, str, str, str]:
    """Seed the (migrated) database: a tenant with credits for any run's length, its user, a
    test and a live key, and 50 projects: (test key, live key, tenant id, user id)."""
    runtime = Runtime.create(settings)
    try:
        seeded = await stack.issue_credential(runtime, "bench", credits=2_000_000_000, live=True)
        async with runtime.sessions() as session:
            session.add_all(
                Project(tenant_id=seeded.tenant_id, environment="test", owner_id=seeded.user_id,
                        name=f"p{index}", project_type="other")
                for index in range(50)
            )  # fmt: skip
            await session.commit()
    finally:
        await runtime.close()
    return seeded.key, seeded.live_key, str(seeded.tenant_id), str(seeded.user_id)


def post_script(path: str, authorization: str | None, idempotency_keys: bool) -> str:
    """POST_SCRIPT for `path`; `{run}`, filled on each run, keeps runs' Idempotency-Keys apart."""
    auth = f'"{authorization}"' if authorization else "nil"
    return (
        f'AUTH = {auth}\nUSE_KEY = {str(idempotency_keys).lower()}\nPATH = "{path}"\n'
        f'RUN = "{{run}}"\n{POST_SCRIPT}'
    )


def wrk(
    url: str, key: str | None, seconds: int, connections: int, script: str | None = None
) -> tuple[float, str]:
    command = [ensure_wrk(), "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", url]
    if key:
        command[1:1] = ["-H", f"Authorization: Bearer {key}"]
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
        if script:
            lua.write(script.replace("{run}", uuid.uuid4().hex[:12]))
            lua.flush()
            command[1:1] = ["-s", lua.name]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    p99 = re.search(r"^\s+99%\s+(\S+)", output, re.MULTILINE).group(1)  # the latency line
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    assert non2xx is None, f"{url}: {non2xx.group(1)} failed responses"
    return rps, p99


def cpu_snapshot(server: int) -> dict[int, tuple[str, float]]:
    """Each process's part (the server's tree, `postgres` or `redis`) and CPU seconds so far."""
    processes, parts = stack.running_processes(), {}
    for pid in processes:
        if not (stat := stack.proc_stat(pid)):  # gone
            continue
        if pid == server or stack.descends_from(processes, pid, server):
            part = "server"
        elif stat[0] in ("postgres", "redis-server"):
            part = stat[0].removesuffix("-server")
        else:
            continue
        parts[pid] = (part, (int(stat[1][11]) + int(stat[1][12])) / stack.CLOCK)
    return parts


def cpu_between(before: dict, after: dict) -> dict[str, float]:
    """CPU seconds each part spent between two snapshots (a process that exited is left out)."""
    spent = {"server": 0.0, "postgres": 0.0, "redis": 0.0}
    for pid, (part, seconds) in after.items():
        earlier = before.get(pid)
        spent[part] += seconds - (earlier[1] if earlier and earlier[0] == part else 0.0)
    return spent


def main() -> None:
    arguments = stack.parser(__doc__)
    arguments.add_argument("--workers", type=int, default=2)
    arguments.add_argument("--seconds", type=int, default=15)
    arguments.add_argument("--warmup", type=int, default=3, help="seconds per endpoint, unmeasured")
    arguments.add_argument("--connections", type=int, default=64)
    arguments.add_argument("--ready-seconds", type=float, default=120)
    arguments.add_argument(
        "--only", help="measure only the rows whose label matches this regex (and the bare route)"
    )
    args = arguments.parse_args()
    ensure_wrk()
    with stack.deployment("postgresql", "http") as deployed:
        measure(args, deployed)


def measure(args, deployed) -> None:
    port, floor_port = stack.free_port(), stack.free_port()
    base, floor_base = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{floor_port}"
    serve_log = Path(os.environ.get("BENCH_SERVER_LOG", stack.server_log(deployed)))
    key, live_key, tenant_id, user_id = asyncio.run(prepare(deployed.settings))
    env = stack.environment_of(deployed.settings)
    env["STRONGROOM_REDIS_URL"] = os.environ.get(
        "BENCH_SERVER_REDIS_URL", env["STRONGROOM_REDIS_URL"]
    )
    command = [
        str(Path(sys.executable).with_name("strongroom")), "serve", "--host", "127.0.0.1",
        "--port", str(port), "--workers", str(args.workers),
        "--metrics-port", str(stack.free_port()),  # metrics on, as in production (multiprocess)
    ]  # fmt: skip
    floor_env = {**os.environ, "FLOOR_DATABASE_URL": deployed.admin_url,
                 "FLOOR_TENANT_ID": tenant_id, "FLOOR_OWNER_ID": user_id,
                 "FLOOR_ENVIRONMENT": Environment.TEST.value}  # fmt: skip
    floor_log = deployed.settings.data_dir / "floor.log"
    serve = stack.serving(command, f"{base}/readyz", args.ready_seconds, serve_log, env=env)
    floor_app = stack.floor_command(floor_port, args.workers)
    floor_serve = stack.serving(floor_app, f"{floor_base}/", args.ready_seconds, floor_log,
                                env=floor_env, cwd=stack.ROOT)  # fmt: skip
    with serve as (server, serve_ready), floor_serve as (floor, floor_ready):
        bare = ("GET /healthz (bare route, no auth)", f"{base}/healthz", None, None)
        targets = [
            bare,
            ("GET /api/v2/me", f"{base}/api/v2/me", key, None),
            ("GET /api/v2/me, a live key (billed, D21)", f"{base}/api/v2/me", live_key, None),
            ("GET /api/v2/vault/projects?limit=25", f"{base}/api/v2/vault/projects?limit=25",
             key, None),
            ("floor: bare Quart app, GET /", f"{floor_base}/", None, None),
            ("floor: the same list query, psycopg alone behind a bare route",
             f"{floor_base}/projects", None, None),
        ]  # fmt: skip
        for label, server_base, path, auth, use_key in (
            ("POST /api/v2/vault/projects", base, "/api/v2/vault/projects", key, False),
            ("POST /api/v2/vault/projects + Idempotency-Key", base, "/api/v2/vault/projects",
             key, True),
            ("POST /api/v2/vault/projects, a live key (billed, D21)", base,
             "/api/v2/vault/projects", live_key, False),
            ("floor: the same INSERT, psycopg alone behind a bare route", floor_base,
             "/projects", None, False),
        ):  # fmt: skip
            script = post_script(path, auth and f"Bearer {auth}", use_key)
            targets.append((label, f"{server_base}{path}", None, script))
        if args.only:
            targets = [bare, *(t for t in targets[1:] if re.search(args.only, t[0]))]
        if args.warmup:
            for _, url, credential, script in targets:
                wrk(url, credential, args.warmup, args.connections, script)
        rows = []
        for label, url, credential, script in [*targets, bare]:
            tested = floor if url.startswith(floor_base) else server
            before = cpu_snapshot(tested.pid)
            rps, p99 = wrk(url, credential, args.seconds, args.connections, script)
            spent = cpu_between(before, cpu_snapshot(tested.pid))
            cpu = {part: seconds / (rps * args.seconds) * 1e6 for part, seconds in spent.items()}
            rows.append((label, rps, p99, cpu))
        first, last = rows[0][1], rows[-1][1]
        reference = (first + last) / 2
        print(f"\n{stack.machine()}; {args.workers} workers, wrk -t2 -c{args.connections} "
              f"-d{args.seconds}s after {args.warmup} s of warm-up per endpoint\n",
              *stack.table_head("| Endpoint | req/s | p99 | share of bare route "
                                "| CPU µs per request: server / PostgreSQL / Redis |"),
              sep="\n")  # fmt: skip
        for index, (label, rps, p99, cpu) in enumerate(rows):
            if index in (0, len(rows) - 1):
                label = f"{label}, {'first' if index == 0 else 'last'}"
            split = " / ".join(f"{cpu[part]:,.0f}" for part in ("server", "postgres", "redis"))
            print(stack.row(label, f"{rps:,.0f}", p99, f"{rps / reference:.2f}", split))
        print(f"\nShares are of the bare route's mean ({reference:,.0f} req/s); first and last "
              f"differ by {abs(first - last) / reference:.0%}.\nReady: `strongroom serve` "
              f"answered /readyz after {serve_ready:.1f} s; the bare Quart app under Hypercorn "
              f"answered after {floor_ready:.1f} s.")  # fmt: skip


if __name__ == "__main__":
    main()
