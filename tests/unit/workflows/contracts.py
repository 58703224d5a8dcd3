"""Small, realistic contract texts for the analysis tests, and passages made from them the
way ingestion makes them (`chunk_pages`), optionally wrapped like PDF text."""

from __future__ import annotations

import textwrap
import uuid

from strongroom.ingest.chunking import chunk_pages
from strongroom.workflows.analysis_types import Evidence, Source

NAMESPACE = uuid.UUID("6f1c2a52-0b7e-4d8e-9a59-2a3c8f0d1e77")

PREAMBLE = (
    "THIS AGREEMENT is dated 14th March 2025 and is made between Harbour Holdings Limited, "
    "a company incorporated in England and Wales (company number 04512876) whose registered "
    "office is at 1 Quay Street, Bristol BS1 4AA (the \u201cEmployer\u201d) and Northgate "
    "Construction plc, whose registered office is at Unit 4, Dockside, Hull HU1 1AA (the "
    '"Contractor").'
)

# Clause blocks of the first version, in order. Each block is a heading line and its
# numbered sub-clauses.
CLAUSES_V1 = [
    (
        "1. DEFINITIONS",
        '1.1 In this Contract the "Works" means the construction of Harbour Tower, a twelve '
        "storey residential building at 5 Wharf Road, Bristol, as shown on the Contract "
        "Drawings.",
        "1.2 The Contract Administrator is Bolt & Partners LLP, who shall act for the Employer "
        "in all matters under this Contract.",
    ),
    (
        "2. THE WORKS",
        "2.1 The Contractor shall carry out and complete the Works in a proper and workmanlike "
        "manner and in compliance with the Contract Drawings and the Employer's Requirements.",
        "2.2 The Contractor shall take possession of the site on 1 April 2025 and shall complete "
        "the Works by 2026-09-30 (the Completion Date).",
    ),
    (
        "3. CONTRACT SUM AND PAYMENT",
        "3.1 The Employer shall pay the Contractor the Contract Sum of \u00a34,250,000.00 (four "
        "million two hundred and fifty thousand pounds) exclusive of VAT.",
        "3.2 Interim payments shall be made monthly. The final date for payment of each interim "
        "payment is 14 days after its due date.",
        "3.3 The Retention Percentage is 3 per cent of the value of the Works, released in two "
        "equal moieties at practical completion and at the end of the Rectification Period.",
    ),
    (
        "4. LIQUIDATED DAMAGES",
        "4.1 If the Contractor fails to complete the Works by the Completion Date, the Contractor "
        "shall pay the Employer liquidated damages at the rate of \u00a312,500 per week or part "
        "thereof.",
    ),
    (
        "5. INSURANCE",
        "5.1 The Contractor shall maintain contractor's all risks insurance for the full "
        "reinstatement value of the Works and public liability insurance of not less than GBP "
        "10,000,000 for any one occurrence.",
    ),
    (
        "6. DEFECTS",
        "6.1 The Rectification Period is 12 months from practical completion. The Contractor "
        "shall make good any defects notified by the Contract Administrator within that period "
        "at no cost to the Employer.",
    ),
    (
        "7. TERMINATION",
        "7.1 Either party may terminate this Contract by written notice if the other party "
        "becomes insolvent or commits a material breach which it fails to remedy within 28 days "
        "of notice.",
    ),
    (
        "8. DISPUTE RESOLUTION",
        "8.1 Any dispute or difference arising under this Contract shall be referred to "
        "adjudication under the Scheme for Construction Contracts (England and Wales) "
        "Regulations 1998.",
    ),
    (
        "9. GOVERNING LAW",
        "9.1 This Contract shall be governed by and construed in accordance with the laws of "
        "England and Wales.",
    ),
]

AMENDED_LD = (
    "4.1 If the Contractor fails to complete the Works by the Completion Date, the Contractor "
    "shall pay the Employer liquidated damages at the rate of \u00a315,000 per week or part "
    "thereof."
)
NEW_CLAUSE = (
    "COLLATERAL WARRANTIES",
    "The Contractor shall procure collateral warranties in favour of any funder, purchaser "
    "or tenant of Harbour Tower from each sub-contractor with design responsibility within "
    "21 days of a request by the Employer.",
)


