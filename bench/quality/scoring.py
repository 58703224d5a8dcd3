"""How bench-quality scores an answer, a ranking and a template fill (issue 15), as pure
functions over what the API returned, so that the rules are unit-tested
(tests/unit/bench/test_quality_scoring.py) apart from the benchmark run.

- A text "holds" gold facts when every fact (a regular expression, case-insensitive) is
  found in it after `normalise`: runs of white space as one space, curly quotes straight,
  Markdown emphasis (`*`) removed, the `[n]` citation markers removed.
- The "first quoted sentence" of an answer is its text up to its first `[n]` marker (the
  extractive engine puts one after each quoted sentence), or up to the first sentence end
  when it has none.
- An answer "abstains" when it says "not found in the documents" and cites nothing.
- A passage is "the gold passage" when it contains one of the question's gold quotes after
  the same normalisation, compared case-insensitively and literally.
- An answer is "not found" when the response's `answer_type` says `not_found` (issue 27:
  then its citations are the closest passages, shown for a person to read); a response
  without `answer_type` (the API before issue 27) is "not found" when its text says "not
  found in the documents". Every other answer is "asserted": asserted right when it holds
  the gold facts, asserted wrong when it does not (for an unanswerable question, any
  asserted answer is wrong).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

MARKER = re.compile(r"\s*\[\d+\]")
_SPACE = re.compile(r"\s+")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "*": None})
_NOT_FOUND = re.compile(r"\bnot found in the documents\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
# A template value longer than this is a sentence or a paragraph, not a value.
CONCISE_CHARS = 80


def normalise(text: str) -> str:
    """The text as gold facts and quotes are compared with."""
    return _SPACE.sub(" ", MARKER.sub("", text).translate(_QUOTES)).strip()


def holds(text: str, facts: Iterable[str]) -> bool:
    """Whether `text` contains every fact (regular expressions, case-insensitive)."""
    plain = normalise(text)
    facts = list(facts)
    return bool(facts) and all(re.search(fact, plain, re.IGNORECASE) for fact in facts)


def first_quoted_sentence(answer: str) -> str:
    """The answer up to its first `[n]` marker (without it), else its first sentence."""
    marker = MARKER.search(answer)
    if marker:
        return answer[: marker.start()].strip()
    parts = _SENTENCE_END.split(answer.strip(), maxsplit=1)
    return parts[0] if parts else ""


def says_not_found(answer: str) -> bool:
    return bool(_NOT_FOUND.search(answer))


def abstained(answer: str, citations: Sequence[object]) -> bool:
    """Whether the answer says plainly that the documents do not answer, citing nothing."""
    return says_not_found(answer) and not citations


def is_not_found(answer: str, answer_type: str | None = None) -> bool:
    """Whether the response says the documents do not answer: its `answer_type` when the API
    gives one, else the text (the API before issue 27)."""
    if answer_type is not None:
        return answer_type == "not_found"
    return says_not_found(answer)


def quotes_of(passage: str | Sequence[str] | None) -> list[str]:
    if passage is None:
        return []
    return [passage] if isinstance(passage, str) else list(passage)


def is_gold(content: str, passage: str | Sequence[str] | None) -> bool:
    """Whether a passage's text contains one of the gold quotes."""
    text = normalise(content).casefold()
    return any(normalise(quote).casefold() in text for quote in quotes_of(passage))


def gold_rank(contents: Sequence[str], passage: str | Sequence[str] | None) -> int | None:
    """The 1-based rank of the first gold passage in a ranking, or None."""
    for rank, content in enumerate(contents, start=1):
        if is_gold(content, passage):
            return rank
    return None


def field_right(
    value: str | None, found: bool, gold: Sequence[str] | None, placeholder_kept: bool = True
) -> bool:
    """A template field is right when it holds its gold facts and is concise (a value of
    at most CONCISE_CHARS characters, not a sentence); a field without gold (the documents
    do not answer it) is right when it was left unfilled, its placeholder kept in the
    filled document."""
    if gold is None:
        return not found and value is None and placeholder_kept
    return (
        found
        and value is not None
        and len(normalise(value)) <= CONCISE_CHARS
        and holds(value, gold)
    )


