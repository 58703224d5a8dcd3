"""Throwaway Strongroom deployments for the benchmarks (a fresh PostgreSQL database with the
local Redis, or a fresh SQLite directory, migrated), credentials, the real processes on them,
/proc readers, and the tables they print. Like tests/conftest.py and tests/processes.py, with
production's worker timings.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import psycopg
from redis import Redis

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

ADMIN_URL = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
PEPPER, SECRET = "bench-pepper-" + "p" * 20, "bench-secret-" + "s" * 20
# The enterprise tier made too large to refuse a benchmark's calls (as in http_bench.py):
# every call still runs the whole request path, rate limiting included.
TIERS = {"standard": (60, 120), "enterprise": (600_000_000, 600_000_000)}
TIERS_JSON = json.dumps(TIERS)
STRONGROOM = str(Path(sys.executable).with_name("strongroom"))
CLOCK = os.sysconf("SC_CLK_TCK")
ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ["postgresql", "sqlite"]


@dataclass
class Deployment:
    backend: str  # "postgresql" or "sqlite"
    settings: Settings
    admin_url: str | None  # plain libpq URL of the PostgreSQL database

    def analyze(self) -> None:
        """VACUUM ANALYZE a freshly seeded PostgreSQL database, as autovacuum would have."""
        if self.is_postgres:
            with psycopg.connect(self.admin_url, autocommit=True) as admin:
                admin.execute("VACUUM ANALYZE")

    @property
    def is_postgres(self) -> bool:
        return self.backend == "postgresql"


@contextlib.contextmanager
def deployment(backend: str, label: str) -> Iterator[Deployment]:
    """A fresh database and data directory, migrated; dropped and removed afterwards."""
    data_dir = Path(tempfile.mkdtemp(prefix=f"strongroom-bench-{label}-"))
    name = f"strongroom_bench_{label}_{uuid.uuid4().hex[:8]}"
    url, database = None, f"sqlite+aiosqlite:///{data_dir / 'strongroom.db'}"
    common = {"data_dir": data_dir, "key_pepper": PEPPER, "secret_key": SECRET,
              "rate_limit_tiers": TIERS}  # fmt: skip
    try:
        if backend == "postgresql":
            with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
                admin.execute(f'CREATE DATABASE "{name}"')
            url = database = ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
            common |= {"redis_url": REDIS_URL, "redis_prefix": f"{name}:"}
        settings = Settings(database_url=database, **common)
        asyncio.run(_migrate(settings))
        yield Deployment(backend, settings, url)
    finally:
        if backend == "postgresql":
            with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            client = Redis.from_url(REDIS_URL)
            keys = list(client.scan_iter(match=f"{name}:*", count=1000))
            if keys:
                client.delete(*keys)
            client.close()
        shutil.rmtree(data_dir, ignore_errors=True)


async def _migrate(settings: Settings) -> None:
    runtime = Runtime.create(settings)
    try:
        await upgrade(runtime.engine)
    finally:
        await runtime.close()


@dataclass
class Credential:
    tenant_id: uuid.UUID
    user_id: uuid.UUID
    key: str
    email: str
    live_key: str | None = None  # with `live`: a live key (billed, D21) of the same user


async def issue_credential(
    runtime: Runtime, name: str, *, credits: int | None = None, live: bool = False
) -> Credential:
    """A new tenant (with `credits`, if given), its user and a test key (and, with `live`, a
    live key) with every scope on the enterprise tier."""
    async with runtime.sessions() as session:
        tenant = await create_tenant(
            session, f"{name}-{uuid.uuid4().hex[:8]}", tier=RateLimitTier.ENTERPRISE,
            **({"credits": credits} if credits is not None else {}),
        )  # fmt: skip
        user = await ensure_user(session, tenant, f"{name}@example.com")
        keys = []
        for environment in (Environment.TEST, Environment.LIVE) if live else (Environment.TEST,):
            _, raw = await create_key(
                session, runtime.key_pepper, tenant=tenant, user=user, name=name,
                environment=environment, scopes=list(ALL_SCOPES), tier=RateLimitTier.ENTERPRISE,
            )  # fmt: skip
            keys.append(raw)
        await session.commit()
        return Credential(tenant.id, user.id, keys[0], user.email, *keys[1:])


async def credentials(deployed: Deployment, *names: str) -> list[Credential]:
    """A tenant, user and enterprise key for each name, in the deployment's database."""
    runtime = Runtime.create(deployed.settings)
    try:
        return [await issue_credential(runtime, name) for name in names]
    finally:
        await runtime.close()


