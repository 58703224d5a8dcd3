"""Writes the documents of the `safety-large` bench-quality corpus from its text, and checks its
questions against that text.

`text/` holds the public-domain text of nine sections and section groups of OSHA's Safety and
Health Regulations for Construction (29 CFR part 1926) as read from the source (SOURCES.md
says where, and what was changed); this script writes what is uploaded, in `corpus/`: copies of
the Markdown and plain-text files, and PDF (fpdf2, DejaVu Sans), DOCX (python-docx), HTML and
XLSX (openpyxl) written from the other text files. A paragraph of a text file whose every line
holds a `|` is one of the source's tables (its first line the header, its cells separated by
`|`): it is written as the format's own table (in the PDF, as a grid of cells). The two XLSX
files are two of those tables (the safety net distances of 1926.502(c)(2); the power line
clearances of 1926.451(f)(6), a sheet for each of its two tables), cell for cell.

    .venv/bin/python bench/quality/corpora/safety-large/make.py           # writes corpus/
    .venv/bin/python bench/quality/corpora/safety-large/make.py --check   # checks the questions

`--check` confirms that every question's `passage` (or one of its quotes) is in a text file,
after the benchmark's normalisation, and that every `answer` regex matches in that file (and
says which do not match within 2,000 characters of the passage); it also checks the kinds,
the ids and the counts. It writes nothing.
"""

from __future__ import annotations

import html
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

import yaml
from docx import Document
from fpdf import FPDF
from fpdf.fonts import FontFace
from openpyxl import Workbook

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent.parent))  # bench/quality, for its helpers

from make_corpora import FONT, WRITTEN, fix_zip_times, write_xlsx  # noqa: E402

TEXT, OUT = HERE / "text", HERE / "corpus"
PREFIX = "osha"
CREATOR = "bench/quality/corpora/safety-large/make.py"

# text file -> (format, corpus file name); Markdown and plain text are copied as they are.
DOCUMENTS = {
    "1926.502-fall-protection-systems.txt": ("pdf", "osha-1926.502-fall-protection-systems.pdf"),
    "1926.453-aerial-lifts.txt": ("pdf", "osha-1926.453-aerial-lifts.pdf"),
    "1926.451-scaffolds-general-requirements.txt":
        ("docx", "osha-1926.451-scaffolds-general-requirements.docx"),
    "1926.150-fire-protection.txt": ("docx", "osha-1926.150-fire-protection.docx"),
    "1926.50-medical-services-first-aid.txt":
        ("html", "osha-1926.50-medical-services-first-aid.html"),
    "1926-subpart-c-general-safety-provisions.txt":
        ("copy", "osha-1926-subpart-c-general-safety-provisions.txt"),
    "1926-subpart-e-personal-protective-equipment.md":
        ("copy", "osha-1926-subpart-e-personal-protective-equipment.md"),
    "1926-subpart-q-concrete-masonry.md": ("copy", "osha-1926-subpart-q-concrete-masonry.md"),
}  # fmt: skip


def paragraphs(path: Path) -> list[str]:
    return [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]


def as_table(paragraph: str) -> list[list[str]] | None:
    """The rows of a table paragraph (every line holds a `|`), or None."""
    lines = paragraph.splitlines()
    if not all("|" in line for line in lines):
        return None
    rows = [[cell.strip() for cell in line.split("|")] for line in lines]
    width = max(len(row) for row in rows)
    return [row + [""] * (width - len(row)) for row in rows]


def tables(path: Path) -> list[list[list[str]]]:
    return [t for p in paragraphs(path) if (t := as_table(p))]


def write_pdf(source: Path, target: Path) -> None:
    """The title, then one paragraph after another on Letter pages; tables as grids."""
    pdf = FPDF(format="letter")
    pdf.set_creator(CREATOR)
    pdf.set_creation_date(WRITTEN)
    pdf.add_font("DejaVu", "", str(FONT))
    pdf.set_margins(25, 25, 25)
    pdf.add_page()
    title, *rest = paragraphs(source)
    pdf.set_font("DejaVu", size=13)
    pdf.multi_cell(0, 7, title)
    pdf.ln(3)
    pdf.set_font("DejaVu", size=10)
    for paragraph in rest:
        table = as_table(paragraph)
        if table:
            with pdf.table(
                line_height=5, text_align="LEFT", headings_style=FontFace(emphasis="")
            ) as grid:
                for row in table:
                    cells = grid.row()
                    for value in row:
                        cells.cell(value)
        else:
            pdf.multi_cell(0, 5, paragraph)
        pdf.ln(2.5)
    pdf.output(str(target))


def write_docx(source: Path, target: Path) -> None:
    """The title as a heading, each paragraph a paragraph, each table a table."""
    document = Document()
    title, *rest = paragraphs(source)
    document.add_heading(title, level=1)
    for paragraph in rest:
        table = as_table(paragraph)
        if table:
            grid = document.add_table(rows=0, cols=len(table[0]))
            grid.style = "Table Grid"
            for row in table:
                for cell, value in zip(grid.add_row().cells, row, strict=True):
                    cell.text = value
        else:
            document.add_paragraph(paragraph)
    document.core_properties.author = CREATOR
    document.core_properties.created = document.core_properties.modified = WRITTEN
    document.core_properties.last_modified_by = CREATOR
    document.save(str(target))
    fix_zip_times(target)