# The FAR corpus's template (issue 15): (field name, instruction, gold facts or None when the
# documents do not answer it). Instructions are written as a user would, naming the kind of
# value.
FAR_TEMPLATE: list[tuple[str, str, list[str] | None]] = [
    ("warranty_period", "How long does the warranty continue after final acceptance?",
     [r"1 year"]),
    ("max_retainage", "What maximum percent of a progress payment may be retained?",
     [r"10 percent"]),
    ("delay_notice", "Within how many days must the Contractor notify the causes of delay?",
     [r"10 days"]),
    ("schedule_due", "Within how many days after work commences must the schedule be submitted?",
     [r"five days"]),
    ("suspension_cutoff", "Costs incurred more than how many days before notice are not "
     "allowed in a suspension of work claim?", [r"20 days"]),
    ("bond_threshold", "Above what amount are performance and payment bonds required?",
     [r"\$150,000"]),
    ("own_forces", "What percent of the work must the contractor perform with its own forces?",
     [r"12 percent"]),
    ("breach_law", "Which jurisdiction's law applies to a breach of contract claim?",
     [r"United States"]),
    ("ld_rate", "What amount of liquidated damages is payable per day?", None),
    ("contract_sum", "What is the contract sum?", None),
    ("architect", "Who is the architect?", None),
]  # fmt: skip


# A corpus's template, for the fill (issue 53 item 6: a field is answered as chat answers its
# question): (field name, instruction, gold facts or None when the documents do not answer it).
TEMPLATE_VALUES = 7  # answerable fields of a corpus's template
TEMPLATE_UNANSWERABLE = 3
TEMPLATE_VALUE_CHARS = 30  # a gold fact this short is a value a template asks for


def tuning_template(questions: Sequence[dict]) -> list[tuple[str, str, list[str] | None]]:
    """A template over a corpus's TUNING questions, chosen by a rule (not by how the engine
    answers them): the first TEMPLATE_VALUES lookups and paraphrases whose one gold fact is
    a value (at most TEMPLATE_VALUE_CHARS characters), then the first TEMPLATE_UNANSWERABLE
    unanswerable questions, in file order; each field named after its question's id."""
    values = [
        q
        for q in questions
        if q["kind"] in ("lookup", "paraphrase")
        and len(q.get("answer") or []) == 1
        and len(q["answer"][0]) <= TEMPLATE_VALUE_CHARS
    ]
    unanswerable = [q for q in questions if q["kind"] == "unanswerable"]
    return [
        (q["id"].replace("-", "_"), q["question"], q["answer"] if q in values else None)
        for q in [*values[:TEMPLATE_VALUES], *unanswerable[:TEMPLATE_UNANSWERABLE]]
    ]


# Per-question results and the table ---------------------------------------------------------


@dataclass
class Judged:
    """One question's chat answer and search rankings, judged."""

    id: str
    kind: str
    question_set: str = ""  # the question file it comes from (tuning.yaml, heldout.yaml, ...)
    answer_type: str | None = None  # the response's `answer_type`, None when it has none
    answer: str = ""
    citations: list[str] = field(default_factory=list)  # the cited passages' text
    search_rank: int | None = None  # the API's rank of the gold passage (top 10), or None
    peer_rank: int | None = None  # bm25s's rank of it over the same passages, or None
    # With `--embeddings` (issue 16): the rank of it by meaning only, and by the hybrid
    # search (words and meaning fused: `blend`, and reciprocal rank fusion `rrf`).
    vector_rank: int | None = None
    hybrid_rank: int | None = None
    hybrid_rrf_rank: int | None = None
    fact: bool = False
    first_fact: bool = False
    cited_gold: bool = False
    abstained: bool = False
    not_found: bool = False  # the answer says the documents do not answer (see is_not_found)

    @property
    def declined(self) -> bool:
        """No answer asserted, as the response says it: `answer_type` `not_found` (its
        citations are then the closest passages), or from an API without `answer_type` the
        plain words with no citation (issue 15's rule, `abstained`)."""
        return self.not_found if self.answer_type is not None else self.abstained

    @property
    def answerable(self) -> bool:
        return self.kind != "unanswerable"

    @property
    def asserted(self) -> bool:
        return not self.not_found

    @property
    def asserted_right(self) -> bool:
        return self.asserted and self.answerable and self.fact

    @property
    def asserted_wrong(self) -> bool:
        return self.asserted and not (self.answerable and self.fact)

    @property
    def not_found_gold_cited(self) -> bool:
        """A "not found" whose closest passages (its citations) include the one that answers."""
        return self.not_found and self.cited_gold


