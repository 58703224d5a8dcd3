"""Asking (D44): retrieve passages with strongroom.retrieval's search, let the answer engine answer,
and keep question and answer in a conversation. Every query is scoped by the caller's
principal: another tenant's or environment's conversation does not exist."""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.answers import (
    AnswerEngine,
    AnswerEvent,
    Cite,
    Delta,
    EngineError,
    NotFound,
    Passage,
    Usage,
)
from strongroom.answers.grounding import unsupported_values
from strongroom.api.pagination import NewestFirst, Position
from strongroom.auth.principal import Principal
from strongroom.chat.models import Conversation, Message, Role
from strongroom.chat.schemas import (
    AnswerType,
    ChatResponse,
    CitationView,
    HighlightView,
    MessageView,
    UsageView,
)
from strongroom.corpus.kinds import DOCUMENT_DELETING
from strongroom.corpus.models import Document
from strongroom.db.reads import Reads
from strongroom.db.types import utcnow
from strongroom.metrics import UNSUPPORTED_ANSWERS
from strongroom.problems import Problem
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.search import Hit, search_chunks
from strongroom.retrieval.semantic import Semantic
from strongroom.retrieval.sentence_vectors import from_blob
from strongroom.retrieval.term_memory import TermMemory
from strongroom.retrieval.vectors import stored_sentences
from strongroom.tenants.partition import Partition
from strongroom.text.question import Question

TITLE_CHARS = 80


def _scoped(principal: Principal):
    return select(Conversation).where(
        Conversation.tenant_id == principal.tenant_id,
        Conversation.environment == principal.environment.value,
    )


async def rename_conversation(
    session: AsyncSession, principal: Principal, conversation_id: uuid.UUID, title: str
) -> Conversation:
    """The caller's conversation retitled; raises Problem 404 for any other. Its `updated_at`
    stays the latest answer's time, as docs/api.md defines it (issue 52)."""
    conversation = await find_conversation(session, principal, conversation_id, for_update=True)
    conversation.title = title
    session.add(conversation)
    await session.flush()
    return conversation


async def delete_conversation(
    session: AsyncSession, principal: Principal, conversation_id: uuid.UUID
) -> None:
    """The caller's conversation goes with its messages (issue 42); Problem 404 for any
    other. The messages are deleted by statement, not left to the foreign key's cascade,
    which SQLite honours only with its foreign keys switched on."""
    conversation = await find_conversation(session, principal, conversation_id, for_update=True)
    await session.exec(  # type: ignore[call-overload]
        sqlalchemy.delete(Message).where(col(Message.conversation_id) == conversation.id)
    )
    await session.delete(conversation)
    await session.flush()


async def find_conversation(
    session: AsyncSession,
    principal: Principal,
    conversation_id: uuid.UUID,
    *,
    for_update: bool = False,
) -> Conversation:
    """The caller's conversation; raises Problem 404 for any other. `for_update` locks its
    row until the transaction ends (PostgreSQL; SQLite writes one at a time anyway)."""
    statement = _scoped(principal).where(Conversation.id == conversation_id)
    if for_update:
        statement = statement.with_for_update()
    conversation = (await session.exec(statement)).first()
    if conversation is None:
        raise Problem("not_found", "No such conversation.")
    return conversation


_conversations = Conversation.__table__
_pages = NewestFirst(
    sqlalchemy.select(  # what a page shows (chat.schemas.ConversationSummary)
        _conversations.c.id,
        _conversations.c.title,
        _conversations.c.created_at,
        _conversations.c.updated_at,
        _conversations.c.message_count,
    ).where(
        _conversations.c.tenant_id == sqlalchemy.bindparam("tenant_id"),
        _conversations.c.environment == sqlalchemy.bindparam("environment"),
    ),
    _conversations.c,
)


async def list_conversations(
    reads: Reads, principal: Principal, *, limit: int, after: Position | None
) -> tuple[list[Any], bool]:
    """Up to `limit` conversations after `after`, newest first, and whether more exist: rows
    with a page's columns, read by statements built once (issue 29)."""
    scope = {"tenant_id": principal.tenant_id, "environment": principal.environment.value}
    return await _pages.page(reads, scope, limit=limit, after=after)