def environment_of(settings: Settings, **extra: str) -> dict[str, str]:
    """The process environment that makes `strongroom` use `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRONGROOM_")}
    env["STRONGROOM_DATABASE_URL"] = settings.resolved_database_url
    env["STRONGROOM_DATA_DIR"] = str(settings.data_dir)
    env["STRONGROOM_KEY_PEPPER"] = PEPPER
    env["STRONGROOM_SECRET_KEY"] = SECRET
    env["STRONGROOM_RATE_LIMIT_TIERS"] = TIERS_JSON
    env["STRONGROOM_LOG_LEVEL"] = os.environ.get("BENCH_SERVER_LOG_LEVEL", "WARNING")
    if settings.redis_url:
        env["STRONGROOM_REDIS_URL"] = settings.redis_url
        env["STRONGROOM_REDIS_PREFIX"] = settings.redis_prefix
    return env | extra


@dataclass(frozen=True)
class Running:
    """A process of this machine as /proc shows it."""

    parent: int
    command: list[bytes]
    resident_kib: int


def running_processes() -> dict[int, Running]:
    """Every process of this machine, by pid (those that end while being read are left out)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        resident = int(fields.get("VmRSS", "0 kB").split()[0])
        found[int(entry.name)] = Running(int(fields["PPid"]), command.split(b"\0"), resident)
    return found