def write_html(source: Path, target: Path) -> None:
    """A page with the title as <h1>, a <p> a paragraph, tables as <table>."""
    title, *rest = paragraphs(source)
    body = [f"<h1>{html.escape(title)}</h1>"]
    for paragraph in rest:
        table = as_table(paragraph)
        if table:
            header, *rows = table
            body.append("<table>")
            body.append("<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in header) + "</tr>")
            for row in rows:
                body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
            body.append("</table>")
        else:
            body.append(f"<p>{html.escape(paragraph)}</p>")
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
    target.write_text(page, encoding="utf-8")


def write_xlsx_sheets(sheets: dict[str, list[list[str]]], target: Path) -> None:
    """One worksheet a table, cell for cell (all text)."""
    workbook = Workbook()
    workbook.remove(workbook.active)
    for name, table in sheets.items():
        worksheet = workbook.create_sheet(name)
        for row in table:
            worksheet.append(row)
    workbook.properties.creator = CREATOR
    workbook.properties.created = workbook.properties.modified = WRITTEN.replace(tzinfo=None)
    workbook.save(str(target))
    fix_zip_times(target)


def make() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir()
    for name, (kind, target) in DOCUMENTS.items():
        source = TEXT / name
        if kind == "copy":
            shutil.copy(source, OUT / target)
        elif kind == "pdf":
            write_pdf(source, OUT / target)
        elif kind == "docx":
            write_docx(source, OUT / target)
        elif kind == "html":
            write_html(source, OUT / target)
    (nets,) = tables(TEXT / "1926.502-fall-protection-systems.txt")
    write_xlsx(nets, OUT / "osha-1926.502-c-2-safety-net-distances.xlsx", "Safety nets")
    insulated, uninsulated = tables(TEXT / "1926.451-scaffolds-general-requirements.txt")
    write_xlsx_sheets({"Insulated lines": insulated, "Uninsulated lines": uninsulated},
                      OUT / "osha-1926.451-f-6-power-line-clearances.xlsx")  # fmt: skip


# --- the check of the questions -----------------------------------------------------------------

KINDS = ("lookup", "paraphrase", "multi_fact", "unanswerable")
QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def normalise(text: str) -> str:
    """As the benchmark compares: white space runs as one space, curly quotes straight,
    Markdown emphasis removed."""
    text = text.translate(QUOTES)
    text = re.sub(r"(\*\*|__|\*|_)(\S(?:.*?\S)?)\1", r"\2", text)
    return re.sub(r"\s+", " ", text).strip()


def check() -> int:
    texts = {p.name: normalise(p.read_text(encoding="utf-8")) for p in sorted(TEXT.iterdir())}
    problems: list[str] = []
    notes: list[str] = []
    ids: Counter[str] = Counter()
    counts: dict[str, Counter[str]] = {}
    for half in ("tuning", "heldout"):
        data = yaml.safe_load((HERE / f"{half}.yaml").read_text(encoding="utf-8"))
        counts[half] = Counter()
        for q in data["questions"]:
            qid, kind = q["id"], q["kind"]
            ids[qid] += 1
            counts[half][kind] += 1
            if kind not in KINDS:
                problems.append(f"{qid}: unknown kind {kind}")
            if kind == "unanswerable":
                if q.get("answer") or q.get("passage"):
                    problems.append(f"{qid}: an unanswerable question has an answer or passage")
                continue
            quotes = q["passage"] if isinstance(q["passage"], list) else [q["passage"]]
            where = []
            for quote in quotes:
                words = len(normalise(quote).split())
                if not 6 <= words <= 15:
                    notes.append(f"{qid}: passage of {words} words")
                found = [(n, t.find(normalise(quote))) for n, t in texts.items()
                         if normalise(quote) in t]  # fmt: skip
                if not found:
                    problems.append(f"{qid}: passage not found: {quote!r}")
                where += found
            if kind == "multi_fact" and len(q["answer"]) < 2:
                problems.append(f"{qid}: a multi_fact question with fewer than two facts")
            for pattern in q["answer"]:
                regex = re.compile(pattern, re.IGNORECASE)
                if not any(regex.search(texts[n]) for n, _ in where):
                    problems.append(f"{qid}: answer {pattern!r} not in the passage's file")
                elif not any(regex.search(texts[n][max(0, at - 2000): at + 2000])
                             for n, at in where):  # fmt: skip
                    notes.append(f"{qid}: answer {pattern!r} not within 2,000 chars of passage")
    problems += [f"{qid}: id used {n} times" for qid, n in ids.items() if n > 1]
    for half, counter in counts.items():
        print(f"{half}: {sum(counter.values())} questions, "
              + ", ".join(f"{k} {counter[k]}" for k in KINDS))  # fmt: skip
    total = sum(len(t) for t in texts.values())
    raw = sum(len(p.read_text(encoding="utf-8")) for p in TEXT.iterdir())
    print(f"text: {len(texts)} files, {raw} characters ({total} normalised)")
    for note in notes:
        print("note:", note)
    for problem in problems:
        print("PROBLEM:", problem)
    print("check:", "FAILED" if problems else "passed")
    return 1 if problems else 0


if __name__ == "__main__":
    if "--check" in sys.argv[1:]:
        sys.exit(check())
    make()
