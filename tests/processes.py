"""Real `strongroom` processes for tests: an HTTP helper and a `serve` process on a free port."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path

from strongroom.settings import Settings

STRONGROOM = str(Path(sys.executable).with_name("strongroom"))
READY_SECONDS = 60  # generous: a loaded CI machine starts several workers slowly


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http(
    method: str,
    url: str,
    key: str | None = None,
    body: dict | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict, dict[str, str]]:
    """One request; returns status, JSON body and headers with lower-case names (blocking:
    call it through `asyncio.to_thread`)."""
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    if key:
        all_headers["Authorization"] = f"Bearer {key}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers=all_headers, method=method)  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
            return response.status, json.loads(response.read()), _lower(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), _lower(error.headers)


def _lower(headers) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


def environment_of(settings: Settings, **extra: str) -> dict[str, str]:
    """The process environment that makes `strongroom` use `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRONGROOM_")}
    env["STRONGROOM_DATABASE_URL"] = settings.resolved_database_url
    env["STRONGROOM_DATA_DIR"] = str(settings.data_dir)
    env["STRONGROOM_BASE_URL"] = settings.base_url
    if settings.key_pepper:
        env["STRONGROOM_KEY_PEPPER"] = settings.key_pepper.get_secret_value()
    if settings.secret_key:
        env["STRONGROOM_SECRET_KEY"] = settings.secret_key.get_secret_value()
    if settings.oauth_signing_keys_file:
        env["STRONGROOM_OAUTH_SIGNING_KEYS_FILE"] = str(settings.oauth_signing_keys_file)
    env["STRONGROOM_DEV_SIGN_IN"] = "true" if settings.dev_sign_in else "false"
    env["STRONGROOM_EMBEDDINGS_PROVIDER"] = settings.embeddings_provider
    env["STRONGROOM_JOB_WARM_CHILDREN_AT_START"] = str(settings.job_warm_children_at_start)
    if settings.redis_url:
        env["STRONGROOM_REDIS_URL"] = settings.redis_url
        env["STRONGROOM_REDIS_PREFIX"] = settings.redis_prefix
    return env | extra


class ServeProcess:
    """`strongroom serve` on a free port, ready (readyz 200) inside the `async with`."""

    def __init__(self, settings: Settings, workers: int = 1, *extra: str) -> None:
        self.env = environment_of(settings)
        self.workers = workers
        self.extra = extra
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> ServeProcess:
        self.process = await asyncio.create_subprocess_exec(
            STRONGROOM, "serve", "--host", "127.0.0.1", "--port", str(self.port),
            "--workers", str(self.workers), *(self.extra or ("--metrics-port", "0")),
            env=self.env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        deadline = asyncio.get_running_loop().time() + READY_SECONDS
        while asyncio.get_running_loop().time() < deadline:
            try:
                if (await self.call("GET", "/readyz"))[0] == 200:
                    return self
            except OSError:
                await asyncio.sleep(0.1)
        raise AssertionError(f"strongroom serve was not ready within {READY_SECONDS} s")

    async def __aexit__(self, *exc) -> None:
        self.process.terminate()
        await asyncio.wait_for(self.process.wait(), 30)

    async def call(self, method: str, path: str, key: str | None = None, **options):
        return await asyncio.to_thread(http, method, self.base + path, key, **options)


class WorkerProcess:
    """`strongroom worker` for `settings`, with the sweep and stall timeouts of a test; kill it
    with `kill()` to play a worker dying mid-job."""

    def __init__(self, settings: Settings, **extra: str) -> None:
        self.env = environment_of(
            settings,
            STRONGROOM_WORKER_SWEEP_SECONDS="1",
            STRONGROOM_WORKER_HEARTBEAT_SECONDS="0.5",
            STRONGROOM_WORKER_STALLED_SECONDS="3",
            **extra,
        )

        self.log_path = Path(settings.data_dir) / "worker.log"

    async def __aenter__(self) -> WorkerProcess:
        with self.log_path.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                STRONGROOM, "worker", env=self.env, stdout=log, stderr=log,
            )  # fmt: skip
        return self

    async def kill_and_restart(self) -> None:
        """SIGKILL (no chance to clean up, as when a node dies), then a fresh worker."""
        self.process.kill()
        await self.process.wait()
        await self.__aenter__()

    async def __aexit__(self, *exc) -> None:
        if self.process.returncode is None:
            self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), 30)
            except TimeoutError:
                self.process.kill()
        await self.process.wait()


def bounded_children_of(parent: int) -> list[int]:
    """The processes of `parent` running strongroom.jobs.child (a bounded parse)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = next(line for line in status.splitlines() if line.startswith("PPid:"))
        if int(ppid.split()[1]) == parent and b"strongroom.jobs.child" in command:
            found.append(int(entry.name))
    return found
