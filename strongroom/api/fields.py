"""Field types shared by response models."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import PlainSerializer

# RFC 3339 in UTC with an explicit `+00:00` offset (D6); pydantic alone would write `Z`.
Timestamp = Annotated[datetime, PlainSerializer(lambda value: value.isoformat(), return_type=str)]
