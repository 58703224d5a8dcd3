"""Key terms: parties, dates, amounts and governing law, each with the sentence it is in."""

from __future__ import annotations

import json
import random

import pytest

from strongroom.workflows.analysis_terms import KeyTerms, extract_key_terms
from strongroom.workflows.analysis_types import squash
from tests.unit.workflows.contracts import (
    assert_cites,
    contract_v1_sources,
    contract_v2_sources,
    sources,
)


def _terms(text: str) -> KeyTerms:
    passages = sources("terms.txt", [text])
    terms = extract_key_terms(passages)
    _assert_all_cited(terms, passages)
    return terms


def _assert_all_cited(terms: KeyTerms, passages) -> None:
    for group in (terms.parties, terms.dates, terms.amounts, terms.governing_law):
        for term in group:
            assert term.evidence and term.mentions >= len(term.evidence)
            for evidence in term.evidence:
                assert_cites(evidence, passages)
            # The first mention's sentence holds the term's text.
            assert term.raw in squash(term.evidence[0].excerpt)


def _names(terms: KeyTerms) -> list[str]:
    return [party.name for party in terms.parties]


# Parties -------------------------------------------------------------------------------


def test_parties_of_a_contract_with_their_roles_in_order_of_mention() -> None:
    passages = contract_v1_sources(wrapped=True)
    terms = extract_key_terms(passages)
    _assert_all_cited(terms, passages)
    assert [(p.name, p.roles) for p in terms.parties] == [
        ("Harbour Holdings Limited", ("Employer",)),
        ("Northgate Construction plc", ("Contractor",)),
        ("Bolt & Partners LLP", ("Contract Administrator",)),
    ]


def test_spellings_of_one_company_are_one_party_with_every_mention() -> None:
    # The preamble says Limited, the signature block Ltd.
    harbour = extract_key_terms(contract_v1_sources()).parties[0]
    assert harbour.mentions == 2
    assert [e.excerpt.startswith("Signed") for e in harbour.evidence] == [False, True]


@pytest.mark.parametrize(
    "name",
    [
        "Harbour Holdings Ltd",
        "Harbour Holdings Limited",
        "HARBOUR HOLDINGS LIMITED",
        "Bolt & Partners LLP",
        "Quayside Developments plc",
        "Bank of Scotland plc",
        "Acme Building Systems Inc",
        "Widget Works LLC",
        "Bauer Hochbau GmbH",
        "Harbour Holdings (UK) Ltd",
    ],
)
def test_every_company_suffix_makes_a_party(name: str) -> None:
    assert _names(_terms(f"The guarantee is given by {name} to the bank.")) == [name]


def test_between_x_and_y_names_both_companies() -> None:
    terms = _terms("This Agreement is made between Harbour Ltd and Quayside Developments plc.")
    assert _names(terms) == ["Harbour Ltd", "Quayside Developments plc"]


def test_words_before_a_company_name_are_not_part_of_it() -> None:
    terms = _terms(
        "Between Harbour Holdings Ltd and the Employer. Northgate Construction plc shall "
        "start on site. Signed for and on behalf of Bolt & Partners LLP."
    )
    assert _names(terms) == [
        "Harbour Holdings Ltd",
        "Northgate Construction plc",
        "Bolt & Partners LLP",
    ]


def test_a_definition_names_a_party_without_a_company_suffix() -> None:
    terms = _terms(
        'This Agreement is made between John Smith (the "Employer") and Acme Builders '
        "(the \u201cContractor\u201d)."
    )
    assert [(p.name, p.roles) for p in terms.parties] == [
        ("John Smith", ("Employer",)),
        ("Acme Builders", ("Contractor",)),
    ]


def test_numbered_parties_of_an_english_style_preamble_are_named() -> None:
    terms = _terms(
        "BETWEEN:\n"
        "(1) HARBOUR HOLDINGS LIMITED (company number 04512876) whose registered office is at "
        '1 Quay Street, Bristol ("Employer"); and\n'
        '(2) JOHN SMITH of 3 Mill Lane, Bath (the "Consultant"); and\n'
        "(3) Jane Doe\n"
        '(the "Guarantor").'
    )
    assert [(p.name, p.roles) for p in terms.parties] == [
        ("HARBOUR HOLDINGS LIMITED", ("Employer",)),
        ("Jane Doe", ("Guarantor",)),  # John Smith "of 3 Mill Lane": missed, not guessed
    ]


