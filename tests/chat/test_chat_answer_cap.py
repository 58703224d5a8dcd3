"""Issue 15 point 4: the `openai` engine asks for at most `chat_openai_max_tokens` on every
request and cuts the answer it passes on and stores at `chat_max_answer_chars`, hanging up
on an upstream that sends more (the issue's sent 196 MB). The upstream is
tests/chat_upstream.py, a real HTTP server standing in for the LLM provider, which cannot
run here; the sizes are scaled down with the cap."""

from __future__ import annotations

import asyncio

import pytest

from strongroom.answers.base import Delta
from strongroom.answers.openai import TRUNCATED_NOTICE, OpenAICompatibleEngine
from strongroom.app import create_app
from strongroom.tenants.models import RateLimitTier
from strongroom.text.question import Question
from tests.chat.conftest import parse_events
from tests.chat_upstream import Reply
from tests.unit.answers.test_openai_engine import passages
from tests.vault.conftest import Vault, unique_word

CAP = 2_000
FLOOD = ["x" * 100_000] * 200  # 20 MB in 200 events, 100 times the cap


async def answer_text(engine: OpenAICompatibleEngine) -> str:
    pieces = []
    async with asyncio.timeout(20):
        async for event in engine.answer(Question.read("What is the retention?"), passages()):
            if isinstance(event, Delta):
                pieces.append(event.text)
    return "".join(pieces)


@pytest.fixture
async def capped(chat_upstream):
    engine = OpenAICompatibleEngine(
        base_url=chat_upstream.base_url,
        model="m",
        max_tokens=77,
        max_answer_chars=CAP,
        max_retries=0,
    )
    yield engine
    await engine.close()


async def test_every_request_carries_max_tokens(capped, chat_upstream):
    chat_upstream.script(Reply(text="Five per cent [1]."))
    assert await answer_text(capped) == "Five per cent [1]."
    assert chat_upstream.requests[0].json["max_tokens"] == 77


@pytest.mark.parametrize(
    "reply",
    # Paced, so that what the engine leaves unread is never sent (a local socket would
    # otherwise take it all into its buffers at once).
    [
        Reply(chunks=FLOOD, delay=0.01),
        Reply(chunks=["y" * 10] * 5_000, delay=0.002),
        Reply(chunks=["z" * 5_000_000] * 3, delay=0.5),
    ],
    ids=["large events", "many small events", "one event far past the cap"],
)
async def test_an_answer_past_the_cap_is_cut_and_the_upstream_is_hung_up_on(
    capped, chat_upstream, reply
):
    chat_upstream.script(reply)
    text = await answer_text(capped)
    assert text.endswith(TRUNCATED_NOTICE)
    assert len(text) <= CAP + len(TRUNCATED_NOTICE)
    async with asyncio.timeout(5):
        await chat_upstream.hung_up.wait()  # it stopped reading: the rest was never sent
    assert chat_upstream.abandoned == 1 and chat_upstream.finished == 0


async def test_an_answer_within_the_cap_is_not_marked(capped, chat_upstream):
    chat_upstream.script(Reply(chunks=["a" * 1_000, "b" * 1_000]))  # exactly the cap
    assert await answer_text(capped) == "a" * 1_000 + "b" * 1_000


@pytest.fixture
async def capped_api(settings, chat_upstream, worker, make_credential):
    configured = settings.model_copy(
        update={
            "chat_engine": "openai",
            "chat_openai_base_url": chat_upstream.base_url,
            "chat_openai_model": "test-model",
            "chat_openai_max_retries": 0,
            "chat_max_answer_chars": CAP,
        }
    )
    app = create_app(configured)
    async with app.test_app():
        credential = await make_credential(tier=RateLimitTier.ENTERPRISE)
        yield Vault(app.test_client(), credential.headers)


async def test_the_streamed_and_stored_answer_is_cut_at_the_cap(capped_api, chat_upstream):
    word = unique_word()
    project_id = await capped_api.create_project()
    document = await capped_api.ingested(
        f"The retention for {word} is five per cent.".encode(), "r.txt", project_id
    )
    assert document["status"] == "ready", document["error"]
    chat_upstream.script(Reply(chunks=["[1] ", *FLOOD], delay=0.01))
    response = await capped_api.client.post(
        "/api/v2/chat/stream",
        json={"query": f"What is the retention for {word}?"},
        headers=capped_api.headers,
    )
    events = parse_events(await response.get_data())
    assert events[-1][0] == "done"
    streamed = "".join(data["text"] for kind, data in events if kind == "delta")
    done = events[-1][1]
    assert streamed == done["answer"]
    assert streamed.endswith(TRUNCATED_NOTICE) and len(streamed) <= CAP + len(TRUNCATED_NOTICE)
    stored = await capped_api.get(f"/api/v2/conversations/{done['conversation_id']}")
    assert stored["messages"][1]["content"] == streamed
    assert chat_upstream.abandoned == 1