def proc_stat(pid: int) -> tuple[str, list[str]] | None:
    """A process's command name and its /proc/<pid>/stat fields after it (state at 0, parent
    at 1, utime stime cutime cstime at 11-14, in CLOCK ticks); None once it has gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()


def rss_kib(pid: int) -> int | None:
    """VmRSS of a live process (its own, not its children's), KiB; None once it has gone."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def rss_mib(pid: int) -> float:
    """VmRSS of the process itself (not its children), MiB; 0 once it has gone."""
    return (rss_kib(pid) or 0) / 1024


def tree_cpu(roots: list[int]) -> float:
    """CPU seconds of `roots` and every live descendant, each with its reaped children's."""
    processes = running_processes()
    total = 0
    for pid in processes:
        if pid in roots or any(descends_from(processes, pid, root) for root in roots):
            if stat := proc_stat(pid):
                total += sum(int(value) for value in stat[1][11:15])  # utime stime cutime cstime
    return total / CLOCK


def hypercorn_workers(serve: int) -> list[int]:
    """The Hypercorn workers (spawned children) of a `strongroom serve`, by pid."""
    return sorted(
        pid
        for pid, process in running_processes().items()
        if process.parent == serve and any(b"spawn_main" in part for part in process.command)
    )


def descends_from(processes: dict[int, Running], process: int, ancestor: int) -> bool:
    while process > 1:
        process = processes[process].parent if process in processes else 0
        if process == ancestor:
            return True
    return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.asynccontextmanager
async def api_server(deployed: Deployment, workers: int = 1, **extra: str) -> AsyncIterator[str]:
    """The API on a free port, ready, as its base URL (see `started_server`)."""
    async with started_server(deployed, workers, **extra) as (base, _):
        yield base


@contextlib.asynccontextmanager
async def started_server(
    deployed: Deployment, workers: int = 1, tries: int = 300, every_worker: bool = False, **extra
) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """The API on a free port, ready (`tries` looks at /readyz 0.1 s apart; `every_worker`:
    then every Hypercorn worker up), as its base URL and process: `strongroom serve` (metrics
    on) on PostgreSQL, `strongroom dev` on SQLite, with `extra` environment; its log in
    `server_log(deployed)`."""
    port = free_port()
    if deployed.is_postgres:
        command = ["serve", "--workers", str(workers), "--metrics-port", str(free_port())]
    else:
        command = ["dev"]
    log = server_log(deployed).open("ab")
    process = await asyncio.create_subprocess_exec(
        STRONGROOM, *command, "--host", "127.0.0.1", "--port", str(port),
        env=environment_of(deployed.settings, **extra), stdout=log, stderr=log,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base) as client:
            for _ in range(tries):
                with contextlib.suppress(httpx.TransportError):
                    if (await client.get("/readyz")).status_code == 200:
                        break
                if process.returncode is not None:
                    raise RuntimeError(f"the server exited; see {log.name}")
                await asyncio.sleep(0.1)
            else:
                raise RuntimeError(f"the server never became ready; see {log.name}")
        for _ in range(600 if every_worker else 0):  # readyz answered from one of them
            if len(hypercorn_workers(process.pid)) >= workers:
                break
            await asyncio.sleep(0.1)
        yield base, process
    finally:
        await stop_process(process)
        log.close()


def server_log(deployed: Deployment) -> Path:
    return deployed.settings.data_dir / "server.log"


@contextlib.asynccontextmanager
async def worker_process(
    deployed: Deployment, concurrency: int, **extra: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    """`strongroom worker` with production's settings and `extra` environment."""
    log = (deployed.settings.data_dir / "worker.log").open("ab")
    env = environment_of(deployed.settings, STRONGROOM_WORKER_CONCURRENCY=str(concurrency), **extra)
    process = await asyncio.create_subprocess_exec(
        STRONGROOM, "worker", env=env, stdout=log, stderr=log
    )
    try:
        yield process
    finally:
        await stop_process(process)
        log.close()


async def stop_process(process: asyncio.subprocess.Process) -> None:
    """SIGTERM, then SIGKILL if it has not ended within 30 s."""
    if process.returncode is None:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            process.kill()
    await process.wait()


# --- servers started from synchronous code (http_bench.py, cold_start.py) ---------------------
class NotReady(SystemExit):
    """The server did not answer in time: the run stops rather than measure nothing."""


def floor_command(port: int | str, workers: int) -> list[str]:
    """bench/floor_app.py under Hypercorn (uvloop), as `strongroom serve` runs (cwd: ROOT)."""
    hypercorn = str(Path(sys.executable).with_name("hypercorn"))
    return [hypercorn, "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
            "--worker-class", "uvloop", "bench.floor_app:app"]  # fmt: skip


@contextlib.contextmanager
def serving(
    command: list[str], url: str, seconds: float, log: Path, **popen
) -> Iterator[tuple[subprocess.Popen, float]]:
    """`command` started (stderr to `log`), and the seconds until `url` answered 200 (NotReady,
    with the log, if it exits or `seconds` pass first); stopped afterwards."""
    started = time.monotonic()
    with log.open("w") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, **popen)
    try:
        while time.monotonic() - started < seconds and process.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=1) as response:  # noqa: S310
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.02)
        else:
            state = "running" if process.poll() is None else f"exited with {process.returncode}"
            raise NotReady(f"{url} did not answer 200 within {seconds:.0f} s (server {state}); "
                           f"its log:\n{log.read_text(errors='replace')[-4000:]}")  # fmt: skip
        yield process, time.monotonic() - started
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- the API as a client calls it ----------------------------------------------------------
def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def create_project(client: httpx.AsyncClient, key: str) -> str:
    """A new project of the key's tenant, through the API; its id."""
    response = await client.post(
        "/api/v2/vault/projects",
        json={"name": "Harbour Tower", "project_type": "commercial"},
        headers=auth(key),
    )
    response.raise_for_status()
    return response.json()["id"]


async def upload(
    client: httpx.AsyncClient, key: str, project_id: str, name: str, content: bytes, mime: str
) -> dict:
    """POST one document (multipart, as a client sends a file); the 202's body."""
    response = await client.post(
        "/api/v2/vault/documents",
        headers=auth(key),
        data={"project_id": project_id, "name": name},
        files={"file": (name, content, mime)},
    )
    if response.status_code != 202:
        raise RuntimeError(f"upload {name}: {response.status_code} {response.text[:300]}")
    return response.json()


async def document(client: httpx.AsyncClient, key: str, document_id: str) -> dict:
    """GET the document resource."""
    response = await client.get(f"/api/v2/vault/documents/{document_id}", headers=auth(key))
    response.raise_for_status()
    return response.json()


