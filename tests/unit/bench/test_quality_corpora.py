"""The corpora added to bench-quality (issue 27, item 8: bench/quality/corpora/<name>/) and
their questions agree: each corpus has a tuning half and a held-out half that share no id,
question or gold quote; enough questions of each kind; each answerable question's gold quotes
are found in a document of the corpus (as extracted here, apart from the engine), which holds
its gold facts; unanswerable ones have no gold; every document is in SOURCES.md and the
corpora stay small enough to commit."""

from __future__ import annotations

import functools
import html
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml
from docx import Document
from openpyxl import load_workbook
from pypdf import PdfReader

from bench.quality import scoring

ROOT = Path(__file__).parents[3] / "bench" / "quality"
CORPORA = sorted(path for path in (ROOT / "corpora").iterdir() if path.is_dir())
KINDS = {"lookup", "paraphrase", "multi_fact", "unanswerable"}
EACH_CORPUS = pytest.mark.parametrize("corpus", CORPORA, ids=[path.name for path in CORPORA])


def document_text(path: Path) -> str:
    """A document's text, table cells joined by ` | ` (as the quotes of table rows are)."""
    if path.suffix == ".pdf":
        return "\n".join(page.extract_text() for page in PdfReader(str(path)).pages)
    if path.suffix == ".docx":
        document = Document(str(path))
        rows = [
            " | ".join(cell.text for cell in row.cells if cell.text)
            for table in document.tables
            for row in table.rows
        ]
        return "\n".join([*(p.text for p in document.paragraphs), *rows])
    if path.suffix == ".xlsx":
        workbook = load_workbook(str(path), read_only=True)
        return "\n".join(
            " | ".join(_cell(value) for value in row if value is not None)
            for sheet in workbook.worksheets
            for row in sheet.iter_rows(values_only=True)
        )
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".html":
        text = re.sub(r"</t[dh]>\s*<t[dh]>", " | ", text)
        return html.unescape(re.sub(r"<[^>]+>", " ", text))
    return text


def _cell(value: object) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


@functools.cache  # read by three tests per corpus; none changes them
def questions(corpus: Path, name: str) -> list[dict]:
    return yaml.safe_load((corpus / name).read_text(encoding="utf-8"))["questions"]


def documents(corpus: Path) -> dict[str, str]:
    return {path.name: document_text(path) for path in sorted((corpus / "corpus").iterdir())}


@EACH_CORPUS
def test_each_corpus_has_a_tuning_and_a_heldout_half_with_enough_of_each_kind(corpus) -> None:
    tuning, heldout = questions(corpus, "tuning.yaml"), questions(corpus, "heldout.yaml")
    both = tuning + heldout
    kinds = Counter(q["kind"] for q in both)
    assert set(kinds) <= KINDS
    assert sum(n for kind, n in kinds.items() if kind != "unanswerable") >= 30
    assert kinds["unanswerable"] >= 8 and kinds["paraphrase"] >= 10 and kinds["multi_fact"] >= 3
    for half in (tuning, heldout):
        assert {q["kind"] for q in half} == KINDS, corpus.name
    assert len({q["id"] for q in both}) == len(both)


@EACH_CORPUS
def test_the_halves_share_no_question_or_gold_quote(corpus) -> None:
    tuning, heldout = questions(corpus, "tuning.yaml"), questions(corpus, "heldout.yaml")

    def asked(items: list[dict]) -> set[str]:
        return {scoring.normalise(q["question"]).casefold() for q in items}

    def quotes(items: list[dict]) -> set[str]:
        return {
            scoring.normalise(quote).casefold()
            for q in items
            for quote in scoring.quotes_of(q.get("passage"))
        }

    assert not asked(tuning) & asked(heldout)
    assert not quotes(tuning) & quotes(heldout)


@pytest.fixture
def normalised_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scorer's own `normalise`, remembered: `is_gold` and `holds` normalise a whole
    document on each call, hundreds of times per corpus (issue 54: most of this file's time)."""
    monkeypatch.setattr(scoring, "normalise", functools.cache(scoring.normalise))


@EACH_CORPUS
def test_gold_quotes_are_in_the_corpus_and_their_documents_hold_the_gold_facts(
    corpus, normalised_once
) -> None:
    texts = documents(corpus)
    for q in questions(corpus, "tuning.yaml") + questions(corpus, "heldout.yaml"):
        if q["kind"] == "unanswerable":
            assert not q.get("answer") and not q.get("passage"), q["id"]
            continue
        assert q["answer"] and q["passage"], q["id"]
        holders = [
            text
            for text in texts.values()
            if any(scoring.is_gold(text, quote) for quote in scoring.quotes_of(q["passage"]))
        ]
        assert holders, (q["id"], q["passage"])
        assert any(scoring.holds(text, q["answer"]) for text in holders), q["id"]


def test_corpora_are_small_and_every_document_has_its_source() -> None:
    files = [path for corpus in CORPORA for path in (corpus / "corpus").iterdir()]
    assert len(CORPORA) >= 3
    assert sum(path.stat().st_size for path in files) < 2 * 1024 * 1024
    sources = (ROOT / "SOURCES.md").read_text(encoding="utf-8")
    for path in files:
        assert f"`{path.name}`" in sources, path.name
    assert {path.suffix for path in files} >= {".pdf", ".docx", ".xlsx", ".html", ".md"}