def test_role_labels_name_parties() -> None:
    terms = _terms(
        "the Employer: Harbour Holdings Ltd\n"
        "Contractor: Northgate Construction plc\n"
        "Quantity Surveyor: Jane Doe\n"
        "The Consultant is Arup Associates LLP."
    )
    assert [(p.name, p.roles) for p in terms.parties] == [
        ("Harbour Holdings Ltd", ("Employer",)),
        ("Northgate Construction plc", ("Contractor",)),
        ("Jane Doe", ("Quantity Surveyor",)),
        ("Arup Associates LLP", ("Consultant",)),
    ]


def test_defined_terms_that_are_not_parties_give_no_party_and_no_role() -> None:
    terms = _terms(
        'The Works at Harbour Tower (the "Works") are described in the Specification '
        '(the "Specification"). Harbour Holdings Ltd shall build the tower (the "Building").'
    )
    assert [(p.name, p.roles) for p in terms.parties] == [("Harbour Holdings Ltd", ())]


def test_a_role_is_taken_only_across_an_apposition() -> None:
    terms = _terms(
        "Harbour Holdings Ltd, a company registered in England with number 04512876, whose "
        'office is at 1 Quay Street, Bristol (the "Employer") appoints Bolt & Partners LLP '
        'under the appointment dated below (the "Appointment Party").'
    )
    assert [(p.name, p.roles) for p in terms.parties] == [
        ("Harbour Holdings Ltd", ("Employer",)),
        ("Bolt & Partners LLP", ()),
    ]


def test_capitalised_words_without_a_suffix_or_definition_are_not_parties() -> None:
    terms = _terms(
        "The Contract Administrator shall visit Harbour Tower with Building Control "
        "Officers and the Health and Safety Executive."
    )
    assert terms.parties == ()


# Dates ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("1 March 2024", "2024-03-01"),
        ("1st March 2024", "2024-03-01"),
        ("the 21st day of March, 2024", "2024-03-21"),
        ("March 1, 2024", "2024-03-01"),
        ("2 Mar. 2024", "2024-03-02"),
        ("3 SEPTEMBER 2025", "2025-09-03"),
        ("Sept 30th 2026", "2026-09-30"),
        ("2024-03-01", "2024-03-01"),
        ("25/12/2024", "2024-12-25"),
        ("12/25/2024", "2024-12-25"),
        ("05.05.2024", "2024-05-05"),
    ],
)
def test_dates_in_common_english_forms_are_normalised_to_iso(text: str, iso: str) -> None:
    dates = _terms(f"Possession of the site is given on {text} by the Employer.").dates
    assert [(d.iso, d.raw) for d in dates] == [(iso, text.removeprefix("the "))]


def test_an_ambiguous_numeric_date_keeps_its_text_without_an_iso_form() -> None:
    dates = _terms("The tender was returned on 01/03/2024 by noon.").dates
    assert [(d.iso, d.raw) for d in dates] == [(None, "01/03/2024")]


def test_an_impossible_date_in_words_keeps_its_text_and_in_digits_is_no_date() -> None:
    dates = _terms("Completion on 31 February 2024, or 2024-13-45 or 45/13/2024.").dates
    assert [(d.iso, d.raw) for d in dates] == [(None, "31 February 2024")]


def test_numbers_that_are_not_dates_are_not_dates() -> None:
    terms = _terms(
        "Drawing HT-2024-03-01-A rev 3.1.4 shows 14 days, 12 months and 2,024 piles in "
        "May. Clause 12 March applies to 2024 units."
    )
    assert terms.dates == ()


def test_one_date_in_several_forms_is_one_term_with_every_mention() -> None:
    terms = _terms("Completion is due on 30 September 2026. Completion date: 2026-09-30.")
    assert [(d.iso, d.raw, d.mentions, len(d.evidence)) for d in terms.dates] == [
        ("2026-09-30", "30 September 2026", 2, 2)
    ]


