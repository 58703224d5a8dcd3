"""What every blob store offers. Uploads arrive spooled to a local file (the type is detected
from the whole file first); the store then takes that file over."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Protocol

CHUNK_BYTES = 256 * 1024


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

    async def close(self) -> None: ...


def spool_file(directory: Path) -> tuple[int, Path]:
    """A new private file in `directory`: (fd, path)."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=directory, prefix="upload-")
    return fd, Path(name)


def remove_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