def judge(
    question: dict,
    answer: str,
    citations: Sequence[str],
    search: Sequence[str] = (),
    peer: Sequence[str] = (),
    answer_type: str | None = None,
    question_set: str = "",
) -> Judged:
    """Judge one question's chat answer (its text, its `answer_type` when the response has
    one, and its citations' passage text) and its two rankings (passage texts, best
    first)."""
    facts = question.get("answer") or []
    passage = question.get("passage")
    return Judged(
        id=question["id"],
        kind=question["kind"],
        question_set=question_set,
        answer_type=answer_type,
        answer=answer,
        citations=list(citations),
        search_rank=gold_rank(search, passage),
        peer_rank=gold_rank(peer, passage),
        fact=holds(answer, facts),
        first_fact=holds(first_quoted_sentence(answer), facts[:1]),
        cited_gold=any(is_gold(content, passage) for content in citations),
        abstained=abstained(answer, citations),
        not_found=is_not_found(answer, answer_type),
    )


def _share(hits: int, total: int) -> str:
    return f"{hits / total:.0%} ({hits}/{total})" if total else "n/a"


def _ratio(hits: int, total: int) -> str:
    return f"{hits / total:.2f} ({hits}/{total})" if total else "n/a"


@dataclass
class Row:
    measured: str
    value: str
    peer: str = ""
    goal: str = ""


def chat_and_search_rows(judged: Sequence[Judged], top: int = 5) -> list[Row]:
    """The issue's rows for chat and search, from the judged questions."""
    answerable = [j for j in judged if j.kind != "unanswerable"]
    paraphrases = [j for j in judged if j.kind == "paraphrase"]
    unanswerable = [j for j in judged if j.kind == "unanswerable"]

    def count(items: Iterable[Judged], test) -> int:
        return sum(1 for item in items if test(item))

    def in_top(rank: int | None) -> bool:
        return rank is not None and rank <= top

    return [
        Row(
            "chat answer holds the right fact, all answerable questions",
            _share(count(answerable, lambda j: j.fact), len(answerable)),
            goal=">= 85%",
        ),
        Row(
            "... when the question uses other words than the passage (paraphrase)",
            _share(count(paraphrases, lambda j: j.fact), len(paraphrases)),
            goal=">= 60%",
        ),
        Row(
            'chat answers "not found" (no asserted answer) when the documents hold no answer',
            _share(count(unanswerable, lambda j: j.declined), len(unanswerable)),
            goal=">= 90%",
        ),
        Row(
            'chat answers "not found" to an answerable question (lower is better)',
            _share(count(answerable, lambda j: j.not_found), len(answerable)),
        ),
        Row(
            "the first quoted sentence holds the (first) fact",
            _share(count(answerable, lambda j: j.first_fact), len(answerable)),
            goal=">= 70%",
        ),
        Row(
            "citations include the passage that holds the fact",
            _share(count(answerable, lambda j: j.cited_gold), len(answerable)),
            goal=">= 90%",
        ),
        Row(
            f"search: the right passage in the top {top}",
            _ratio(count(answerable, lambda j: in_top(j.search_rank)), len(answerable)),
            _ratio(count(answerable, lambda j: in_top(j.peer_rank)), len(answerable)),
            ">= 0.90",
        ),
        Row(
            f"search: the right passage in the top {top}, paraphrases",
            _ratio(count(paraphrases, lambda j: in_top(j.search_rank)), len(paraphrases)),
            _ratio(count(paraphrases, lambda j: in_top(j.peer_rank)), len(paraphrases)),
            ">= 0.75",
        ),
        Row(
            "search: the right passage first",
            _ratio(count(answerable, lambda j: j.search_rank == 1), len(answerable)),
            _ratio(count(answerable, lambda j: j.peer_rank == 1), len(answerable)),
        ),
    ]


def template_row(fields: Sequence[dict]) -> Row:
    """The template row from each field's `value`, `found`, `gold` and `placeholder_kept`."""

    def right(f: dict) -> bool:
        return field_right(f["value"], f["found"], f["gold"], f.get("placeholder_kept", True))

    answerable = [f for f in fields if f["gold"] is not None]
    unanswerable = [f for f in fields if f["gold"] is None]
    return Row(
        "template fill: field right and concise (a value, not a paragraph)",
        f"{sum(map(right, answerable))} of {len(answerable)}; unanswerable fields left as "
        f"placeholders: {sum(map(right, unanswerable))} of {len(unanswerable)}",
        goal=">= 9 of 10; unanswerable stay placeholders",
    )


def markdown(rows: Sequence[Row], peer_name: str = "bm25s, same passages") -> str:
    lines = [
        f"| measured | value | {peer_name} | goal |",
        "|---|---|---|---|",
        *(f"| {r.measured} | {r.value} | {r.peer} | {r.goal} |" for r in rows),
    ]
    return "\n".join(lines)