# Amounts -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "currency"),
    [
        ("\u00a34,250,000.00", "4250000.00", "GBP"),
        ("\u00a3 5,000", "5000.00", "GBP"),
        ("$5,000", "5000.00", "USD"),
        ("US$3,000", "3000.00", "USD"),
        ("\u20ac10,000.50", "10000.50", "EUR"),
        ("GBP 1,250,000", "1250000.00", "GBP"),
        ("1,250,000 EUR", "1250000.00", "EUR"),
        ("USD 12.5", "12.50", "USD"),
        ("5,000 pounds", "5000.00", "GBP"),
        ("6,000 pounds sterling", "6000.00", "GBP"),
        ("750 euros", "750.00", "EUR"),
        ("\u00a31.2 million", "1200000.00", "GBP"),
        ("\u00a32m", "2000000.00", "GBP"),
        ("\u20ac3bn", "3000000000.00", "EUR"),
        ("\u00a3250k", "250000.00", "GBP"),
        ("\u00a32 Million", "2000000.00", "GBP"),
        ("\u00a30.125", "0.125", "GBP"),
        ("AUD 4,250,000", "4250000.00", "AUD"),  # issue 27: every ISO 4217 code, and
        ("A$4,250,000", "4250000.00", "AUD"),  # the common symbols
        ("AU$ 12,000", "12000.00", "AUD"),
        ("C$950", "950.00", "CAD"),
        ("1,250,000 CAD", "1250000.00", "CAD"),
        ("NZ$2m", "2000000.00", "NZD"),
        ("NZD 75,000", "75000.00", "NZD"),
        ("CHF 3,500", "3500.00", "CHF"),
        ("\u00a5120,000", "120000.00", "JPY"),
        ("ZAR 1,000", "1000.00", "ZAR"),
    ],
)
def test_amounts_give_a_decimal_value_and_a_currency_code(
    text: str, value: str, currency: str
) -> None:
    amounts = _terms(f"The Employer shall pay {text} on completion.").amounts
    assert [(a.value, a.currency, a.raw) for a in amounts] == [(value, currency, text)]


def test_numbers_without_a_currency_are_not_amounts() -> None:
    terms = _terms(
        "Retention is 3 per cent, payable within 14 days, over 12,500 square metres, "
        "under clause 12.5, for 2 units at 5% and 1,000 tonnes."
    )
    assert terms.amounts == ()


def test_one_sum_written_twice_is_one_amount_and_other_currencies_are_others() -> None:
    terms = _terms("Damages of \u00a312,500 per week (\u00a312,500.00) or $12,500 per week.")
    assert [(a.value, a.currency, a.mentions) for a in terms.amounts] == [
        ("12500.00", "GBP", 2),
        ("12500.00", "USD", 1),
    ]


def test_an_amount_and_its_words_in_brackets_are_one_amount() -> None:
    terms = _terms(
        "The Contract Sum is \u00a34,250,000.00 (four million two hundred and fifty thousand "
        "pounds) exclusive of VAT."
    )
    assert [a.raw for a in terms.amounts] == ["\u00a34,250,000.00"]


# Governing law -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "jurisdiction"),
    [
        (
            "This Contract shall be governed by and construed in accordance with the laws of "
            "England and Wales.",
            "England and Wales",
        ),
        ("This Agreement shall be governed by English law.", "England and Wales"),
        ("This Agreement is governed by the law of Scotland.", "Scotland"),
        ("This Agreement shall be governed by Scots law.", "Scotland"),
        (
            "It shall be construed in accordance with the laws of the State of New York.",
            "State of New York",
        ),
        (
            "The law of the contract is the law of Northern Ireland, subject to the "
            "jurisdiction of its courts.",
            "Northern Ireland",
        ),
        ("Contract Particulars\nGoverning law: Ireland\nCourts: Dublin", "Ireland"),
        (
            "The parties agree to the terms below. Governing law: New South Wales. Each party "
            "submits to the courts there.",
            "New South Wales",
        ),
        ("This deed is governed by\nthe laws of England\nand Wales.", "England and Wales"),
        ("This Agreement is governed by New York law.", "New York"),
        ("This Agreement is governed by Maltese law.", "Maltese"),
    ],
)
def test_governing_law_names_its_jurisdiction(text: str, jurisdiction: str) -> None:
    laws = _terms(text).governing_law
    assert [law.jurisdiction for law in laws] == [jurisdiction]


