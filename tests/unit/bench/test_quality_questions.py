"""bench-quality's questions and corpus agree (issue 15, point 5): enough questions of each
kind, each answerable one with gold facts its gold passage holds, and each gold quote found in
exactly one document of bench/quality/corpus/ (so that search results and citations can be
judged by it); the corpus stays small enough for CI and every file is in SOURCES.md.

The same checks hold for heldout.yaml, the held-out set that tuning never sees (its mix is
fixed: 10 lookups, 16 paraphrases, 2 multi-fact, 8 unanswerable), and it shares no id,
question or gold quote with questions.yaml."""

from __future__ import annotations

import csv
import functools
import html
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml
from docx import Document

from bench.quality import scoring

ROOT = Path(__file__).parents[3] / "bench" / "quality"
QUESTIONS = yaml.safe_load((ROOT / "questions.yaml").read_text())["questions"]
HELDOUT = yaml.safe_load((ROOT / "heldout.yaml").read_text())["questions"]
QUESTION_SETS = pytest.mark.parametrize(
    "questions", [QUESTIONS, HELDOUT], ids=["questions.yaml", "heldout.yaml"]
)


def document_text(path: Path) -> str:
    if path.suffix == ".docx":
        return "\n".join(p.text for p in Document(str(path)).paragraphs)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".html":
        return html.unescape(re.sub(r"<[^>]+>", " ", text))
    if path.suffix == ".csv":
        return "\n".join(" ".join(row) for row in csv.reader(text.splitlines()))
    return text


CORPUS = {path.name: document_text(path) for path in sorted((ROOT / "corpus").iterdir())}


def test_enough_questions_of_each_kind_with_unique_ids() -> None:
    kinds = Counter(q["kind"] for q in QUESTIONS)
    assert len(QUESTIONS) >= 60
    assert kinds["paraphrase"] >= 20 and kinds["unanswerable"] >= 10 and kinds["multi_fact"] >= 3
    assert set(kinds) <= {"lookup", "paraphrase", "multi_fact", "unanswerable"}
    assert len({q["id"] for q in QUESTIONS}) == len(QUESTIONS)


def test_heldout_set_has_its_mix_of_kinds_with_unique_ids() -> None:
    kinds = Counter(q["kind"] for q in HELDOUT)
    assert kinds == {"lookup": 10, "paraphrase": 16, "multi_fact": 2, "unanswerable": 8}
    assert len({q["id"] for q in HELDOUT}) == len(HELDOUT)


def test_heldout_set_shares_no_id_question_or_gold_quote_with_the_tuning_set() -> None:
    def quotes(questions: list[dict]) -> set[str]:
        return {
            scoring.normalise(quote).casefold()
            for q in questions
            for quote in scoring.quotes_of(q.get("passage"))
        }

    assert not {q["id"] for q in HELDOUT} & {q["id"] for q in QUESTIONS}
    asked = {scoring.normalise(q["question"]).casefold() for q in QUESTIONS}
    assert not {scoring.normalise(q["question"]).casefold() for q in HELDOUT} & asked
    for heldout_quote in quotes(HELDOUT):
        for tuning_quote in quotes(QUESTIONS):
            assert heldout_quote not in tuning_quote and tuning_quote not in heldout_quote, (
                heldout_quote,
                tuning_quote,
            )


@QUESTION_SETS
def test_unanswerable_questions_have_no_gold(questions: list[dict]) -> None:
    for q in questions:
        if q["kind"] == "unanswerable":
            assert not q.get("answer") and not q.get("passage"), q["id"]


@QUESTION_SETS
def test_each_gold_quote_is_in_exactly_one_document_which_holds_the_gold_facts(
    questions: list[dict], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The scorer's own `normalise`, remembered: `is_gold` normalises a whole document on
    # each call, for every quote and document (issue 54).
    monkeypatch.setattr(scoring, "normalise", functools.cache(scoring.normalise))
    for q in (q for q in questions if q["kind"] != "unanswerable"):
        assert q["answer"] and q["passage"], q["id"]
        for quote in scoring.quotes_of(q["passage"]):
            holders = [name for name, text in CORPUS.items() if scoring.is_gold(text, quote)]
            assert len(holders) == 1, (q["id"], quote, holders)
        gold_documents = [
            text
            for text in CORPUS.values()
            if any(scoring.is_gold(text, quote) for quote in scoring.quotes_of(q["passage"]))
        ]
        assert any(scoring.holds(text, q["answer"]) for text in gold_documents), q["id"]


def test_corpus_is_small_and_every_file_has_its_source() -> None:
    files = list((ROOT / "corpus").iterdir())
    assert sum(path.stat().st_size for path in files) < 2 * 1024 * 1024
    sources = (ROOT / "SOURCES.md").read_text()
    for path in files:
        assert f"`{path.name}`" in sources, path.name
    assert {path.suffix for path in files} >= {".md", ".txt", ".html", ".csv", ".docx"}
