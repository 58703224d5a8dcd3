"""Blobs as files under one directory (the embedded default, single-node deployments).

Uploads are spooled inside the same directory, so storing one is an atomic rename: a reader
never sees half a file, and a refused upload leaves nothing behind."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from strongroom.storage.base import CHUNK_BYTES, DELETE_PAGE, LIST_PAGE, remove_quietly


class LocalBlobStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.spool_dir = self.root / ".spool"

    def _path(self, key: str) -> Path:
        """Where the blob `key` lives: strictly inside the root (after resolving `..` and
        symbolic links), and never in the spool directory."""
        root = self.root.resolve()
        path = (root / key).resolve()
        spool = root / self.spool_dir.name
        if root not in path.parents or path == spool or spool in path.parents:
            raise ValueError(f"blob key escapes the store: {key!r}")
        return path

    async def put_file(self, key: str, source: Path) -> None:
        def move() -> None:
            try:
                target = self._path(key)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(source, target)
            finally:
                remove_quietly(source)  # consumed even when the move fails

        await asyncio.to_thread(move)

    async def stream(self, key: str) -> AsyncIterator[bytes]:
        handle = await asyncio.to_thread(open, self._path(key), "rb")
        try:
            while chunk := await asyncio.to_thread(handle.read, CHUNK_BYTES):
                yield chunk
        finally:
            handle.close()

    @contextlib.asynccontextmanager
    async def local_copy(self, key: str) -> AsyncIterator[Path]:
        path = self._path(key)
        if not await asyncio.to_thread(path.exists):
            raise FileNotFoundError(key)
        yield path

    async def delete(self, key: str) -> None:
        await asyncio.to_thread(remove_quietly, self._path(key))

    async def delete_many(self, keys: list[str]) -> None:
        paths = [self._path(key) for key in keys]
        for start in range(0, len(paths), DELETE_PAGE):
            await asyncio.to_thread(_remove_all, paths[start : start + DELETE_PAGE])

    async def listed(self, prefix: str = "") -> AsyncIterator[tuple[str, float]]:
        if prefix:
            self._path(prefix)  # strictly inside the root
        walk = self._walk(self.root / prefix)
        while page := await asyncio.to_thread(lambda: list(itertools.islice(walk, LIST_PAGE))):
            for item in page:
                yield item

    def _walk(self, top: Path) -> Iterator[tuple[str, float]]:
        """The files under `top` but the spool's, one directory at a time."""
        directories = [top]
        while directories:
            directory = directories.pop()
            try:
                entries = list(os.scandir(directory))
            except FileNotFoundError:
                continue
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if Path(entry.path) != self.spool_dir:
                        directories.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    key = Path(entry.path).relative_to(self.root).as_posix()
                    with contextlib.suppress(FileNotFoundError):
                        yield key, entry.stat(follow_symlinks=False).st_mtime

    async def close(self) -> None:
        return None


def _remove_all(paths: list[Path]) -> None:
    for path in paths:
        remove_quietly(path)
