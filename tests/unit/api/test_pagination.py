"""D5: cursors round-trip, are bound to their scope and resist tampering."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from strongroom.api.pagination import CursorCodec, PageQuery
from strongroom.problems import Problem

POSITION = (datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), uuid.uuid4())


def test_cursor_round_trips_and_is_url_safe():
    codec = CursorCodec(b"secret")
    cursor = codec.encode("scope", POSITION)
    assert codec.decode("scope", cursor) == POSITION
    assert all(c.isalnum() or c in "-_." for c in cursor)
    assert len(cursor) <= 1024


def test_cursor_is_bound_to_scope_and_secret():
    cursor = CursorCodec(b"secret").encode("scope", POSITION)
    with pytest.raises(Problem) as raised:
        CursorCodec(b"secret").decode("other", cursor)
    assert raised.value.code == "invalid_cursor"
    with pytest.raises(Problem):
        CursorCodec(b"other secret").decode("scope", cursor)


def test_no_cursor_is_the_first_page_and_a_cursor_is_decoded():
    codec = CursorCodec(b"secret")
    assert codec.after("scope", None) is None
    assert codec.after("scope", "") is None
    assert codec.after("scope", codec.encode("scope", POSITION)) == POSITION
    with pytest.raises(Problem):
        codec.after("scope", "not-a-cursor")


@pytest.mark.parametrize(
    ("limit", "size"), [(None, 25), (0, 25), (-1, 25), (1, 1), (100, 100), (101, 100)]
)
def test_page_size_follows_d5(limit, size):
    assert PageQuery(limit=limit).page_size == size
