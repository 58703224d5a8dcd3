"""`strongroom serve`: Hypercorn with several uvloop workers against PostgreSQL."""

from __future__ import annotations

import asyncio
import socket
import subprocess

from strongroom.runtime import Runtime
from tests.conftest import issue_credential
from tests.processes import STRONGROOM, ServeProcess, environment_of


async def test_serve_refuses_to_start_without_secrets_on_a_shared_database(postgres_settings):
    settings = postgres_settings.model_copy(update={"key_pepper": None, "secret_key": None})
    result = await asyncio.to_thread(
        subprocess.run,
        [STRONGROOM, "serve"],
        env=environment_of(settings),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1
    assert "STRONGROOM_KEY_PEPPER must be set" in result.stderr


async def test_serve_with_two_workers_answers_on_every_worker(postgres_settings):
    runtime = Runtime.create(postgres_settings)
    credential = await issue_credential(runtime)
    await runtime.close()
    async with ServeProcess(postgres_settings, workers=2) as server:
        statuses = [(await server.call("GET", "/api/v2/me", credential.key))[0] for _ in range(20)]
    assert statuses == [200] * 20


# Issue 19 point 8: a taken port is one line naming it and how to pick another, no traceback.
async def test_serve_on_a_taken_port_says_so_in_one_line(postgres_settings):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = await asyncio.to_thread(
            subprocess.run,
            [STRONGROOM, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=environment_of(postgres_settings),
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"Error: 127.0.0.1:{port} is already in use (another Strongroom running?); pick "
        f"another port: --port {port + 1}"
    ]
