"""Cursor pagination (spec 2.6, D5): newest first, keyset on (created_at, id).

A cursor is `<payload>.<mac>`, both base64url: the payload names the endpoint and its
filters, and the position after which the next page starts; the MAC (HMAC-SHA-256 under the
server secret, truncated to 128 bits) makes it tamper-evident. Anything that does not verify,
or that belongs to another endpoint or other filters, is 422 `invalid_cursor`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import and_, bindparam, or_
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession
from sqlmodel.sql.expression import Select

from strongroom.db.reads import Reads
from strongroom.problems import Problem

DEFAULT_LIMIT = 25
MAX_LIMIT = 100
MAX_CURSOR_BYTES = 1024
MAC_BYTES = 16

Item = TypeVar("Item", bound=BaseModel)
PageT = TypeVar("PageT", bound="Page")


class PageQuery(BaseModel):
    """Query parameters of every list endpoint."""

    model_config = ConfigDict(extra="ignore")

    limit: int | None = Field(
        default=None,
        description=f"Page size, default {DEFAULT_LIMIT}; above {MAX_LIMIT} clamps to "
        f"{MAX_LIMIT}, zero or below falls back to {DEFAULT_LIMIT}.",
    )
    cursor: str | None = Field(
        default=None, description="The `next_cursor` of the previous page (opaque)."
    )

    @field_validator("limit", mode="before")
    @classmethod
    def _integer_text(cls, value: object) -> object:
        """Query values are text; only an optionally signed run of digits is an integer."""
        if isinstance(value, str) and not re.fullmatch(r"[+-]?\d+", value.strip()):
            raise ValueError("must be an integer")
        return value

    @property
    def page_size(self) -> int:
        if self.limit is None or self.limit <= 0:
            return DEFAULT_LIMIT
        return min(self.limit, MAX_LIMIT)


class Page(BaseModel, Generic[Item]):
    data: list[Item]
    next_cursor: str | None = Field(description="Null exactly when `has_more` is false.")
    has_more: bool


Position = tuple[datetime, uuid.UUID]


class CursorCodec:
    def __init__(self, secret: bytes) -> None:
        self._key = hashlib.sha256(b"strongroom/cursor\x00" + secret).digest()

    def encode(self, scope: str, position: Position) -> str:
        created_at, item_id = position
        payload = json.dumps(
            {"s": scope, "t": created_at.isoformat(), "i": str(item_id)},
            separators=(",", ":"),
        ).encode()
        return f"{_b64(payload)}.{_b64(self._mac(payload))}"

    def decode(self, scope: str, cursor: str) -> Position:
        """Return the position in `cursor`; raises Problem `invalid_cursor`."""
        try:
            if len(cursor.encode()) > MAX_CURSOR_BYTES:
                raise ValueError("too long")
            encoded_payload, encoded_mac = cursor.split(".")
            payload = _unb64(encoded_payload)
            if not hmac.compare_digest(_unb64(encoded_mac), self._mac(payload)):
                raise ValueError("bad mac")
            fields = json.loads(payload)
            if fields["s"] != scope:
                raise ValueError("other endpoint or filters")
            return datetime.fromisoformat(fields["t"]), uuid.UUID(fields["i"])
        except (ValueError, KeyError, TypeError, binascii.Error) as error:
            raise Problem(
                "invalid_cursor",
                "The cursor is not one this endpoint issued for these filters.",
            ) from error

    def after(self, scope: str, cursor: str | None) -> Position | None:
        """Where the page after `cursor` starts; None (the first page) without one. Raises
        Problem `invalid_cursor` as `decode` does."""
        return self.decode(scope, cursor) if cursor else None

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()[:MAC_BYTES]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    if not text.isascii():
        raise ValueError("not ascii")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


async def newest_first(
    session: AsyncSession, statement: Select, model: Any, *, limit: int, after: Position | None
) -> tuple[list[Any], bool]:
    """Run `statement` (a select of `model`, which has `created_at` and `id`) for one page:
    up to `limit` rows after `after`, newest first (D5), and whether more exist."""
    if after is not None:
        created_at, item_id = after
        statement = statement.where(
            or_(
                col(model.created_at) < created_at,
                and_(col(model.created_at) == created_at, col(model.id) < item_id),
            )
        )
    statement = statement.order_by(col(model.created_at).desc(), col(model.id).desc())
    rows = list((await session.exec(statement.limit(limit + 1))).all())
    return rows[:limit], len(rows) > limit


class NewestFirst:
    """`newest_first` for a list read on a hot path, with statements built once: the
    statement's own filters are bind parameters (`sqlalchemy.bindparam`), given to `page` as
    `params`, and the page is read through `Reads` (db/reads.py): on PostgreSQL the
    statement, compiled once, runs on psycopg itself (issue 29). Rows, not ORM objects."""

    def __init__(self, statement: Select, columns: Any) -> None:
        newest = (columns.created_at.desc(), columns.id.desc())
        limit = bindparam("page_rows")
        self._first = statement.order_by(*newest).limit(limit)
        self._after = (
            statement.where(
                or_(
                    columns.created_at < bindparam("after_created_at"),
                    and_(
                        columns.created_at == bindparam("after_created_at"),
                        columns.id < bindparam("after_id"),
                    ),
                )
            )
            .order_by(*newest)
            .limit(limit)
        )

    async def page(
        self,
        reads: Reads,
        params: dict[str, Any],
        *,
        limit: int,
        after: Position | None,
    ) -> tuple[list[Any], bool]:
        """Up to `limit` rows after `after`, newest first, and whether more exist."""
        values = {**params, "page_rows": limit + 1}
        statement = self._first
        if after is not None:
            values["after_created_at"], values["after_id"] = after
            statement = self._after
        rows = await reads.all(statement, values)
        return rows[:limit], len(rows) > limit


def page_of(
    page_type: type[PageT],
    rows: list[Any],
    has_more: bool,
    *,
    cursors: CursorCodec,
    scope: str,
    position: Callable[[Any], Position] = lambda row: (row.created_at, row.id),
) -> PageT:
    """The page envelope (spec 2.6) of `rows`, with a cursor after the last one's `position`
    when more exist; `scope` names the endpoint and its filters, which the cursor is bound
    to (D5)."""
    next_cursor = cursors.encode(scope, position(rows[-1])) if has_more else None
    return page_type.model_validate(
        {"data": rows, "next_cursor": next_cursor, "has_more": has_more}, from_attributes=True
    )
