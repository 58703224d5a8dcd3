"""Write corpus/far-52.246-21-warranty.docx, the corpus's Word document, from the public text
of FAR 52.246-21 Warranty of Construction (48 CFR 52.246-21; a US federal government work,
public domain; see SOURCES.md). Headings are Word headings and the lettered paragraphs Word
paragraphs, so the benchmark exercises the DOCX ingestion path. Deterministic: the same text
gives the same document apart from the archive's timestamps.

    .venv/bin/python bench/quality/make_docx.py
"""

from __future__ import annotations

from pathlib import Path

from docx import Document

TARGET = Path(__file__).parent / "corpus" / "far-52.246-21-warranty.docx"

TITLE = "52.246-21 Warranty of Construction."
PRESCRIPTION = (
    "As prescribed in 46.710(e)(1), the contracting officer may insert a clause substantially as "
    "follows in solicitations and contracts when a fixed-price construction contract (see "
    "46.705(c)) is contemplated, and the use of a warranty clause has been approved under agency "
    "procedures:"
)
CLAUSE_TITLE = "Warranty of Construction (Mar 1994)"
PARAGRAPHS = [
    "(a) In addition to any other warranties in this contract, the Contractor warrants, except as "
    "provided in paragraph (i) of this clause, that work performed under this contract conforms "
    "to the contract requirements and is free of any defect in equipment, material, or design "
    "furnished, or workmanship performed by the Contractor or any subcontractor or supplier at "
    "any tier.",
    "(b) This warranty shall continue for a period of 1 year from the date of final acceptance "
    "of the work. If the Government takes possession of any part of the work before final "
    "acceptance, this warranty shall continue for a period of 1 year from the date the "
    "Government takes possession.",
    "(c) The Contractor shall remedy at the Contractor's expense any failure to conform, or any "
    "defect. In addition, the Contractor shall remedy at the Contractor's expense any damage to "
    "Government-owned or controlled real or personal property, when that damage is the result "
    "of-",
    "(1) The Contractor's failure to conform to contract requirements; or",
    "(2) Any defect of equipment, material, workmanship, or design furnished.",
    "(d) The Contractor shall restore any work damaged in fulfilling the terms and conditions of "
    "this clause. The Contractor's warranty with respect to work repaired or replaced will run "
    "for 1 year from the date of repair or replacement.",
    "(e) The Contracting Officer shall notify the Contractor, in writing, within a reasonable "
    "time after the discovery of any failure, defect, or damage.",
    "(f) If the Contractor fails to remedy any failure, defect, or damage within a reasonable "
    "time after receipt of notice, the Government shall have the right to replace, repair, or "
    "otherwise remedy the failure, defect, or damage at the Contractor's expense.",
    "(g) With respect to all warranties, express or implied, from subcontractors, "
    "manufacturers, or suppliers for work performed and materials furnished under this "
    "contract, the Contractor shall-",
    "(1) Obtain all warranties that would be given in normal commercial practice;",
    "(2) Require all warranties to be executed, in writing, for the benefit of the Government, "
    "if directed by the Contracting Officer; and",
    "(3) Enforce all warranties for the benefit of the Government, if directed by the "
    "Contracting Officer.",
    "(h) In the event the Contractor's warranty under paragraph (b) of this clause has expired, "
    "the Government may bring suit at its expense to enforce a subcontractor's, manufacturer's, "
    "or supplier's warranty.",
    "(i) Unless a defect is caused by the negligence of the Contractor or subcontractor or "
    "supplier at any tier, the Contractor shall not be liable for the repair of any defects of "
    "material or design furnished by the Government nor for the repair of any damage that "
    "results from any defect in Government-furnished material or design.",
    "(j) This warranty shall not limit the Government's rights under the Inspection and "
    "Acceptance clause of this contract with respect to latent defects, gross mistakes, or "
    "fraud.",
    "(End of clause)",
]


def build(target: Path = TARGET) -> Path:
    document = Document()
    document.add_heading(TITLE, level=1)
    document.add_paragraph(PRESCRIPTION)
    document.add_heading(CLAUSE_TITLE, level=2)
    for text in PARAGRAPHS:
        document.add_paragraph(text)
    document.save(target)
    return target


if __name__ == "__main__":
    print(build())
