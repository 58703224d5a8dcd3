"""What every blob store offers. Uploads arrive spooled to a local file (the type is detected
from the whole file first); the store then takes that file over."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Protocol

CHUNK_BYTES = 256 * 1024
LIST_PAGE = 1000  # blobs listed per call of the store (S3's own page)
DELETE_PAGE = 1000  # blobs removed per call of the store (S3's DeleteObjects limit)


class BlobStore(Protocol):
    spool_dir: Path

    async def put_file(self, key: str, source: Path) -> None:
        """Store `source` under `key`; `source` is consumed (moved or deleted), also when
        storing fails; a failed store leaves no partial blob behind."""

    def stream(self, key: str) -> AsyncIterator[bytes]:
        """The blob's bytes, in chunks."""

    def local_copy(self, key: str) -> contextlib.AbstractAsyncContextManager[Path]:
        """A local file holding the blob, for as long as the context lasts."""

    async def delete(self, key: str) -> None:
        """Remove the blob; a missing blob is not an error."""

    async def delete_many(self, keys: list[str]) -> None:
        """Remove those blobs (at most DELETE_PAGE per request to the store), missing ones
        not an error: a project's or a tenant's files go in a few requests, not one each."""

    def listed(self, prefix: str = "") -> AsyncIterator[tuple[str, float]]:
        """Every blob's key and when it was last written (seconds since the epoch), in no
        particular order, read a page at a time (never the whole listing at once); with
        `prefix` (a directory's, ending in `/`), only the keys under it."""

    async def close(self) -> None: ...


def spool_file(directory: Path) -> tuple[int, Path]:
    """A new private file in `directory`: (fd, path)."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=directory, prefix=SPOOL_PREFIX)
    return fd, Path(name)


def remove_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


SPOOL_PREFIX = "upload-"


def remove_leftover_spool_files(directory: Path, *, older_than_seconds: float) -> int:
    """Remove spool files not written to for `older_than_seconds` (0: every one), as an
    upload or a job killed half-way (kill -9, a lost pod) leaves them; how many went. Run at
    start (issue 28): a live upload writes to its file at least every
    `upload_idle_timeout_seconds`, so one older than the upload deadline is nobody's."""
    if not directory.is_dir():
        return 0
    cutoff = time.time() - older_than_seconds
    removed = 0
    for path in directory.glob(f"{SPOOL_PREFIX}*"):
        try:
            if older_than_seconds and path.stat().st_mtime > cutoff:
                continue
            path.unlink()
            removed += 1
        except FileNotFoundError:
            continue
    return removed