SEARCHES = {
    "lexical (the API)": "search_rank",
    "bm25s": "peer_rank",
    "vector only": "vector_rank",
    "hybrid, blend": "hybrid_rank",
    "hybrid, rrf": "hybrid_rrf_rank",
}


def search_columns(judged: Sequence[Judged], top: int = 5, api: str = "lexical (the API)") -> str:
    """Search quality of each ranking side by side (issue 16): the right passage in the top
    `top` overall, for paraphrases, for the other answerable questions (lookups and
    multi-fact), first, and the mean reciprocal rank within the ranking's 10. `api` labels
    the API's own ranking."""
    answerable = [j for j in judged if j.kind != "unanswerable"]
    groups = [
        ("all", answerable),
        ("paraphrases", [j for j in answerable if j.kind == "paraphrase"]),
        ("lookups and multi-fact", [j for j in answerable if j.kind != "paraphrase"]),
    ]
    header = [f"top {top}, {name}" for name, _ in groups] + ["first, all", "MRR@10, all"]
    lines = [
        "| search | " + " | ".join(header) + " |",
        "|---|" + "---|" * len(header),
    ]
    for label, attribute in SEARCHES.items():
        label = api if attribute == "search_rank" else label
        ranks = {id(j): getattr(j, attribute) for j in answerable}
        cells = [
            _ratio(sum(1 for j in items if (ranks[id(j)] or 99) <= top), len(items))
            for _, items in groups
        ]
        cells.append(_ratio(sum(1 for j in answerable if ranks[id(j)] == 1), len(answerable)))
        reciprocal = sum(1 / ranks[id(j)] for j in answerable if ranks[id(j)])
        cells.append(f"{reciprocal / len(answerable):.3f}" if answerable else "n/a")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# The table per question set and kind (issue 27) ----------------------------------------------

KINDS = ("lookup", "paraphrase", "multi_fact")
OUTCOME_HEADER = (
    "| set | kind | n | asserted right | asserted wrong | not found | not found, answer among "
    "the closest | answering passage cited | search top {top} | bm25s top {top} |"
)


def outcome_cells(items: Sequence[Judged], top: int = 5) -> list[str]:
    """One row's cells for answerable questions: asserted right, asserted wrong and not found
    (shares of the questions), the "not found" answers whose closest passages include the
    answering one (of the "not found" answers), the answering passage cited whether answered
    or not, and the search rankings' top `top` (the API's, bm25s's)."""
    n = len(items)
    not_found = [j for j in items if j.not_found]

    def share(test) -> str:
        return _share(sum(1 for j in items if test(j)), n)

    return [
        str(n),
        share(lambda j: j.asserted_right),
        share(lambda j: j.asserted_wrong),
        share(lambda j: j.not_found),
        _share(sum(1 for j in not_found if j.cited_gold), len(not_found)),
        share(lambda j: j.cited_gold),
        _ratio(sum(1 for j in items if (j.search_rank or 99) <= top), n),
        _ratio(sum(1 for j in items if (j.peer_rank or 99) <= top), n),
    ]


def outcome_table(judged: Sequence[Judged], top: int = 5) -> str:
    """Per question set, per kind of question and all answerable together: what chat asserted
    (right or wrong) or called not found, and whether search found the answering passage;
    then, per set, the unanswerable questions that got no asserted answer."""
    sets = list(dict.fromkeys(j.question_set for j in judged))
    lines = [OUTCOME_HEADER.format(top=top), "|---" * 10 + "|"]
    unanswerable_lines = []
    for name in sets:
        in_set = [j for j in judged if j.question_set == name]
        answerable = [j for j in in_set if j.answerable]
        groups = [(kind, [j for j in answerable if j.kind == kind]) for kind in KINDS]
        groups.append(("all answerable", answerable))
        for kind, items in groups:
            if items:
                lines.append(f"| {name} | {kind} | " + " | ".join(outcome_cells(items, top)) + " |")
        unanswerable = [j for j in in_set if not j.answerable]
        if unanswerable:
            kept = sum(1 for j in unanswerable if j.not_found)
            unanswerable_lines.append(
                f"| {name} | {len(unanswerable)} | {_share(kept, len(unanswerable))} |"
            )
    if unanswerable_lines:
        lines += [
            "",
            "| set | unanswerable questions | no asserted answer |",
            "|---|---|---|",
            *unanswerable_lines,
        ]
    return "\n".join(lines)
