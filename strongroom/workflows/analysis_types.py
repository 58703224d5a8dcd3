"""What the offline analyses (summary, key terms, comparison) take and give.

They take `Source`s, passages of documents (a document's chunks, in reading order), and
give frozen dataclasses whose every quoted or derived item carries `Evidence`: the passage
it rests on and an `excerpt` that is an exact substring of that passage's `content`.
`to_json()` turns a result into plain JSON values (UUIDs as strings, tuples as lists).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Source:
    """A passage of a document: a chunk with the page it is on."""

    document_id: uuid.UUID
    document_name: str
    chunk_id: uuid.UUID
    page_number: int
    content: str


@dataclass(frozen=True)
class Evidence:
    """Where a result comes from: `excerpt` is `content[start:end]` of the source whose
    `chunk_id` this is, for some start and end."""

    document_id: uuid.UUID
    document_name: str  # issue 40: evidence names its document
    chunk_id: uuid.UUID
    page_number: int
    excerpt: str

    @classmethod
    def of(cls, source: Source, start: int, end: int) -> Evidence:
        return cls(
            source.document_id,
            source.document_name,
            source.chunk_id,
            source.page_number,
            source.content[start:end],
        )


def jsonable(value: Any) -> Any:
    """`value` as JSON values: dataclasses as objects, UUIDs as strings, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: jsonable(getattr(value, field.name)) for field in dataclasses.fields(value)
        }
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    return value


class JsonResult:
    """Mixed into the result dataclasses."""

    def to_json(self) -> dict[str, Any]:
        return jsonable(self)


def by_document(sources: Iterable[Source]) -> list[list[Source]]:
    """The sources grouped by document, documents in order of first appearance, each
    document's passages in page order (passages of one page keep the order given)."""
    groups: dict[uuid.UUID, list[Source]] = {}
    for source in sources:
        groups.setdefault(source.document_id, []).append(source)
    return [sorted(group, key=lambda source: source.page_number) for group in groups.values()]


def squash(text: str) -> str:
    """`text` on one line: runs of white space (wrapped lines) as one space."""
    return " ".join(text.split())
