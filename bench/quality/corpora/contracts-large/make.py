"""Writes the documents of the `contracts-large` bench-quality corpus from its text.

`text/` holds the public-domain FAR clause text as read from the GSA's DITA source of the
FAR (SOURCES.md says where, and what was changed); this script writes what is uploaded, in
`corpus/`, with the helpers of bench/quality/make_corpora.py: a copy of the Markdown and
of the plain-text document, two PDFs (fpdf2), two DOCX (python-docx, one with the price
comparison table of FAR 52.225-9 (d)), an HTML page and an XLSX clause matrix (openpyxl)
written from `text/clause-matrix.csv`. Run it again after changing a text file:

    .venv/bin/python bench/quality/corpora/contracts-large/make.py

    .venv/bin/python bench/quality/corpora/contracts-large/make.py --check

`--check` writes nothing: it confirms that every question of tuning.yaml and heldout.yaml is
well formed, that every `passage` stands word for word in a file of `text/` (after the
normalisation the benchmark applies: white space runs as one space, curly quotes straight,
Markdown emphasis removed), that every `answer` pattern matches the file that holds the
passage, and that the passages also stand in the text extracted from `corpus/` (a plain
extraction written here, not the engine's). It exits non-zero on any failure.
"""

from __future__ import annotations

import csv
import html
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # bench/quality, for make_corpora

from make_corpora import write_docx, write_html, write_pdf, write_xlsx  # noqa: E402

TEXT = HERE / "text"
CORPUS = HERE / "corpus"

# FAR 52.225-9 (d), the "Foreign and Domestic Construction Materials Price Comparison" form,
# as the clause prints it (its empty first and last columns left out; "Item1:" as "Item 1:").
PRICE_TABLE = [
    ["Construction Material Description", "Unit of Measure", "Quantity", "Price (dollars)*"],
    ["Item 1:", "", "", ""],
    ["Foreign construction material", "_______", "_______", "_______"],
    ["Domestic construction material", "_______", "_______", "_______"],
    ["Item 2:", "", "", ""],
    ["Foreign construction material", "_______", "_______", "_______"],
    ["Domestic construction material", "_______", "_______", "_______"],
]

# text file -> (document in corpus/, how it is written)
DOCUMENTS = {
    "payments-prompt-payment.txt": "far-payments-prompt-payment.pdf",
    "labor-standards.txt": "far-labor-standards.docx",
    "bonds-and-sureties.txt": "far-bonds-and-sureties.html",
    "site-work-and-drawings.md": "far-site-work-and-drawings.md",
    "time-changes-and-disputes.txt": "far-time-changes-and-disputes.txt",
    "inspection-and-termination.txt": "far-inspection-and-termination.pdf",
    "buy-american-construction-materials.txt": "far-buy-american-construction-materials.docx",
    "clause-matrix.csv": "far-construction-clause-matrix.xlsx",
}


def clause_matrix() -> list[list[str]]:
    with (TEXT / "clause-matrix.csv").open(encoding="utf-8", newline="") as f:
        return [row for row in csv.reader(f)]


def build() -> None:
    shutil.rmtree(CORPUS, ignore_errors=True)
    CORPUS.mkdir()
    for source, target in DOCUMENTS.items():
        src, out = TEXT / source, CORPUS / target
        if target.endswith((".md", ".txt")):
            shutil.copy(src, out)
        elif target.endswith(".pdf"):
            write_pdf(src, out)
        elif target.endswith(".docx"):
            write_docx(src, out, PRICE_TABLE if "buy-american" in source else None)
        elif target.endswith(".html"):
            write_html(src, out, {})
        elif target.endswith(".xlsx"):
            write_xlsx(clause_matrix(), out, "Clause matrix")
    for path in sorted(CORPUS.iterdir()):
        print(f"{path.name}: {path.stat().st_size} bytes")


# --- check ---------------------------------------------------------------------------------

QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def normalise(text: str, markdown: bool = False) -> str:
    text = text.translate(QUOTES)
    if markdown:
        text = re.sub(r"\*\*(.+?)\*\*", r"\1", text)
        text = re.sub(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])", r"\1", text)
        text = re.sub(r"^#+ ", "", text, flags=re.M)
    return re.sub(r"\s+", " ", text).strip()


def text_files() -> dict[str, str]:
    return {p.name: normalise(p.read_text(encoding="utf-8"), p.suffix == ".md")
            for p in sorted(TEXT.iterdir())}  # fmt: skip


def extracted_corpus() -> dict[str, str]:
    """A plain extraction of corpus/ (pypdf, python-docx, tags stripped, openpyxl cells)."""
    from docx import Document
    from openpyxl import load_workbook
    from pypdf import PdfReader

    out = {}
    for path in sorted(CORPUS.iterdir()):
        if path.suffix == ".pdf":
            text = "\n".join(page.extract_text() or "" for page in PdfReader(path).pages)
        elif path.suffix == ".docx":
            doc = Document(str(path))
            parts = [p.text for p in doc.paragraphs]
            for table in doc.tables:
                parts += [" | ".join(c.text for c in row.cells) for row in table.rows]
            text = "\n".join(parts)
        elif path.suffix == ".html":
            text = html.unescape(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8")))
        elif path.suffix == ".xlsx":
            sheet = load_workbook(path).active
            text = "\n".join(" | ".join("" if v is None else str(v) for v in row)
                             for row in sheet.iter_rows(values_only=True))  # fmt: skip
        else:
            text = path.read_text(encoding="utf-8")
        out[path.name] = normalise(text, path.suffix == ".md")
    return out


def check() -> int:
    import yaml

    texts, problems, ids = text_files(), [], set()
    extracted = extracted_corpus() if CORPUS.is_dir() else {}
    if not extracted:
        problems.append("corpus/ is missing: run make.py first")
    counts: dict[str, dict[str, int]] = {}
    for half in ("tuning", "heldout"):
        data = yaml.safe_load((HERE / f"{half}.yaml").read_text(encoding="utf-8"))
        for q in data["questions"]:
            qid, kind = q["id"], q["kind"]
            counts.setdefault(half, {}).setdefault(kind, 0)
            counts[half][kind] += 1
            if qid in ids:
                problems.append(f"{qid}: duplicate id")
            ids.add(qid)
            if kind == "unanswerable":
                if "answer" in q or "passage" in q:
                    problems.append(f"{qid}: unanswerable with an answer or passage")
                continue
            if kind not in ("lookup", "paraphrase", "multi_fact"):
                problems.append(f"{qid}: unknown kind {kind}")
            passages = q["passage"] if isinstance(q["passage"], list) else [q["passage"]]
            for passage in passages:
                quote = normalise(passage)
                words = len(quote.split())
                if not 6 <= words <= 15:
                    problems.append(f"{qid}: passage has {words} words")
                homes = [name for name, text in texts.items() if quote in text]
                if not homes:
                    problems.append(f"{qid}: passage not in text/: {passage!r}")
                    continue
                if not any(quote in text for text in extracted.values()):
                    problems.append(f"{qid}: passage not in the text extracted from corpus/")
                for pattern in q["answer"]:
                    if not any(re.search(pattern, texts[h], re.I) for h in homes):
                        problems.append(f"{qid}: answer {pattern!r} not in {homes}")
            if kind == "multi_fact" and len(q["answer"]) < 2:
                problems.append(f"{qid}: multi_fact with one fact")
    total = sum(len(t) for t in texts.values())
    print(f"text/: {len(texts)} files, {total} characters (normalised)")
    for half, kinds in counts.items():
        print(f"{half}: {sum(kinds.values())} questions, {kinds}")
    for problem in problems:
        print("PROBLEM", problem)
    print("check:", "FAILED" if problems else "ok")
    return 1 if problems else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        sys.exit(check())
    build()
