"""The framing of calls and answers between strongroom/jobs/bounded.py's WorkPool and its
children (strongroom/jobs/child.py): an 8-byte big-endian length, then that many bytes."""

from __future__ import annotations

import asyncio
from typing import BinaryIO

HEADER_BYTES = 8


def header(size: int) -> bytes:
    return size.to_bytes(HEADER_BYTES, "big")


def write_frame(stream: BinaryIO, payload: bytes | list[bytes]) -> None:
    """One frame of `payload`, or of its pieces one after the other (not joined first: an
    answer's text can be 50 MB)."""
    pieces = [payload] if isinstance(payload, bytes) else payload
    stream.write(header(sum(map(len, pieces))))
    stream.writelines(pieces)
    stream.flush()


def read_frame(stream: BinaryIO) -> bytes | None:
    """The next frame's payload; None at the end of the stream (or of a cut frame)."""
    head = stream.read(HEADER_BYTES)
    if len(head) < HEADER_BYTES:
        return None
    size = int.from_bytes(head, "big")
    payload = stream.read(size)
    return payload if len(payload) == size else None


class FrameTooLarge(Exception):
    pass


async def read_frame_async(stream: asyncio.StreamReader, most: int) -> bytes:
    """The next frame's payload; raises asyncio.IncompleteReadError at the end of the stream,
    FrameTooLarge past `most` bytes (before reading them)."""
    size = int.from_bytes(await stream.readexactly(HEADER_BYTES), "big")
    if size > most:
        raise FrameTooLarge(f"an answer of {size} bytes, more than {most}")
    return await stream.readexactly(size)
