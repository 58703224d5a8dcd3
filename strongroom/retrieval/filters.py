"""What a search is narrowed to inside its partition (D43): projects, documents, or both."""

from __future__ import annotations

import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class Filters:
    project_ids: list[uuid.UUID] | None = None
    document_ids: list[uuid.UUID] | None = None
