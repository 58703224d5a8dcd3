"""A small construction contract asked as a new user asks it (issue 40: the README's kind of
questions came back `not_found` or quoted the wrong sentence). The engine as the default
runs it: the extractive engine with meaning by the real offline MiniLM, passages ranked by
meaning, sentence vectors made beforehand as ingestion makes them (no mock)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from strongroom.answers.base import Cite, Delta, NotFound, Passage
from strongroom.answers.extractive import ExtractiveEngine, sentence_texts
from strongroom.answers.meaning import Meaning
from strongroom.embeddings.minilm import MiniLMEmbeddings
from strongroom.retrieval.sentence_vectors import from_blob, to_blob
from strongroom.text.question import Question

CONTRACT = (Path(__file__).parent / "harbour_tower_contract.md").read_text()


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbeddings:
    return MiniLMEmbeddings()


async def ask(minilm, question: str) -> tuple[str, list[Cite], bool]:
    sections = [block for block in CONTRACT.split("\n## ") if block.strip()]
    vectors = await minilm.embed(sections)
    (query,) = await minilm.embed([question])
    order = sorted(range(len(sections)), key=lambda index: -float(vectors[index] @ query))
    passages = []
    for number, index in enumerate(order, start=1):
        texts = sentence_texts(sections[index])
        stored = from_blob(to_blob(texts, await minilm.embed(texts)))
        passages.append(
            Passage(
                number, uuid.uuid4(), uuid.uuid4(), "contract.md", 1, sections[index], 1.0, stored
            )
        )
    events = [
        e async for e in ExtractiveEngine(Meaning(minilm)).answer(Question.read(question), passages)
    ]
    text = "".join(event.text for event in events if isinstance(event, Delta))
    cites = [event for event in events if isinstance(event, Cite)]
    return text, cites, any(isinstance(event, NotFound) for event in events)


def first_sentence(text: str) -> str:
    return re.split(r"\s\[\d+\]", text, maxsplit=1)[0]


@pytest.mark.parametrize(
    ("question", "fact"),
    [
        ("What are the liquidated damages for late completion?", r"\$25,000 per day"),
        ("What is the Contract Sum?", r"AUD 12,450,000"),
        ("What percentage of retention is held?", r"retain 5%"),
        ("How much was certified for Payment Claim No. 5?", r"certified AUD 1,180,000"),
        ("How much was claimed in Payment Claim No. 5?", r"claimed AUD 1,250,000"),
        ("How long is the defects liability period?", r"12 months"),
        ("What is the maximum liquidated damages?", r"not exceed 10% of the Contract Sum"),
        ("Which law governs the contract?", r"laws of New South Wales"),
    ],
)
async def test_the_first_quoted_sentence_states_the_value_asked_for(minilm, question, fact):
    text, cites, not_found = await ask(minilm, question)
    assert not not_found
    assert re.search(fact, first_sentence(text)), text
    markers = {int(n) for n in re.findall(r"\[(\d+)\]", text)}
    assert markers <= set(range(1, len(cites) + 1))


async def test_the_retention_release_is_answered_with_the_sentence_that_goes_on_with_it(minilm):
    text, _, _ = await ask(minilm, "When is the retention released?")
    assert "Half of the retention is released at Practical Completion." in text
    assert "The balance of the retention is released at the end of the Defects" in text


async def test_what_the_contract_does_not_say_is_not_found(minilm):
    _, cites, not_found = await ask(minilm, "What is the site's noise limit at night in decibels?")
    assert not_found
    assert all(cite.highlight is not None for cite in cites[:1])