async def messages_of(session: AsyncSession, conversation: Conversation) -> list[Message]:
    statement = (
        select(Message)
        .where(Message.conversation_id == conversation.id)
        .order_by(col(Message.ordinal))
    )
    return list((await session.exec(statement)).all())


async def mark_deleted_citations(
    session: AsyncSession, partition: Partition, messages: list[MessageView]
) -> None:
    """Say of each citation whose document is gone (deleted, or its project being deleted)
    that it is: a stored answer keeps its quoted text (issue 42)."""
    cited = {citation.document_id for message in messages for citation in message.citations}
    if not cited:
        return
    statement = select(Document.id).where(
        col(Document.id).in_(cited),
        Document.tenant_id == partition.tenant_id,
        Document.environment == partition.environment.value,
        Document.status != DOCUMENT_DELETING,
    )
    present = set((await session.exec(statement)).all())
    for message in messages:
        for citation in message.citations:
            citation.document_deleted = citation.document_id not in present


async def previous_question(session: AsyncSession, conversation: Conversation) -> str | None:
    """The conversation's last question, the context of a follow-up."""
    statement = (
        select(Message.content)
        .where(Message.conversation_id == conversation.id, Message.role == Role.USER.value)
        .order_by(col(Message.ordinal).desc())
        .limit(1)
    )
    return (await session.exec(statement)).first()


async def retrieve(
    session: AsyncSession,
    partition: Partition,
    question: Question,
    *,
    k: int,
    filters: Filters,
    context: str | None = None,
    semantic: Semantic | None = None,
    terms: TermMemory | None = None,
) -> list[Passage]:
    """The `k` passages of the partition's documents that best match the question.

    A follow-up ("and for the north wing?") often names little of what it is about; with
    `context` (the conversation's previous question) the ranking for both questions together
    is fused with the question's own ranking (reciprocal rank fusion): passages in both rise
    to the top, so the conversation's topic picks among what the question alone finds (ties
    go to the search in context). Each passage keeps its score from the question's own
    search when it has one. `semantic`: search by meaning too, and each passage comes with
    the vectors of its sentences stored by the provider's model (issue 40: one query for the
    k passages); `terms`: the process's held terms (issue 16)."""
    search = functools.partial(
        search_chunks, session, partition, k=k, filters=filters, semantic=semantic, terms=terms
    )
    hits = await search(question.text, analysed=question.query)
    if context:
        together = await search(f"{context} {question.text}")
        own = {hit.chunk.id: hit for hit in hits}
        fused = fuse_rankings([(together, 1.0), (hits, 1.0)], k=k)
        hits = [own.get(hit.chunk.id, hit) for hit in fused]
    blobs = (
        await stored_sentences(session, [hit.chunk.id for hit in hits], semantic.provider.model)
        if semantic is not None and hits
        else {}
    )
    return [
        Passage(
            number=number,
            chunk_id=hit.chunk.id,
            document_id=hit.chunk.document_id,
            document_name=hit.document_name,
            page_number=hit.chunk.page_number,
            content=hit.chunk.content,
            score=hit.score,
            sentence_vectors=from_blob(blobs.get(hit.chunk.id)),
        )
        for number, hit in enumerate(hits, start=1)
    ]


RRF_K = 60  # the usual constant of reciprocal rank fusion (Cormack et al., 2009)


def fuse_rankings(rankings: list[tuple[list[Hit], float]], *, k: int) -> list[Hit]:
    """The `k` best hits of weighted reciprocal rank fusion; ties keep the first ranking's
    order. Each hit keeps its own search score (from the first ranking holding it)."""
    scores: dict[uuid.UUID, float] = {}
    first_seen: dict[uuid.UUID, Hit] = {}
    for hits, weight in rankings:
        for rank, hit in enumerate(hits, start=1):
            scores[hit.chunk.id] = scores.get(hit.chunk.id, 0.0) + weight / (RRF_K + rank)
            first_seen.setdefault(hit.chunk.id, hit)
    order = sorted(first_seen, key=lambda chunk_id: -scores[chunk_id])  # stable: ties in order
    return [first_seen[chunk_id] for chunk_id in order[:k]]


