"""The answer engine that calls an OpenAI-compatible chat-completions endpoint (D44).

The retrieved passages, numbered as `Passage.number`, go upstream as the grounding context
with an instruction to answer only from them and to cite them as `[n]`. The answer streams
back as Server-Sent Events and is passed on token by token as `Delta`s; once the upstream
has finished, each passage the answer cites with a valid `[n]` is reported once as a `Cite`
(in order of first citation), then the upstream's token `Usage` (or word counts when it
sends none). The markers passed on are renumbered as they stream (`Renumbered`): `[n]` is
the n-th citation, as with every engine. An answer that is the instructed "not found" is a
`NotFound` citing the CLOSEST best-ranked passages instead. Whether the values an answer
asserts stand in the passages it cites is checked for every engine alike
(strongroom.answers.grounding, by chat).

Every connect and every read waits at most `chat_openai_timeout_seconds`. Connection
failures, timeouts, 429 and 5xx answers are retried up to `chat_openai_max_retries` times
with a short exponential backoff, but only while no text has been passed on: after the first
`Delta` a failure ends the answer with `EngineError` (or `EngineTimeout`). The API key is
sent as a Bearer token and never logged nor put in an error.

Bounded whatever the upstream sends (issue 15 point 4): every request asks for at most
`chat_openai_max_tokens`, and the answer passed on (and so stored) is cut at
`chat_max_answer_chars` characters. At the cap the engine stops reading, hangs up on the
upstream, and ends the answer cleanly with `TRUNCATED_NOTICE` appended; an event line longer
than any answer within the cap could need ends the answer the same way, without being read
whole.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import SecretStr

from strongroom.answers.base import (
    CLOSEST,
    NO_PASSAGES,
    NOT_FOUND_PHRASE,
    AnswerEvent,
    Cite,
    Delta,
    EngineError,
    EngineTimeout,
    NotFound,
    Passage,
    Usage,
)
from strongroom.settings import Settings
from strongroom.text.question import Question

log = logging.getLogger("strongroom.chat")  # the name its logs had before the move: kept

SYSTEM_PROMPT = (
    "You answer questions about the user's documents. Use only the numbered passages in the "
    "user's message, never outside knowledge. After each statement, cite the passages it "
    "rests on by their numbers in square brackets, like [1] or [2][3]. If the passages do "
    f'not contain the answer, reply only "{NOT_FOUND_PHRASE}." and cite nothing. Answer '
    "in the language of the question, concisely."
)

BRIEF_PROMPT = (
    " Reply with the value asked for and nothing else (a name, a date, an amount, a short "
    "phrase), followed by the one passage number it comes from, like: 5% [2]."
)

TRUNCATED_NOTICE = "\n\n[The answer was cut short: it reached the length limit.]"
# An event line may hold the cap's characters JSON-escaped (`\uXXXX`: 6 bytes each) and
# the chunk's other members; past this it cannot be a chunk within the cap.
_LINE_OVERHEAD_BYTES = 64 * 1024

BACKOFF_BASE_SECONDS = 0.2
BACKOFF_CAP_SECONDS = 2.0

# `[3]`, and groups such as `[1, 4]` that models also write.
_MARKER = re.compile(r"\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]")
_SPACED_MARKER = re.compile(r"(\s*)" + _MARKER.pattern)
_MARKER_MAX_CHARS = 40  # an open bracket further back than this is no marker
_SSE_FIELDS = frozenset({"data", "event", "id", "retry"})


class _Retryable(Exception):
    """A failure worth another attempt, if no text has been passed on yet."""

    def __init__(self, error: EngineError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass
class _Progress:
    """What one `answer` has received so far, across attempts."""

    parts: list[str] = field(default_factory=list)
    usage: Usage | None = None
    chars: int = 0
    truncated: bool = False

    @property
    def started(self) -> bool:
        return bool(self.parts)


def build_messages(
    question: str, passages: list[Passage], *, brief: bool = False
) -> list[dict[str, str]]:
    """The system instruction and the user's message: the numbered passages, then the
    question."""
    blocks = [
        f"[{passage.number}] {passage.document_name}, page {passage.page_number}\n"
        f"{passage.content.strip()}"
        for passage in passages
    ]
    user = "Passages:\n\n" + "\n\n".join(blocks) + f"\n\nQuestion: {question.strip()}"
    system = SYSTEM_PROMPT + (BRIEF_PROMPT if brief else "")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


class Renumbered:
    """The model's markers as a client reads them (issue 53, item 7): the model cites
    passages by their number (`[7]`); a client reads `[n]` as the n-th of the answer's
    citations, which are the passages in order of first citation. Each marker is rewritten
    as the text streams: a passage's citation number is given the first time it is named; a
    number naming no passage is dropped, and a marker naming none at all goes. A piece that
    ends inside what may be a marker keeps it back until it closes or cannot be one."""

    def __init__(self, passages: list[Passage]) -> None:
        self._by_number = {passage.number: passage for passage in passages}
        self._order: dict[int, int] = {}  # passage number -> its place among the citations
        self._held = ""

    def feed(self, piece: str) -> str:
        text, self._held = self._held + piece, ""
        start = text.rfind("[")
        if start != -1 and "]" not in text[start:] and len(text) - start <= _MARKER_MAX_CHARS:
            text, self._held = text[:start], text[start:]
        return _SPACED_MARKER.sub(self._renumbered, text)

    def flush(self) -> str:
        """What is held back at the end of the answer."""
        text, self._held = self._held, ""
        return _SPACED_MARKER.sub(self._renumbered, text)

    def cited(self) -> list[Passage]:
        """The passages the text fed so far cites, each once, in the order of their first
        citation: the n-th is the one its `[n]` now names."""
        return [self._by_number[number] for number in self._order]

    def _renumbered(self, marker: re.Match[str]) -> str:
        cited: list[int] = []
        for number in (int(part) for part in marker.group(2).split(",")):
            if number in self._by_number:
                place = self._order.setdefault(number, len(self._order) + 1)
                if place not in cited:
                    cited.append(place)
        # One naming no passage goes with the space before it.
        return f"{marker.group(1)}[{', '.join(map(str, cited))}]" if cited else ""


def says_not_found(text: str) -> bool:
    """Whether the model's answer is the "not found" it was told to give (perhaps quoted,
    perhaps with a marker after it)."""
    return text.strip().strip("\"'*").lower().startswith(NOT_FOUND_PHRASE.lower())


def _words(text: str) -> int:
    return len(text.split())


def _backoff(attempt: int) -> float:
    return min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2**attempt)


class OpenAICompatibleEngine:
    name = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: SecretStr | str | None = None,
        timeout_seconds: float = 30.0,
        max_retries: int = 2,
        max_tokens: int = 1024,
        max_answer_chars: int = 32_000,
    ) -> None:
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        self._api_key = SecretStr(api_key) if isinstance(api_key, str) else api_key
        self._timeout = timeout_seconds
        self._max_retries = max_retries
        self._max_tokens = max_tokens
        self._max_chars = max_answer_chars
        self._max_line_bytes = 6 * max_answer_chars + _LINE_OVERHEAD_BYTES
        self._client: httpx.AsyncClient | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAICompatibleEngine:
        if not (settings.chat_openai_base_url and settings.chat_openai_model):
            raise ValueError("the openai engine needs chat_openai_base_url and chat_openai_model")
        return cls(
            base_url=settings.chat_openai_base_url,
            model=settings.chat_openai_model,
            api_key=settings.chat_openai_api_key,
            timeout_seconds=settings.chat_openai_timeout_seconds,
            max_retries=settings.chat_openai_max_retries,
            max_tokens=settings.chat_openai_max_tokens,
            max_answer_chars=settings.chat_max_answer_chars,
        )

    def __repr__(self) -> str:
        return f"OpenAICompatibleEngine(url={self._url!r}, model={self._model!r})"

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self._timeout))
        return self._client

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def answer(
        self, question: Question, passages: list[Passage], *, brief: bool = False
    ) -> AsyncIterator[AnswerEvent]:
        if not passages:
            yield NotFound()
            yield Delta(NO_PASSAGES)
            yield Usage(0, _words(NO_PASSAGES))
            return
        messages = build_messages(question.text, passages, brief=brief)
        payload = {
            "model": self._model,
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": self._max_tokens,
            "messages": messages,
        }
        progress = _Progress()
        markers = Renumbered(passages)
        attempt = 0
        while True:
            try:
                # aclosing: a consumer that stops early closes the upstream response at once.
                async with aclosing(self._stream(payload, progress)) as pieces:
                    async for piece in pieces:
                        if shown := markers.feed(piece):
                            yield Delta(shown)
                if rest := markers.flush():
                    yield Delta(rest)
                if progress.truncated:
                    progress.parts.append(TRUNCATED_NOTICE)
                    yield Delta(TRUNCATED_NOTICE)
                break
            except _Retryable as failure:
                if progress.started or attempt >= self._max_retries:
                    raise failure.error from None
                log.warning(
                    "chat upstream attempt %d failed, retrying: %s", attempt + 1, failure.error
                )
                await asyncio.sleep(_backoff(attempt))
                attempt += 1
        text = "".join(progress.parts)
        if says_not_found(text):  # the passages best ranked are the closest it was given
            yield NotFound()
            cited = passages[:CLOSEST]
        else:
            cited = markers.cited()
        for passage in cited:
            yield Cite(passage, excerpt=passage.content)
        yield progress.usage or Usage(
            sum(_words(message["content"]) for message in messages), _words(text)
        )

    async def _stream(self, payload: dict[str, Any], progress: _Progress) -> AsyncIterator[str]:
        """One attempt: the text pieces as they arrive. Raises `_Retryable` for failures
        worth another attempt, `EngineError` for the others."""
        headers = {"Accept": "text/event-stream"}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key.get_secret_value()}"
        try:
            async with self._http().stream(
                "POST", self._url, json=payload, headers=headers
            ) as response:
                status = response.status_code
                if status == 429 or status >= 500:
                    raise _Retryable(EngineError(f"the chat upstream answered {status}"))
                if status != 200:
                    raise EngineError(f"the chat upstream refused the request ({status})")
                finished = False
                async for data in _sse_data(response, self._max_line_bytes):
                    if data is None:  # an event too long for any answer within the cap
                        progress.truncated = finished = True
                        break
                    if data.strip() == "[DONE]":
                        finished = True
                        break
                    piece, done = _read_chunk(data, progress)
                    finished = finished or done
                    room = self._max_chars - progress.chars
                    if len(piece) > room:
                        piece, progress.truncated = piece[:room], True
                    if piece:
                        progress.chars += len(piece)
                        progress.parts.append(piece)
                        yield piece
                    if progress.truncated:
                        finished = True
                        break  # leaving the block closes the connection: no more is read
                if not finished:
                    raise _Retryable(EngineError("the chat upstream ended its answer early"))
        except httpx.TimeoutException:
            raise _Retryable(
                EngineTimeout(f"the chat upstream did not answer within {self._timeout:g} s")
            ) from None
        except httpx.TransportError as exc:
            raise _Retryable(
                EngineError(f"the chat upstream connection failed ({type(exc).__name__})")
            ) from None


async def _sse_data(response: httpx.Response, max_line_bytes: int) -> AsyncIterator[str | None]:
    """The `data` of each Server-Sent Event of `response`; anything that is not an event
    stream is an `EngineError`. A line longer than `max_line_bytes` yields None and ends
    the stream: it is never held whole."""
    lines: list[str] = []
    async for line in _bounded_lines(response, max_line_bytes):
        if line is None:
            yield None
            return
        if not line:
            if lines:
                yield "\n".join(lines)
                lines = []
            continue
        if line.startswith(":"):  # a comment (keep-alive)
            continue
        name, _, value = line.partition(":")
        if name not in _SSE_FIELDS:
            raise EngineError("the chat upstream did not answer with an event stream")
        if name == "data":
            lines.append(value.removeprefix(" "))
    if lines:
        yield "\n".join(lines)


async def _bounded_lines(
    response: httpx.Response, max_line_bytes: int
) -> AsyncIterator[str | None]:
    """The response's lines (LF, CRLF or CR ends one, as in SSE), decoded as UTF-8; None
    once a line passes `max_line_bytes`, and nothing after it."""
    buffer = bytearray()
    async for data in response.aiter_bytes():
        buffer += data
        start = 0
        while True:
            ends = [i for i in (buffer.find(b"\n", start), buffer.find(b"\r", start)) if i >= 0]
            if not ends:
                break
            end = min(ends)
            if buffer[end] == 0x0D and end + 1 == len(buffer):
                break  # a CR last: the LF of a CRLF may come with the next data
            if end - start > max_line_bytes:
                yield None
                return
            yield buffer[start:end].decode("utf-8", "replace")
            start = end + 1
            if buffer[end] == 0x0D and buffer[start : start + 1] == b"\n":
                start += 1
        del buffer[:start]
        if len(buffer) > max_line_bytes:
            yield None
            return
    if buffer:
        yield buffer.decode("utf-8", "replace").rstrip("\r")


def _read_chunk(data: str, progress: _Progress) -> tuple[str, bool]:
    """The text piece of one chat.completion.chunk and whether it finished the answer;
    records its usage in `progress`."""
    try:
        chunk = json.loads(data)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply
        raise EngineError("the chat upstream sent an event that is not JSON") from None
    if not isinstance(chunk, dict):
        raise EngineError("the chat upstream sent an event that is not a completion chunk")
    if "error" in chunk:
        raise EngineError("the chat upstream reported an error mid-answer")
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if isinstance(prompt, int) and isinstance(completion, int):
            progress.usage = Usage(prompt, completion)
    choices = chunk.get("choices")
    if choices is None and isinstance(usage, dict):
        return "", False
    if not isinstance(choices, list):
        raise EngineError("the chat upstream sent a chunk without choices")
    if not choices:  # the usage chunk
        return "", False
    choice = choices[0]
    if not isinstance(choice, dict):
        raise EngineError("the chat upstream sent a malformed choice")
    delta = choice.get("delta") or {}
    content = delta.get("content") if isinstance(delta, dict) else None
    if content is not None and not isinstance(content, str):
        raise EngineError("the chat upstream sent a malformed delta")
    return content or "", choice.get("finish_reason") is not None
