"""Chat and conversation endpoints (D44).

The work behind them (service.py: the tables, the search, the answer's checks) is imported at
the first chat request rather than at every start (issue 29): `service` is a
`strongroom.lazy.LazyModule`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator

from quart import Response, g

from strongroom.answers import Cite, Delta, EngineError, Passage
from strongroom.api.capability import Call, Capability, Routes
from strongroom.api.pagination import PageQuery, page_of
from strongroom.api.sse import KEEPALIVE, KEEPALIVE_SECONDS, EventStream, frame, with_keepalive
from strongroom.auth.scopes import Scope
from strongroom.chat.schemas import (
    ChatRequest,
    ChatResponse,
    CitationView,
    ConversationDetail,
    ConversationPage,
    ConversationSummary,
    DeltaEvent,
    MessageView,
    ProgressEvent,
    UpdateConversation,
)
from strongroom.lazy import LazyModule
from strongroom.problems import Problem, ProblemDocument
from strongroom.retrieval.filters import Filters
from strongroom.services import Services
from strongroom.text.question import Question
from strongroom.vault.scope import require_own_filters

service = LazyModule("strongroom.chat.service")

log = logging.getLogger("strongroom.chat")
routes = Routes()

ASK = frozenset({Scope.CHAT_WRITE.value})  # alone: the spec's scope table (D44)
CHAT_READ = frozenset({Scope.CHAT_READ.value})


_ENGINE_DETAIL = {
    "upstream_timeout": "The answer engine did not answer in time; retry.",
    "upstream_error": "The answer engine failed; retry.",
}


def _engine_problem(error: EngineError) -> Problem:
    """The problem for `error`, by the code the error itself names (as a job's does)."""
    return Problem(error.problem_code, _ENGINE_DETAIL[error.problem_code])


async def _prepare(
    call: Call[Services],
) -> tuple[ChatRequest, Question, uuid.UUID, bool, list[Passage]]:
    """The request, its question (read once, for the search and the engine), its conversation
    id (new, or checked to be the caller's), whether it exists, and the passages retrieved
    for the question. Reads in a session of its own, so no database connection is held while
    the engine answers."""
    request: ChatRequest = call.body
    question = Question.read(request.query)
    existing = request.conversation_id is not None
    filters = Filters(project_ids=request.project_ids, document_ids=request.document_ids)
    context = None
    async with call.services.sessions() as session:
        await require_own_filters(session, call.principal, filters)
        if request.conversation_id is not None:
            conversation = await service.find_conversation(
                session, call.principal, request.conversation_id
            )
            context = await service.previous_question(session, conversation)
        passages = await service.retrieve(
            session,
            call.principal,
            question,
            k=request.k,
            filters=filters,
            context=context,
            semantic=call.services.semantic(),
            terms=call.services.terms,
        )
    return request, question, request.conversation_id or uuid.uuid4(), existing, passages


@routes.capability(
    Capability(
        name="chat.ask",
        method="POST",
        path="/api/v2/chat",
        summary="Ask a question about the documents",
        description="Retrieves the best passages of the caller's documents (filtered by "
        "`project_ids`/`document_ids`), answers from them with citations, and keeps question "
        "and answer in a conversation.",
        tag="chat",
        scopes=ASK,
        cost=10,
        oauth=False,
        body=ChatRequest,
        response=ChatResponse,
        # The conversation, a project or document id not the caller's; the answer engine.
        problems=frozenset({"not_found", "upstream_error", "upstream_timeout"}),
    )
)
async def ask(call: Call[Services]) -> ChatResponse:
    request, question, conversation_id, existing, passages = await _prepare(call)
    engine = call.services.answers
    try:
        answer = await service.collect(
            service.answer_events(engine, question, passages),
            service.Answer(engine.name, len(passages)),
        )
    except EngineError as error:  # its message never holds the upstream key
        log.warning("answer engine failed: %s", error, extra={"error": type(error).__name__})
        raise _engine_problem(error) from error
    return await service.record_exchange(
        call.session,
        call.principal,
        conversation_id=conversation_id,
        existing=existing,
        question=request.query,
        answer=answer,
        message_id=uuid.uuid4(),
    )


@routes.capability(
    Capability(
        name="chat.stream",
        method="POST",
        path="/api/v2/chat/stream",
        summary="Ask a question, with the answer streamed as Server-Sent Events",
        description="The same as POST /api/v2/chat, as `text/event-stream`: `progress`, "
        '`citation` and `delta` (`{"text"}`) events as the answer is produced, then `done` '
        "with the whole response, or `error` with a problem. Comments keep an idle stream "
        "open. The conversation is stored when the answer is complete.",
        tag="chat",
        scopes=ASK,
        cost=10,
        oauth=False,
        body=ChatRequest,
        streams=True,
        events={
            "progress": ProgressEvent,
            "citation": CitationView,
            "delta": DeltaEvent,
            "done": ChatResponse,
            "error": ProblemDocument,
        },
        # The conversation, a project or document id; engine failures: `error` events.
        problems=frozenset({"not_found"}),
    )
)
async def ask_stream(call: Call[Services]) -> EventStream:
    request, question, conversation_id, existing, passages = await _prepare(call)
    stream = EventStream()
    stream.frames = _answer_frames(
        call, g.request_id, stream, request, question, conversation_id, existing, passages
    )
    return stream


async def _answer_frames(
    call: Call[Services],
    request_id: str,
    stream: EventStream,
    request: ChatRequest,
    question: Question,
    conversation_id: uuid.UUID,
    existing: bool,
    passages: list[Passage],
) -> AsyncIterator[bytes]:
    services, principal = call.services, call.principal
    engine = services.answers
    answer = service.Answer(engine.name, len(passages))
    yield frame("progress", ProgressEvent(passages=len(passages)).model_dump())
    try:
        events = service.answer_events(engine, question, passages)
        async for event in with_keepalive(events, KEEPALIVE_SECONDS):
            if event is None:
                yield KEEPALIVE
                continue
            answer.add(event)
            if isinstance(event, Delta):
                yield frame("delta", DeltaEvent(text=event.text).model_dump())
            elif isinstance(event, Cite):
                yield frame("citation", answer.citations[-1].model_dump(mode="json"))
    except EngineError as error:
        log.warning(
            "answer engine failed mid-stream: %s", error, extra={"error": type(error).__name__}
        )
        problem = _engine_problem(error)
        yield frame("error", problem.body(services.settings.base_url, request_id))
        return
    async with services.sessions() as session:
        response = await service.record_exchange(
            session,
            principal,
            conversation_id=conversation_id,
            existing=existing,
            question=request.query,
            answer=answer,
            message_id=uuid.uuid4(),
        )
        await session.commit()
    stream.succeeded = True
    yield frame("done", response.model_dump(mode="json"))


@routes.capability(
    Capability(
        name="chat.list_conversations",
        method="GET",
        path="/api/v2/conversations",
        summary="List conversations, newest first",
        tag="chat",
        scopes=CHAT_READ,
        cost=1,
        query=PageQuery,
        response=ConversationPage,
    )
)
async def list_conversations(call: Call[Services]) -> ConversationPage:
    query: PageQuery = call.query
    scope = "chat.list_conversations"
    after = call.services.cursors.after(scope, query.cursor)
    rows, has_more = await service.list_conversations(
        call.services.reads, call.principal, limit=query.page_size, after=after
    )
    return page_of(ConversationPage, rows, has_more, cursors=call.services.cursors, scope=scope)


@routes.capability(
    Capability(
        name="chat.update_conversation",
        method="PATCH",
        path="/api/v2/conversations/<uuid:conversation_id>",
        summary="Rename a conversation",
        tag="chat",
        scopes=ASK,
        cost=1,
        oauth=False,
        body=UpdateConversation,
        response=ConversationSummary,
        problems=frozenset({"not_found"}),
    )
)
async def update_conversation(call: Call[Services]) -> ConversationSummary:
    conversation = await service.rename_conversation(
        call.session, call.principal, call.path["conversation_id"], call.body.title
    )
    return ConversationSummary.model_validate(conversation)


@routes.capability(
    Capability(
        name="chat.delete_conversation",
        method="DELETE",
        path="/api/v2/conversations/<uuid:conversation_id>",
        summary="Delete a conversation and its messages",
        tag="chat",
        scopes=ASK,
        cost=1,
        oauth=False,
        status=204,
        problems=frozenset({"not_found"}),
    )
)
async def delete_conversation(call: Call[Services]) -> Response:
    await service.delete_conversation(call.session, call.principal, call.path["conversation_id"])
    return Response(b"", status=204)


@routes.capability(
    Capability(
        name="chat.get_conversation",
        method="GET",
        path="/api/v2/conversations/<uuid:conversation_id>",
        summary="Get a conversation with its messages, oldest first",
        tag="chat",
        scopes=CHAT_READ,
        cost=1,
        response=ConversationDetail,
    )
)
async def get_conversation(call: Call[Services]) -> ConversationDetail:
    conversation = await service.find_conversation(
        call.session, call.principal, call.path["conversation_id"]
    )
    messages = [
        MessageView.model_validate(message)
        for message in await service.messages_of(call.session, conversation)
    ]
    await service.mark_deleted_citations(call.session, call.principal, messages)
    return ConversationDetail(
        **ConversationSummary.model_validate(conversation).model_dump(), messages=messages
    )