def _renumber(block: tuple[str, ...], number: int) -> tuple[str, ...]:
    """The clause block under a new number: `5. INSURANCE`, `5.1 ...` become `8. ...`."""
    renumbered = []
    for line in block:
        head, rest = line.split(" ", 1)
        parts = head.rstrip(".").split(".")
        parts[0] = str(number)
        renumbered.append(".".join(parts) + ("." if head.endswith(".") else "") + " " + rest)
    return tuple(renumbered)


def clauses_v2() -> list[tuple[str, ...]]:
    """The second version: clause 3.3 (retention) removed, 4.1 amended (the damages rate),
    a new collateral warranties clause added after defects, and insurance moved after
    termination; clauses renumbered to follow."""
    by_heading = {block[0].split(" ", 1)[1]: block for block in CLAUSES_V1}
    payment = tuple(line for line in by_heading["CONTRACT SUM AND PAYMENT"] if "3.3" not in line)
    damages = (by_heading["LIQUIDATED DAMAGES"][0], AMENDED_LD)
    new = (f"0. {NEW_CLAUSE[0]}", f"0.1 {NEW_CLAUSE[1]}")
    order = [
        by_heading["DEFINITIONS"],
        by_heading["THE WORKS"],
        payment,
        damages,
        by_heading["DEFECTS"],
        new,
        by_heading["TERMINATION"],
        by_heading["INSURANCE"],
        by_heading["DISPUTE RESOLUTION"],
        by_heading["GOVERNING LAW"],
    ]
    return [_renumber(block, number) for number, block in enumerate(order, start=1)]


SIGNATURES = (
    "Signed for and on behalf of Harbour Holdings Ltd by its director.\n\n"
    "Signed for and on behalf of Northgate Construction plc by its director."
)


def contract_text(blocks: list[tuple[str, ...]], *, title: str = "BUILDING CONTRACT") -> str:
    paragraphs = [title, PREAMBLE]
    for block in blocks:
        paragraphs.append("\n".join(block))
    paragraphs.append(SIGNATURES)
    return "\n\n".join(paragraphs)


def wrap(text: str, width: int = 72) -> str:
    """`text` with every line wrapped at `width` characters, as text from a PDF reads."""
    return "\n".join(
        "\n".join(textwrap.wrap(line, width)) if line.strip() else line for line in text.split("\n")
    )


def sources(name: str, pages: list[str], *, target: int = 1200) -> list[Source]:
    """The passages ingestion would make of a document with these pages, with ids fixed by
    the document's name."""
    document_id = uuid.uuid5(NAMESPACE, name)
    return [
        Source(
            document_id=document_id,
            document_name=name,
            chunk_id=uuid.uuid5(document_id, str(index)),
            page_number=chunk.page_number,
            content=chunk.content,
        )
        for index, chunk in enumerate(chunk_pages(pages, target=target))
    ]


def contract_v1_sources(*, wrapped: bool = False) -> list[Source]:
    text = contract_text(CLAUSES_V1)
    return sources("contract-v1.pdf", paginate(wrap(text) if wrapped else text))


def contract_v2_sources(*, wrapped: bool = False) -> list[Source]:
    text = contract_text(clauses_v2())
    return sources("contract-v2.pdf", paginate(wrap(text) if wrapped else text))


def paginate(text: str, paragraphs_per_page: int = 4) -> list[str]:
    paragraphs = text.split("\n\n")
    return [
        "\n\n".join(paragraphs[start : start + paragraphs_per_page])
        for start in range(0, len(paragraphs), paragraphs_per_page)
    ]


def assert_cites(evidence: Evidence, passages: list[Source]) -> None:
    """`evidence` names one of `passages`, and its excerpt is text of that passage."""
    matches = [source for source in passages if source.chunk_id == evidence.chunk_id]
    assert len(matches) == 1, evidence
    source = matches[0]
    assert evidence.document_id == source.document_id
    assert evidence.page_number == source.page_number
    assert evidence.excerpt, evidence
    assert evidence.excerpt in source.content, evidence
