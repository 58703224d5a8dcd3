"""bench-quality's questions and corpus agree (issue 15, point 5): enough questions of each
kind, each answerable one with gold facts its gold passage holds, and each gold quote found in
exactly one document of bench/quality/corpus/ (so that search results and citations can be
judged by it); the corpus stays small enough for CI and every file is in SOURCES.md."""

from __future__ import annotations

import csv
import html
import re
from collections import Counter
from pathlib import Path

import yaml
from docx import Document

from bench.quality import scoring

ROOT = Path(__file__).parents[3] / "bench" / "quality"
QUESTIONS = yaml.safe_load((ROOT / "questions.yaml").read_text())["questions"]


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


def test_unanswerable_questions_have_no_gold() -> None:
    for q in QUESTIONS:
        if q["kind"] == "unanswerable":
            assert not q.get("answer") and not q.get("passage"), q["id"]


def test_each_gold_quote_is_in_exactly_one_document_which_holds_the_gold_facts() -> None:
    for q in (q for q in QUESTIONS if q["kind"] != "unanswerable"):
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