def citation_of(cite: Cite) -> CitationView:
    return CitationView(
        document_id=cite.passage.document_id,
        document_name=cite.passage.document_name,
        chunk_id=cite.passage.chunk_id,
        page_number=cite.passage.page_number,
        content=cite.passage.content,
        score=cite.passage.score,
        highlight=None
        if cite.highlight is None
        else HighlightView(start=cite.highlight[0], end=cite.highlight[1]),
    )


@dataclass
class Answer:
    """An engine's answer as it accumulates. `answer_type`: "answered", or "not_found" when
    the engine said the passages hold no answer (its citations are then the closest
    passages)."""

    engine: str
    passages: int
    text: str = ""
    citations: list[CitationView] = field(default_factory=list)
    usage: Usage | None = None
    answer_type: AnswerType = "answered"

    def add(self, event: AnswerEvent) -> None:
        if isinstance(event, Delta):
            self.text += event.text
        elif isinstance(event, Cite):
            self.citations.append(citation_of(event))
        elif isinstance(event, NotFound):
            self.answer_type = "not_found"
        else:
            self.usage = event

    @functools.cached_property
    def unsupported_values(self) -> list[str]:
        """The values the answer asserts that no passage it cites holds (issue 27; read once
        the answer is complete): none for a "not found"."""
        if self.answer_type == "not_found":
            return []
        found = unsupported_values(self.text, (citation.content for citation in self.citations))
        if found:
            UNSUPPORTED_ANSWERS.labels(self.engine).inc()
        return found

    @property
    def usage_view(self) -> UsageView:
        usage = self.usage or Usage(0, len(self.text.split()))
        return UsageView(
            engine=self.engine,
            passages=self.passages,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
        )


async def answer_events(
    engine: AnswerEngine, question: Question, passages: list[Passage], *, brief: bool = False
) -> AsyncIterator[AnswerEvent]:
    """The engine's answer; raises EngineError at the end if it held no text at all (an
    empty answer is a failed one, never stored)."""
    said = False
    async for event in engine.answer(question, passages, brief=brief):
        said = said or (isinstance(event, Delta) and bool(event.text.strip()))
        yield event
    if not said:
        raise EngineError("the answer engine returned an empty answer")


async def collect(events: AsyncIterator[AnswerEvent], answer: Answer) -> Answer:
    async for event in events:
        answer.add(event)
    return answer


async def record_exchange(
    session: AsyncSession,
    principal: Principal,
    *,
    conversation_id: uuid.UUID,
    existing: bool,
    question: str,
    answer: Answer,
    message_id: uuid.UUID,
) -> ChatResponse:
    """Store the question and the answer in the conversation (made now if new); the caller
    commits. Both messages land together or not at all."""
    now = utcnow()
    if existing:  # locked: concurrent questions in one conversation take turns
        conversation = await find_conversation(session, principal, conversation_id, for_update=True)
        conversation.updated_at = now
    else:
        conversation = Conversation(
            id=conversation_id,
            tenant_id=principal.tenant_id,
            environment=principal.environment.value,
            owner_id=principal.user_id,
            title=_title(question),
            created_at=now,
            updated_at=now,
        )
    first = conversation.message_count
    conversation.message_count = first + 2
    session.add(conversation)
    usage = answer.usage_view
    session.add_all(
        [
            Message(
                conversation_id=conversation_id,
                ordinal=first,
                role=Role.USER.value,
                content=question,
                created_at=now,
            ),
            Message(
                id=message_id,
                conversation_id=conversation_id,
                ordinal=first + 1,
                role=Role.ASSISTANT.value,
                content=answer.text,
                citations=[citation.model_dump(mode="json") for citation in answer.citations],
                usage=usage.model_dump(mode="json"),
                answer_type=answer.answer_type,
                unsupported_values=answer.unsupported_values,
                created_at=now,
            ),
        ]
    )
    await session.flush()
    return ChatResponse(
        answer=answer.text,
        answer_type=answer.answer_type,
        citations=answer.citations,
        unsupported_values=answer.unsupported_values,
        conversation_id=conversation_id,
        message_id=message_id,
        usage=usage,
    )


def _title(question: str) -> str:
    line = " ".join(question.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"