async def until_settled(
    client: httpx.AsyncClient, key: str, document_id: str, bound: float, poll: float = 0.5
) -> dict:
    """The document once it is no longer `processing`; TimeoutError past `bound` seconds."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if (found := await document(client, key, document_id))["status"] != "processing":
            return found
        await asyncio.sleep(poll)
    raise TimeoutError(f"document {document_id} not settled within {bound:.0f} s")


# --- a setup's processes and their CPU -------------------------------------------------------
@dataclass
class Processes:
    """One setup's processes: `roots` (their trees' CPU counts), `jobs` (the one that runs
    jobs), `idle` (cores the trees use at rest)."""

    base: str
    roots: list[int]
    jobs: int
    idle: float = 0.0


@contextlib.asynccontextmanager
async def processes(deployed: Deployment, settle: float = 0, **extra: str):
    """`strongroom dev` on SQLite, `serve` and a 2-slot worker on PostgreSQL, with `extra`
    environment; with `settle`, left up to that many seconds to go quiet, then `idle` taken."""
    async with contextlib.AsyncExitStack() as stack:
        base, server = await stack.enter_async_context(started_server(deployed, **extra))
        running = Processes(base, [server.pid], server.pid)
        if deployed.is_postgres:
            worker = await stack.enter_async_context(worker_process(deployed, 2, **extra))
            running.roots.append(worker.pid)
            running.jobs = worker.pid
        if settle:
            await until_idle(running.roots, 0.1, settle)
            running.idle = await cores_used(running.roots, 2.0)
        yield running


async def cores_used(roots: list[int], window: float = 0.5) -> float:
    """Cores the process trees used over one window (CPU seconds / wall seconds)."""
    before, started = tree_cpu(roots), time.perf_counter()
    await asyncio.sleep(window)
    return (tree_cpu(roots) - before) / (time.perf_counter() - started)


async def until_idle(roots: list[int], threshold: float, bound: float) -> float | None:
    """Seconds until one 0.5 s window of the trees uses under `threshold` cores; None (and a
    `# bound hit` line) past `bound`."""
    started = time.perf_counter()
    while time.perf_counter() - started < bound:
        if await cores_used(roots) < threshold:
            return time.perf_counter() - started
    print(f"# bound hit: still above {threshold:.2f} cores after {bound:.0f} s", file=sys.stderr)
    return None


# --- numbers and tables ------------------------------------------------------------------------
def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (share in 0..1); NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, round(share * len(ordered) + 0.5 - 1e-9))
    return ordered[min(rank, len(ordered)) - 1]


def ms(seconds: float) -> str:
    """Seconds as milliseconds with one decimal, for a table; "-" for NaN."""
    return "-" if math.isnan(seconds) else f"{seconds * 1000:.1f}"


def latencies(values: list[float], shares: tuple[float, ...] = (0.5, 0.95, 0.99)) -> list[str]:
    """Table cells in ms: the percentiles `shares` of `values`, then their max."""
    return [ms(percentile(values, share)) for share in shares] + [ms(max(values, default=math.nan))]


def row(*cells: object) -> str:
    """A Markdown table's row."""
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def machine() -> str:
    """The date, machine, Python, load and code (this checkout's commit, and how many files
    under strongroom/ differ from it) a table of bench/RESULTS.md is measured on."""

    def git(*command: str) -> str:
        return subprocess.run(["git", *command], cwd=ROOT, capture_output=True, text=True).stdout

    changed = len(git("status", "--porcelain", "strongroom").splitlines())
    return (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()} ({platform.machine()}), "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, load average "
        f"{os.getloadavg()[0]:.1f}; commit {git('rev-parse', '--short', 'HEAD').strip()}"
        + (f" + working-tree changes to {changed} files under strongroom/" if changed else "")
    )


def parser(doc: str, backends: list[str] | None = None) -> argparse.ArgumentParser:
    """A benchmark's command line: its docstring's first paragraph, and `--backends`."""
    out = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    if backends:
        out.add_argument("--backends", nargs="+", choices=BACKENDS, default=backends)
    return out


def table_head(columns: str) -> list[str]:
    """A Markdown table's header (`columns`: "| a | b |") and its rule."""
    return [columns, "|" + "---|" * columns.count(" |")]


def print_header(columns: str) -> float:
    """Print the machine line and the table's header; the start time, for `print_footer`."""
    print(f"# {machine()}\n", *table_head(columns), sep="\n", flush=True)
    return time.time()


def print_footer(started: float) -> None:
    print(f"\n# {time.time() - started:.0f} s in all; load average {os.getloadavg()[0]:.1f} at end")
