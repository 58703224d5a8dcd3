"""Writes the documents of the `concrete-spec` bench-quality corpus from its text, and checks
its questions against that text.

`text/` holds the public text as read from its sources (SOURCES.md beside this file says where,
under what terms, and what was changed); this script writes what is uploaded, in `corpus/`:
copies of the Markdown and plain-text files, and PDF, DOCX, HTML and XLSX files written with
the helpers of bench/quality/make_corpora.py (fpdf2, python-docx, openpyxl). The one table is
the source's own (the Orland Park, Illinois, list of material standards), cell for cell.

    .venv/bin/python bench/quality/corpora/concrete-spec/make.py           # write corpus/
    .venv/bin/python bench/quality/corpora/concrete-spec/make.py --check   # check questions

The check confirms that every `passage` quote of tuning.yaml and heldout.yaml stands, after
the questions format's normalisation, in a text file, and that every `answer` regex matches
in the same file (case-insensitive); unanswerable questions must have neither.
"""

from __future__ import annotations

import html
import re
import shutil
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))  # bench/quality, for make_corpora

from make_corpora import (  # noqa: E402
    fix_zip_times,  # noqa: F401  (write_docx and write_xlsx call it)
    paragraphs,
    write_docx,
    write_pdf,
    write_xlsx,
)

TEXT, OUT = HERE / "text", HERE / "corpus"

# Village of Orland Park, Illinois: the standards of quality for sidewalk, driveway and
# driveway apron materials, as its code sets them out (two columns; the source's own
# spelling, "Norman" and "Curring", kept).
MATERIALS_TABLE = [
    ["Material", "Standard of quality"],
    ["Portland Cement", "ASTM C150 Type I, Norman"],
    ["", "ASTM C150 Type II, High-Early-Strength"],
    ["Fine Aggregate", "ASTM C33, clean sand graded between #100 and #4 sieve limits."],
    ["Coarse Aggregate",
     "ASTM C33, uncoated crushed stone or washed gravel. Slag shall not be permitted."],
    ["Water", "Potable and fit to drink."],
    ["Water-Reducing Admixture", "ASTM C494 Type (normal) or Type D (retarder)."],
    ["Air Entraining Agent", "ASTM C260"],
    ["Premolded Filler Strips", "ASTM D994"],
    ["Curring Compound", "ASTM C309, Type 2 (white, pigmented)"],
    ["Reinforcement", "ASTM A615, Grade 40."],
]  # fmt: skip
TABLE_CAPTION = "MATERIAL STANDARDS"


def write_html_table(source: Path, target: Path) -> None:
    """Like make_corpora.write_html, but the paragraph headed TABLE_CAPTION (its caption line
    and the table's rows as "Material: standard" lines in the text) becomes the table alone,
    so that its rows are not printed twice."""
    title, *rest = paragraphs(source)
    body = [f"<h1>{html.escape(title)}</h1>"]
    for paragraph in rest:
        if paragraph.splitlines()[0] == TABLE_CAPTION:
            header, *rows = MATERIALS_TABLE
            body.append("<table>\n<caption>Material standards</caption>")
            body.append("<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in header) + "</tr>")
            for row in rows:
                body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
            body.append("</table>")
        else:
            lines = "<br>\n".join(html.escape(line) for line in paragraph.splitlines())
            body.append(f"<p>{lines}</p>")
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
    target.write_text(page, encoding="utf-8")


def build() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir()
    shutil.copy(TEXT / "osha-1926.703-705-concrete.md", OUT / "osha-1926.703-705-concrete.md")
    shutil.copy(TEXT / "other-municipal-concrete.md", OUT / "mn-sd-tx-ky-municipal-concrete.md")
    shutil.copy(TEXT / "indiana-municipal-concrete.txt", OUT / "indiana-municipal-concrete.txt")
    write_pdf(TEXT / "lawrenceburg-in-155-concrete.txt", OUT / "lawrenceburg-in-155-concrete.pdf")
    write_docx(TEXT / "ohio-municipal-concrete.txt", OUT / "ohio-municipal-concrete.docx")
    write_html_table(TEXT / "illinois-municipal-concrete.txt",
                     OUT / "illinois-municipal-concrete.html")  # fmt: skip
    write_xlsx(MATERIALS_TABLE, OUT / "orland-park-il-material-standards.xlsx", "Materials")


def normalise(text: str) -> str:
    """The questions format's normalisation: curly quotes straight, Markdown emphasis removed,
    white space runs as one space."""
    text = text.replace("\u2018", "'").replace("\u2019", "'")
    text = text.replace("\u201c", '"').replace("\u201d", '"')
    text = re.sub(r"(\*\*|\*|__)(\S(?:.*?\S)?)\1", r"\2", text)
    return re.sub(r"\s+", " ", text).strip()


def check() -> int:
    texts = {p.name: normalise(p.read_text(encoding="utf-8")) for p in sorted(TEXT.iterdir())}
    failures, counts = [], {}
    for half in ("tuning", "heldout"):
        questions = yaml.safe_load((HERE / f"{half}.yaml").read_text(encoding="utf-8"))
        for q in questions["questions"]:
            counts[(half, q["kind"])] = counts.get((half, q["kind"]), 0) + 1
            if q["kind"] == "unanswerable":
                if q.get("answer") or q.get("passage"):
                    failures.append(f"{q['id']}: unanswerable with an answer or passage")
                continue
            quotes = q["passage"] if isinstance(q["passage"], list) else [q["passage"]]
            for quote in quotes:
                words = len(normalise(quote).split())
                if not 6 <= words <= 15:
                    failures.append(f"{q['id']}: passage of {words} words: {quote!r}")
            homes = [n for n, t in texts.items() if normalise(quotes[0]) in t]
            for quote in quotes[1:]:
                if not any(normalise(quote) in t for t in texts.values()):
                    failures.append(f"{q['id']}: passage not found: {quote!r}")
            if not homes:
                failures.append(f"{q['id']}: passage not found: {quotes[0]!r}")
                continue
            for pattern in q["answer"]:
                if not re.search(pattern, texts[homes[0]], re.IGNORECASE):
                    failures.append(f"{q['id']}: answer {pattern!r} not in {homes[0]}")
    for failure in failures:
        print("FAIL", failure)
    for (half, kind), n in sorted(counts.items()):
        print(f"{half:8} {kind:12} {n}")
    print(f"{sum(len(t) for t in texts.values())} characters of text in {len(texts)} files")
    print("check:", "FAILED" if failures else "every passage and answer found")
    return 1 if failures else 0


if __name__ == "__main__":
    if "--check" in sys.argv[1:]:
        sys.exit(check())
    build()
