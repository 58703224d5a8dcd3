"""The extractive engine with meaning (strongroom.answers.meaning, issue 15): with an embeddings
provider configured, a sentence that answers a question worded otherwise is chosen, and the
answer still says "not found" when nothing answers. The provider is the real offline MiniLM
(no mock); its failure is a real unreachable upstream."""

from __future__ import annotations

import uuid

import pytest

from strongroom.answers.base import Cite, Delta, NotFound, Passage
from strongroom.answers.extractive import NOT_FOUND, ExtractiveEngine
from strongroom.answers.meaning import Meaning
from strongroom.embeddings.minilm import MiniLMEmbeddings
from strongroom.embeddings.openai import OpenAIEmbeddings
from strongroom.text.question import Question


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbeddings:
    return MiniLMEmbeddings()


def passages(*texts: str) -> list[Passage]:
    return [
        Passage(number, uuid.uuid4(), uuid.uuid4(), "contract.md", 1, text, 1.0)
        for number, text in enumerate(texts, start=1)
    ]


FAR = passages(
    "(e) If satisfactory progress has not been made, the Contracting Officer may retain a "
    "maximum of 10 percent of the amount of the payment until satisfactory progress is "
    "achieved. The Contractor shall furnish a payment bond before work begins.",
    "The Contractor shall submit three copies of a practicable schedule within five days "
    "after the work commences.",
)


async def answer(engine: ExtractiveEngine, question: str, found: list[Passage]):
    events = [event async for event in engine.answer(Question.read(question), found)]
    text = "".join(event.text for event in events if isinstance(event, Delta))
    return text, [event for event in events if isinstance(event, Cite)]


async def test_a_paraphrased_question_is_answered_by_the_sentence_that_means_it(minilm):
    question = "How much can be held back from a payment when progress is unsatisfactory?"
    words_only, _ = await answer(ExtractiveEngine(), question, FAR)
    assert words_only == NOT_FOUND  # it shares almost no word with the clause
    text, cites = await answer(ExtractiveEngine(Meaning(minilm)), question, FAR)
    assert text.startswith("(e) If satisfactory progress has not been made")
    assert "10 percent" in text
    assert [cite.passage.number for cite in cites] == [1]


async def test_a_question_nothing_answers_still_gets_not_found(minilm):
    engine = ExtractiveEngine(Meaning(minilm))
    events = [
        event
        async for event in engine.answer(
            Question.read("Who won the football final last night?"), FAR
        )
    ]
    assert events[0] == NotFound()  # its citations are the closest passages, not an answer
    assert "".join(event.text for event in events if isinstance(event, Delta)) == NOT_FOUND


async def test_a_lookup_in_the_documents_words_is_answered_as_before(minilm):
    question = "How many copies of the practicable schedule must the Contractor submit?"
    plain, _ = await answer(ExtractiveEngine(), question, FAR)
    text, _ = await answer(ExtractiveEngine(Meaning(minilm)), question, FAR)
    assert text.split(" [")[0] == plain.split(" [")[0]
    assert "three copies" in text


async def test_closeness_is_the_cosine_of_the_question_with_each_sentence(minilm):
    meaning = Meaning(minilm)
    sentences = ["The Contractor shall furnish a payment bond.", "Retain 10 percent."]
    found = await meaning.closeness("payment bond", sentences)
    vectors = await minilm.embed(["payment bond", *sentences])
    assert found == pytest.approx([float(vectors[1] @ vectors[0]), float(vectors[2] @ vectors[0])])


async def test_an_unreachable_provider_leaves_the_choice_to_words():
    # A real HTTP client against a port nothing listens on: the failure the engine must survive.
    provider = OpenAIEmbeddings(
        base_url="http://127.0.0.1:9/v1", upstream_model="m", timeout_seconds=0.5, max_retries=0
    )
    engine = ExtractiveEngine(Meaning(provider))
    question = "How many copies of the practicable schedule must the Contractor submit?"
    text, cites = await answer(engine, question, FAR)
    assert "three copies" in text
    assert [cite.passage.number for cite in cites] == [2]


async def test_a_template_field_is_answered_as_chat_answers_its_question(minilm):
    """Issue 53 item 6: the brief answer (a template field) is chat's answer narrowed to the
    value asked, with chat's citations; chat answering by meaning fills the field too (the
    field was left empty before, a field chat answered right)."""
    engine = ExtractiveEngine(Meaning(minilm))
    question = "How much can be held back from a payment when progress is unsatisfactory?"
    chat, chat_cites = await answer(engine, question, FAR)
    assert "10 percent" in chat
    events = [event async for event in engine.answer(Question.read(question), FAR, brief=True)]
    brief = "".join(event.text for event in events if isinstance(event, Delta))
    assert brief == "10 percent"
    assert [event for event in events if isinstance(event, Cite)] == chat_cites
