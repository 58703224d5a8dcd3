"""Issue 18: what a hostile DOCX template costs the API and the worker.

A DOCX of one `{{ a }}` whose word/document.xml also holds N MiB of `<w:p/>` (154 KB for
100 MiB) is sent to POST /templates/fill of a real `strongroom serve` (one Hypercorn worker)
with a real `strongroom worker`, on a throwaway PostgreSQL database. While it is accepted
and its job runs, the resident memory of both process trees (the worker's includes the
bounded child processes that read templates) is sampled every 20 ms from /proc; then five
are sent at once while an unrelated GET /vault/projects is timed.

    .venv/bin/python bench/hostile_templates.py --inflated-mib 10 100
    .venv/bin/python bench/hostile_templates.py --source /tmp/before --inflated-mib 10

`--source DIR` runs the server and worker from another checkout's `strongroom` package (put
first on their PYTHONPATH), to measure the code before a change. Keep N small for code that
parses templates whole: the issue measured 2.36 GB for the API and 8 GB for the job at 100.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import sys
import threading
import time
import zipfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parents[1]))

from bench.stack import (
    STRONGROOM,
    Deployment,
    deployment,
    environment_of,
    free_port,
    issue_credential,
)
from strongroom.runtime import Runtime

MiB = 1024 * 1024
HEADER = (
    "| inflated | DOCX | 202 after | job | API RSS start -> peak "
    "| worker tree RSS start -> peak | GET during 5 at once (unloaded) |"
)
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_TEMPLATE_XML = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
    b"<w:body><w:p><w:r><w:t>{{ a }}</w:t></w:r></w:p>"
)
_CONTENT_TYPES = (
    b'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
    b'package/2006/content-types"><Default Extension="rels" ContentType="application/'
    b'vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType='
    b'"application/xml"/><Override PartName="/word/document.xml" ContentType="application/'
    b'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
_RELS = (
    b'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats'
    b'.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.'
    b'openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target='
    b'"word/document.xml"/></Relationships>'
)


def paragraph_bomb(inflated_mib: int) -> bytes:
    out = io.BytesIO()
    step = b"<w:p/>" * (MiB // 6)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("[Content_Types].xml", _CONTENT_TYPES)
        archive.writestr("_rels/.rels", _RELS)
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            member.write(_TEMPLATE_XML)
            for _ in range(inflated_mib):
                member.write(step)
            member.write(b"</w:body></w:document>")
    return out.getvalue()


def _tree(root: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            with open(f"/proc/{entry}/stat") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += parents.get(pid, [])
    return found


def _rss(pid: int) -> int:
    with contextlib.suppress(OSError), open(f"/proc/{pid}/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return 0


class Sampler:
    """Peak RSS of each process tree (by its root pid), sampled every 20 ms."""

    def __init__(self, roots: dict[str, int]) -> None:
        self.roots = roots
        self.peak = dict.fromkeys(roots, 0)
        self.start = {name: sum(map(_rss, _tree(pid))) for name, pid in roots.items()}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            for name, pid in self.roots.items():
                self.peak[name] = max(self.peak[name], sum(map(_rss, _tree(pid))))

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def _start(command: list[str], env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    handle = log.open("ab")
    return await asyncio.create_subprocess_exec(
        STRONGROOM, *command, env=env, stdout=handle, stderr=handle
    )


async def _post(client: httpx.AsyncClient, headers: dict, bomb: bytes) -> tuple[float, dict]:
    started = time.monotonic()
    response = await client.post(
        "/api/v2/templates/fill", files={"file": ("t.docx", bomb, DOCX)}, headers=headers
    )
    return time.monotonic() - started, response.json() | {"http_status": response.status_code}


async def _finished(client: httpx.AsyncClient, headers: dict, job_id: str) -> dict:
    while True:
        fill = (await client.get(f"/api/v2/templates/fill/{job_id}", headers=headers)).json()
        if fill.get("status") in {"succeeded", "failed"}:
            return fill
        await asyncio.sleep(0.2)


async def run(deployed: Deployment, inflated: list[int], source: str | None) -> None:
    runtime = Runtime.create(deployed.settings)
    credential = await issue_credential(runtime, "bench")
    await runtime.close()
    extra = {"PYTHONPATH": source} if source else {}
    env = environment_of(deployed.settings, **extra)
    port = free_port()
    data = deployed.settings.data_dir
    server = await _start(
        ["serve", "--workers", "1", "--host", "127.0.0.1", "--port", str(port)],
        env,
        data / "server.log",
    )
    worker = await _start(["worker"], env, data / "worker.log")
    headers = {"Authorization": f"Bearer {credential.key}"}
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=600) as client:
            for _ in range(300):
                with contextlib.suppress(httpx.TransportError):
                    if (await client.get("/readyz")).status_code == 200:
                        break
                await asyncio.sleep(0.1)
            await asyncio.sleep(2)  # the worker connects
            print(HEADER)
            print("|---|---|---|---|---|---|---|")
            for mib in inflated:
                bomb = paragraph_bomb(mib)
                roots = {"api": server.pid, "worker": worker.pid}
                with Sampler(roots) as memory:
                    accepted_after, accepted = await _post(client, headers, bomb)
                    if accepted["http_status"] == 202:
                        fill = await _finished(client, headers, accepted["job_id"])
                        outcome = (fill["error"] or {}).get("code", fill["status"])
                    else:
                        outcome = f"{accepted['http_status']} {accepted.get('code')}"
                unloaded_started = time.monotonic()
                await client.get("/api/v2/vault/projects", headers=headers)
                unloaded = time.monotonic() - unloaded_started

                async def unrelated_get() -> float:
                    await asyncio.sleep(0.05)
                    started = time.monotonic()
                    await client.get("/api/v2/vault/projects", headers=headers)
                    return time.monotonic() - started

                *_, stalled = await asyncio.gather(
                    *(_post(client, headers, bomb) for _ in range(5)), unrelated_get()
                )
                print(
                    f"| {mib} MiB | {len(bomb) / 1024:.0f} KB | {accepted_after:.2f} s | "
                    f"{outcome} | {memory.start['api'] / MiB:.0f} -> "
                    f"{memory.peak['api'] / MiB:.0f} MiB | {memory.start['worker'] / MiB:.0f}"
                    f" -> {memory.peak['worker'] / MiB:.0f} MiB | {stalled * 1000:.0f} ms "
                    f"({unloaded * 1000:.0f} ms) |",
                    flush=True,
                )
                await asyncio.sleep(5)  # let the five jobs end before the next row
    finally:
        for process in (server, worker):
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 30)
            except TimeoutError:
                process.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inflated-mib", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--source", help="a checkout whose strongroom package to run")
    args = parser.parse_args()
    with deployment("postgresql", "tpl") as deployed:
        asyncio.run(run(deployed, args.inflated_mib, args.source))


if __name__ == "__main__":
    main()