def test_other_talk_of_law_is_not_governing_law() -> None:
    terms = _terms(
        "The Contractor shall comply with all applicable law. Payment is governed by the "
        "terms of this clause and by the Housing Grants, Construction and Regeneration Act "
        "1996. The Law of Property Act 1925 does not apply. Any dispute is governed by the "
        "rules of the adjudicator. Tort claims are governed by Contract law, or by the "
        "Applicable Law, or by Public law."
    )
    assert terms.governing_law == ()


def test_the_same_law_twice_is_one_term() -> None:
    terms = _terms(
        "This Contract is governed by the laws of England and Wales. Any non-contractual "
        "obligation is also governed by the laws of England and Wales."
    )
    assert [(law.jurisdiction, law.mentions) for law in terms.governing_law] == [
        ("England and Wales", 2)
    ]


# The whole -----------------------------------------------------------------------------


def test_key_terms_of_a_contract() -> None:
    passages = contract_v1_sources(wrapped=True)
    terms = extract_key_terms(passages)
    _assert_all_cited(terms, passages)
    assert [(d.iso, d.raw) for d in terms.dates] == [
        ("2025-03-14", "14th March 2025"),
        ("2025-04-01", "1 April 2025"),
        ("2026-09-30", "2026-09-30"),
    ]
    assert [(a.value, a.currency) for a in terms.amounts] == [
        ("4250000.00", "GBP"),
        ("12500.00", "GBP"),
        ("10000000.00", "GBP"),
    ]
    assert [law.jurisdiction for law in terms.governing_law] == ["England and Wales"]


def test_terms_of_several_documents_keep_the_order_of_first_mention() -> None:
    first = sources("a.txt", ["Payment of \u00a315,000 is due on 2 May 2025."])
    second = sources("b.txt", ["Payment of \u00a31,000 is due on 1 May 2025; \u00a315,000 too."])
    terms = extract_key_terms(first + second)
    assert [a.value for a in terms.amounts] == ["15000.00", "1000.00"]
    assert [d.iso for d in terms.dates] == ["2025-05-02", "2025-05-01"]
    fifteen = terms.amounts[0]
    assert [e.document_id for e in fifteen.evidence] == [
        first[0].document_id,
        second[0].document_id,
    ]


def test_evidence_of_a_term_in_a_long_sentence_is_a_window_around_it() -> None:
    long_sentence = (
        "The Contractor shall " + "carry out the works diligently and " * 30 + "pay \u00a35,000 "
        "to the Employer " + "in accordance with the programme and " * 30 + "the Contract."
    )
    terms = _terms(long_sentence)
    excerpt = terms.amounts[0].evidence[0].excerpt
    assert "\u00a35,000" in excerpt
    assert len(excerpt) <= 2 * 160 + len("\u00a35,000")


def test_mentions_beyond_the_evidence_limit_are_counted_not_cited() -> None:
    text = " ".join(f"Invoice {n} is for \u00a3100." for n in range(12))
    amount = _terms(text).amounts[0]
    assert (amount.mentions, len(amount.evidence)) == (12, 5)


def test_key_terms_are_json_with_uuids_as_strings() -> None:
    passages = contract_v2_sources()
    payload = extract_key_terms(passages).to_json()
    decoded = json.loads(json.dumps(payload))
    assert decoded == payload
    assert set(decoded) == {"parties", "dates", "amounts", "governing_law"}
    assert decoded["parties"][0]["evidence"][0]["document_id"] == str(passages[0].document_id)
    assert decoded["amounts"][0]["value"] == "4250000.00"


