"""Request and response models of chat and conversations (D44)."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from strongroom.api.fields import Text, Timestamp
from strongroom.api.pagination import Page
from strongroom.vault.schemas import MAX_FILTER_IDS


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: Text(8000, min_length=1, strip=True) = Field(
        description="The question, about the documents in scope."
    )
    project_ids: list[uuid.UUID] | None = Field(
        default=None,
        max_length=MAX_FILTER_IDS,
        description="Answer only from these projects' documents; omitted: every project's.",
    )
    document_ids: list[uuid.UUID] | None = Field(
        default=None,
        max_length=MAX_FILTER_IDS,
        description="Answer only from these documents; omitted: every document in scope.",
    )
    conversation_id: uuid.UUID | None = Field(
        default=None, description="Continue this conversation; omitted: start a new one."
    )
    k: int = Field(default=15, ge=1, le=50, description="How many passages to retrieve.")


class HighlightView(BaseModel):
    start: int = Field(description="Offset of the first character, in `content`'s characters.")
    end: int = Field(description="Offset just after the last character.")


class CitationView(BaseModel):
    document_id: uuid.UUID
    document_name: str
    chunk_id: uuid.UUID
    page_number: int
    content: str = Field(description="The text of the chunk the answer rests on.")
    score: float = Field(description="The passage's search relevance.")
    highlight: HighlightView | None = Field(
        default=None,
        description="Where in `content` to look first: the sentences the answer quotes, or, "
        "in a `not_found` answer, the sentence that came closest to answering. Absent when "
        "the engine does not say (the `openai` engine).",
    )
    document_deleted: bool = Field(
        default=False,
        description="True when the cited document has been deleted since the answer: its "
        "quoted `content` is kept here, and `document_id` is then 404.",
    )


class UsageView(BaseModel):
    engine: str
    passages: int = Field(description="Passages retrieved and given to the engine.")
    input_tokens: int
    output_tokens: int


AnswerType = Literal["answered", "not_found"]
_ANSWER_TYPE = (
    "`answered`: the answer says what the cited passages hold. `not_found`: no sentence of the "
    "passages answers the question; the answer says so, and `citations` are the closest "
    "passages, for a person to read."
)
_UNSUPPORTED = (
    "Values (numbers, amounts, dates, durations, percentages) the answer asserts that no "
    "passage it cites holds: check them before relying on the answer. Empty when every value "
    "stands in a cited passage."
)


class ChatResponse(BaseModel):
    answer: str
    answer_type: AnswerType = Field(description=_ANSWER_TYPE)
    citations: list[CitationView]
    unsupported_values: list[str] = Field(description=_UNSUPPORTED)
    conversation_id: uuid.UUID
    message_id: uuid.UUID = Field(description="The id of the answer's message.")
    usage: UsageView


class ProgressEvent(BaseModel):
    """A stream's first event: the passages are retrieved."""

    stage: Literal["retrieved"] = "retrieved"
    passages: int


class DeltaEvent(BaseModel):
    """The next piece of a streamed answer."""

    text: str


class ConversationSummary(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    title: str
    created_at: Timestamp
    updated_at: Timestamp
    message_count: int


class UpdateConversation(BaseModel):
    """What a PATCH changes (issue 42)."""

    model_config = ConfigDict(extra="forbid")

    title: Text(255, min_length=1, strip=True) = Field(description="The conversation's title.")


class ConversationPage(Page[ConversationSummary]):
    """A page of conversations, newest first."""


class MessageView(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    role: str
    content: str
    citations: list[CitationView]
    usage: UsageView | None = Field(description="An answer's; null for a question.")
    answer_type: AnswerType | None = Field(
        default=None, description=_ANSWER_TYPE + " Null for a question."
    )
    unsupported_values: list[str] | None = Field(
        default=None, description=_UNSUPPORTED + " Null for a question."
    )
    created_at: Timestamp


class ConversationDetail(ConversationSummary):
    messages: list[MessageView] = Field(description="Oldest first.")
