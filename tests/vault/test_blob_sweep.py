"""Issue 42: a document's file is removed after its deletion commits; a process killed in
between leaves it, and the sweep removes it once it is older than the grace period. Blobs
of documents that exist, young orphans (an upload about to commit) and template files are
never touched."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

from strongroom.storage.base import spool_file
from strongroom.vault.blob_sweep import sweep_orphan_blobs
from tests.vault.conftest import Vault


def aged(path: Path, seconds: float) -> Path:
    written = time.time() - seconds
    os.utime(path, (written, written))
    return path


def exists(*paths: Path) -> list[bool]:
    return [path.exists() for path in paths]


def blob_files(runtime) -> list[Path]:
    return [path for path in Path(runtime.blobs.root).rglob("*") if path.is_file()]


async def stored(runtime, key: str, age_seconds: float = 0.0) -> Path:
    fd, path = spool_file(runtime.blobs.spool_dir)
    os.write(fd, b"orphaned bytes")
    os.close(fd)
    await runtime.blobs.put_file(key, path)
    return aged(Path(runtime.blobs.root) / key, age_seconds)


async def test_the_sweep_removes_old_blobs_whose_documents_are_gone_and_nothing_else(
    vault: Vault, runtime
):
    project_id = await vault.create_project()
    document = await vault.ingested(b"A document that stays.", "stays.txt", project_id)
    [kept] = [path for path in blob_files(runtime) if path.name == document["id"]]
    aged(kept, 7200)
    tenant, environment = kept.parent.parent.name, kept.parent.name
    old_orphan = await stored(runtime, f"{tenant}/{environment}/{uuid.uuid4()}", 7200)
    young_orphan = await stored(runtime, f"{tenant}/{environment}/{uuid.uuid4()}", 0)
    template = await stored(runtime, f"{tenant}/{environment}/{uuid.uuid4()}/template.docx", 7200)

    assert await sweep_orphan_blobs(runtime, grace_seconds=3600) == 1

    assert exists(old_orphan, kept, young_orphan, template) == [False, True, True, True]
    assert await sweep_orphan_blobs(runtime, grace_seconds=3600) == 0
