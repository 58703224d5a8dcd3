"""Streaming `multipart/form-data` uploads (D42, D45).

The body is read chunk by chunk from the connection and parsed as it arrives (python-
multipart's push parser); the one file part goes to a spool file in the blob store's spool
directory, hashed on the way, and never sits whole in memory. Past `max_file_bytes` the upload
stops at once with 413 `file_too_large` and the spool file is removed; so is it whenever the
request fails before a handler takes the file over.

A slow upload is cut off (issue 18): 408 `request_timeout` when no byte arrives for
`upload_idle_timeout_seconds`, or the whole body has not arrived after
`upload_timeout_seconds`. A boundary longer than python-multipart's limit is 400
`bad_request` (RFC 2046 allows 70 characters).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from python_multipart.exceptions import FormParserError, MultipartParseError
from python_multipart.multipart import (
    MAX_BOUNDARY_LENGTH,
    MultipartParser,
    parse_options_header,
)
from quart import request

from strongroom.current import current_settings
from strongroom.problems import Problem
from strongroom.settings import Settings
from strongroom.storage.base import remove_quietly, spool_file

FILE_FIELD = "file"
MAX_FIELD_BYTES = 64 * 1024
MAX_PARTS = 32
_WRITE_BATCH = 1024 * 1024


@dataclass
class SpooledFile:
    path: Path
    filename: str
    size: int
    sha256: str

    async def discard(self) -> None:
        await asyncio.to_thread(remove_quietly, self.path)


@dataclass
class MultipartForm:
    fields: dict[str, str] = field(default_factory=dict)
    file: SpooledFile | None = None

    async def discard(self) -> None:
        if self.file is not None:
            await self.file.discard()


class _Receiver:
    """Collects the parser's callbacks for one chunk; `drain` acts on them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.header_field = bytearray()
        self.header_value = bytearray()
        self.headers: dict[str, bytes] = {}

    def callbacks(self) -> dict:
        return {
            "on_part_begin": self._part_begin,
            "on_header_field": lambda data, start, end: self.header_field.extend(data[start:end]),
            "on_header_value": lambda data, start, end: self.header_value.extend(data[start:end]),
            "on_header_end": self._header_end,
            "on_headers_finished": lambda: self.events.append(("headers", self.headers)),
            "on_part_data": lambda data, start, end: self.events.append(
                ("data", bytes(data[start:end]))
            ),
            "on_part_end": lambda: self.events.append(("end", b"")),
        }

    def _part_begin(self) -> None:
        self.headers = {}  # a new dict: the events of earlier parts keep theirs
        self.events.append(("begin", b""))

    def _header_end(self) -> None:
        self.headers[self.header_field.decode("latin-1").lower()] = bytes(self.header_value)
        self.header_field.clear()
        self.header_value.clear()


async def receive_multipart(spool_dir: Path, max_file_bytes: int) -> MultipartForm:
    """Parse the request's multipart body; raises Problem (and leaves no spool file)."""
    content_type, options = parse_options_header(request.headers.get("Content-Type", ""))
    boundary = options.get(b"boundary")
    if content_type != b"multipart/form-data" or not boundary:
        raise Problem("unsupported_media_type", "Send the upload as multipart/form-data.")
    if len(boundary) > MAX_BOUNDARY_LENGTH:
        raise Problem(
            "bad_request",
            f"The multipart boundary is longer than {MAX_BOUNDARY_LENGTH} characters.",
        )
    length = request.content_length
    if length is not None and length > max_file_bytes + MAX_PARTS * MAX_FIELD_BYTES:
        raise _too_large(max_file_bytes)  # refused before a byte of it is read
    form = MultipartForm()
    try:
        clock = _Clock(current_settings())
        await _read(form, boundary, spool_dir, max_file_bytes, clock)
    except BaseException:
        await form.discard()
        raise
    return form


class _Clock:
    """How long the next chunk of the body may take: the idle timeout, and never past the
    whole upload's deadline."""

    def __init__(self, settings: Settings) -> None:
        self.idle = settings.upload_idle_timeout_seconds
        self.total = settings.upload_timeout_seconds
        self.deadline = asyncio.get_running_loop().time() + self.total

    async def chunks(self) -> AsyncIterator[bytes]:
        body = aiter(request.body)
        loop = asyncio.get_running_loop()
        while True:
            left = self.deadline - loop.time()
            wait = min(self.idle, left)
            try:
                async with asyncio.timeout(max(wait, 0)):
                    chunk = await anext(body)
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise self._timed_out(whole=wait < self.idle) from None
            yield chunk

    def _timed_out(self, *, whole: bool) -> Problem:
        if whole:
            detail = f"The upload did not arrive within {self.total:g} seconds."
        else:
            detail = f"The upload sent nothing for {self.idle:g} seconds."
        return Problem("request_timeout", detail, headers={"Connection": "close"})


