"""Field types shared by response models."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, PlainSerializer, StringConstraints

# RFC 3339 in UTC with an explicit `+00:00` offset (D6); pydantic alone would write `Z`.
Timestamp = Annotated[datetime, PlainSerializer(lambda value: value.isoformat(), return_type=str)]


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


def Text(max_length: int, *, min_length: int = 0, strip: bool = False):
    """A string field as PostgreSQL can store it: bounded, and without NUL characters."""
    return Annotated[
        str,
        StringConstraints(strip_whitespace=strip, min_length=min_length, max_length=max_length),
        AfterValidator(_no_nul),
    ]
