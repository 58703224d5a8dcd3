"""Conversations and their messages (D44), partitioned by tenant and environment (D13)."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Index, Text
from sqlmodel import Field, SQLModel

from strongroom.db.types import UTCDateTime, utcnow


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


class Conversation(SQLModel, table=True):
    __tablename__ = "conversations"
    # Keyset pages on (created_at, id), newest first, like every list (D5).
    __table_args__ = (
        Index("ix_conversations_scope_created", "tenant_id", "environment", "created_at", "id"),
    )

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", ondelete="CASCADE")
    environment: str = Field(max_length=8)
    owner_id: uuid.UUID = Field(foreign_key="users.id")
    title: str = Field(max_length=255)
    message_count: int = Field(default=0)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)


class Message(SQLModel, table=True):
    __tablename__ = "messages"
    __table_args__ = (Index("ix_messages_conversation_ordinal", "conversation_id", "ordinal"),)

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    conversation_id: uuid.UUID = Field(foreign_key="conversations.id", ondelete="CASCADE")
    # Position in the conversation: messages of one request share created_at.
    ordinal: int
    role: str = Field(max_length=16)
    content: str = Field(sa_type=Text)
    citations: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSON)
    usage: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    # An answer's: "answered" or "not_found", and the values it asserts that no passage it
    # cites holds (issue 27); null for a question.
    answer_type: str | None = Field(default=None, max_length=16)
    unsupported_values: list[str] | None = Field(default=None, sa_type=JSON)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