def test_key_terms_are_deterministic() -> None:
    passages = contract_v1_sources(wrapped=True) + contract_v2_sources()
    assert extract_key_terms(passages) == extract_key_terms(list(passages))
    assert extract_key_terms(passages).to_json() == extract_key_terms(passages).to_json()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\u00a3" * 5000,
        "1" * 5000 + " pounds",
        "Ltd " * 3000,
        "Harbour " * 4000 + "Ltd",
        "(the \u201c" * 2000,
        "governed by the laws of " + "England and " * 2000,
        "31/31/9999 99/99/0000 0000-00-00 32 Jan 2024 \u00a3,,,, $.5 \u20ac1,00,0",
        "\x00\x01\ufeff\u202e Employer: \U0001f3d7 Ltd",
    ],
)
def test_odd_text_never_breaks_the_extraction(text: str) -> None:
    terms = _terms(text)
    assert isinstance(terms, KeyTerms)


def test_random_text_never_breaks_the_extraction() -> None:
    rng = random.Random(11)
    alphabet = (
        "aAzZ09 \n\t.,;:()\"'\u201c\u201d\u00a3$\u20ac/-&LtdplcGBP March 2024 governed law of"
    )
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 400)))
        _terms(text)


@pytest.mark.parametrize(
    "text",
    [
        "Anchorages used for attachment of personal fall arrest equipment shall be capable of "
        "supporting at least 5,000 pounds per employee attached.",
        "Guardrail systems shall be capable of withstanding a force of at least 200 pounds.",
        "The platform shall carry 75 pounds per square foot.",
        "The requirements of FAR 52 and CFR 1926 apply.",
    ],
)
def test_pounds_of_weight_and_codes_that_are_no_currency_are_not_amounts(text: str) -> None:
    """Issue 27 point 5: a safety manual's 5,000 pounds (a load) was reported in GBP."""
    assert _terms(text).amounts == ()


def test_roles_defined_without_quotes_name_parties_australian_style() -> None:
    """Issue 27 point 5: `(the Principal)` and `(the Contractor)`, unquoted (AS 4000 style),
    and `hereinafter called "the ..."`, give each party its role."""
    terms = _terms(
        "This contract is made between Harbourside Developments Pty Ltd (the Principal) and "
        "Meridian Build Group Ltd (the Contractor). Apex Surveys Ltd (hereinafter called "
        '"the Superintendent") administers it. The Works (the Site) are in Sydney.'
    )
    assert [(p.name, p.roles) for p in terms.parties] == [
        ("Harbourside Developments Pty Ltd", ("Principal",)),
        ("Meridian Build Group Ltd", ("Contractor",)),
        ("Apex Surveys Ltd", ("Superintendent",)),
    ]


def test_a_bare_dollar_is_the_dollar_its_document_names() -> None:
    """Issue 40: an Australian contract that writes `$` is not reported in USD."""
    terms = _terms("The Contract Sum is AUD 12,450,000. Liquidated damages are $25,000 per day.")
    assert [(a.value, a.currency) for a in terms.amounts] == [
        ("12450000.00", "AUD"),
        ("25000.00", "AUD"),
    ]
    assert all(e.document_name == "terms.txt" for a in terms.amounts for e in a.evidence)


def test_a_bare_dollar_stays_usd_where_the_document_names_no_one_dollar() -> None:
    both = _terms("Fees are AUD 5,000 and USD 6,000, and a bond of $7,000.")
    assert ("7000.00", "USD") in [(a.value, a.currency) for a in both.amounts]


def test_a_number_in_a_column_whose_header_names_a_currency_is_an_amount() -> None:
    """Issue 40: a rates schedule in XLSX writes `385` in a column headed `Rate (AUD)`."""
    terms = _terms(
        "Sheet: Rates\n\nItem | Unit | Rate (AUD)\n50 MPa concrete | m3 | 385\n"
        "40 MPa concrete | m3 | 352.50"
    )
    assert [(a.value, a.currency, a.raw) for a in terms.amounts] == [
        ("385.00", "AUD", "385"),
        ("352.50", "AUD", "352.50"),
    ]
    assert terms.amounts[0].evidence[0].excerpt.startswith("50 MPa concrete")


def test_a_number_in_a_column_without_a_currency_is_no_amount() -> None:
    terms = _terms("Item | Quantity\nConcrete | 385")
    assert terms.amounts == ()
