"""`strongroom serve`: Hypercorn with several uvloop workers against PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import subprocess

from strongroom.runtime import Runtime
from tests.conftest import issue_credential
from tests.embedded.test_dev_server import STRONGROOM, free_port, http


def serve_env(settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRONGROOM_")}
    env["STRONGROOM_DATABASE_URL"] = settings.resolved_database_url
    return env


async def test_serve_refuses_to_start_without_secrets_on_a_shared_database(postgres_settings):
    result = await asyncio.to_thread(
        subprocess.run,
        [STRONGROOM, "serve"],
        env=serve_env(postgres_settings),
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
    port = free_port()
    env = serve_env(postgres_settings) | {
        "STRONGROOM_KEY_PEPPER": postgres_settings.key_pepper.get_secret_value(),
        "STRONGROOM_SECRET_KEY": postgres_settings.secret_key.get_secret_value(),
    }
    process = await asyncio.create_subprocess_exec(
        STRONGROOM, "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "2",
        env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(150):
            try:
                if (await asyncio.to_thread(http, "GET", f"{base}/readyz"))[0] == 200:
                    break
            except OSError:
                await asyncio.sleep(0.1)
        statuses = [
            (await asyncio.to_thread(http, "GET", f"{base}/api/v2/me", credential.key))[0]
            for _ in range(20)
        ]
        assert statuses == [200] * 20
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 30)