async def _read(
    form: MultipartForm, boundary: bytes, spool_dir: Path, limit: int, clock: _Clock
) -> None:
    receiver = _Receiver()
    try:
        parser = MultipartParser(boundary, receiver.callbacks())
    except FormParserError as error:  # a boundary python-multipart refuses
        raise Problem("bad_request", "The multipart boundary is invalid.") from error
    part: dict | None = None
    sink: _FileSink | None = None
    parts = 0
    try:
        async for chunk in clock.chunks():
            try:
                parser.write(chunk)
            except MultipartParseError as error:
                raise Problem("bad_request", "The multipart body is malformed.") from error
            for kind, data in receiver.events:
                if kind == "begin":
                    parts += 1
                    if parts > MAX_PARTS:
                        raise Problem("bad_request", f"More than {MAX_PARTS} form parts.")
                elif kind == "headers":
                    part = _describe(data)
                    if part["filename"] is not None:
                        if part["name"] != FILE_FIELD or sink is not None:
                            raise _field_error(part["name"], "send exactly one file, as `file`")
                        fd, path = await asyncio.to_thread(spool_file, spool_dir)
                        sink = _FileSink(fd, path, part["filename"])
                        form.file = SpooledFile(path, part["filename"], 0, "")
                    else:
                        part["value"] = bytearray()
                elif kind == "data" and part is not None:
                    if part["filename"] is not None:
                        assert sink is not None
                        await sink.write(data)
                        if sink.size > limit:
                            raise _too_large(limit)
                    else:
                        part["value"].extend(data)
                        if len(part["value"]) > MAX_FIELD_BYTES:
                            raise _field_error(part["name"], "too long")
                elif kind == "end" and part is not None:
                    if part["filename"] is None:
                        form.fields[part["name"]] = _text(part["name"], part["value"])
                    part = None
            receiver.events.clear()
        parser.finalize()
        if sink is not None:
            size, digest = await sink.close()
            form.file = SpooledFile(sink.path, sink.filename, size, digest)
            sink = None
    finally:
        if sink is not None:
            await sink.abandon()


class _FileSink:
    """Batches writes to the spool file and hashes them, off the event loop."""

    def __init__(self, fd: int, path: Path, filename: str) -> None:
        self.handle = os.fdopen(fd, "wb")
        self.path = path
        self.filename = filename
        self.hasher = hashlib.sha256()
        self.size = 0
        self.buffer = bytearray()

    async def write(self, data: bytes) -> None:
        self.size += len(data)
        self.buffer.extend(data)
        if len(self.buffer) >= _WRITE_BATCH:
            await self._flush()

    async def _flush(self) -> None:
        data = bytes(self.buffer)
        self.buffer.clear()

        def write() -> None:
            self.handle.write(data)
            self.hasher.update(data)

        await asyncio.to_thread(write)

    async def close(self) -> tuple[int, str]:
        await self._flush()
        await asyncio.to_thread(self.handle.close)
        return self.size, self.hasher.hexdigest()

    async def abandon(self) -> None:
        await asyncio.to_thread(self.handle.close)
        await asyncio.to_thread(remove_quietly, self.path)


def _describe(headers: dict[str, bytes]) -> dict:
    _, options = parse_options_header(headers.get("content-disposition", b""))
    name = options.get(b"name", b"").decode("utf-8", "replace")
    filename = options.get(b"filename")
    return {
        "name": name,
        "filename": None if filename is None else filename.decode("utf-8", "replace"),
    }


def _text(name: str, value: bytearray) -> str:
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _field_error(name, "not UTF-8 text") from error
    if "\x00" in text:
        raise _field_error(name, "contains a NUL character")
    return text


def _field_error(name: str, message: str) -> Problem:
    return Problem(
        "validation_error",
        "The upload form is invalid.",
        errors=[{"field": name or "body", "message": message}],
    )


def _too_large(limit: int) -> Problem:
    return Problem(
        "file_too_large",
        f"The file is larger than the limit of {limit} bytes.",
        max_bytes=limit,
    )
