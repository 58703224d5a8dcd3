"""How bench-quality scores an answer, a ranking and a template fill (issue 15), as pure
functions over what the API returned (tests/unit/bench/test_quality_scoring.py), and where
the corpora, their question files and their templates are."""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

MARKER = re.compile(r"\s*\[\d+\]")
_SPACE = re.compile(r"\s+")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "*": None})
_NOT_FOUND = re.compile(r"\bnot found in the documents\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
CONCISE_CHARS = 80  # a template value longer than this is a sentence, not a value

HERE = Path(__file__).parent
CORPORA = HERE / "corpora"  # issue 27's corpora, one folder each
FAR = "far"  # the first corpus: bench/quality/corpus/ and the question files beside it


def corpus_names() -> list[str]:
    return [FAR, *sorted(path.name for path in CORPORA.iterdir() if (path / "corpus").is_dir())]


def corpus_dir(name: str) -> Path:
    return HERE / "corpus" if name == FAR else CORPORA / name / "corpus"


def load_questions(path: Path) -> list[dict]:
    return yaml.safe_load(path.read_text())["questions"]


def template_of(name: str) -> list[tuple[str, str, list[str] | None]]:
    """The FAR's own template; for the others, one over their tuning questions."""
    if name == FAR:
        return FAR_TEMPLATE
    return tuning_template(load_questions(CORPORA / name / "tuning.yaml"))


def normalise(text: str) -> str:
    """White space as one space, quotes straight, no `*` and no `[n]` markers."""
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
    return _SENTENCE_END.split(answer.strip(), maxsplit=1)[0]


def abstained(answer: str, citations: Sequence[object]) -> bool:
    """Whether the answer says plainly that the documents do not answer, citing nothing."""
    return bool(_NOT_FOUND.search(answer)) and not citations


def is_not_found(answer: str, answer_type: str | None = None) -> bool:
    """The response's `answer_type` when it has one, else its text (before issue 27)."""
    if answer_type is not None:
        return answer_type == "not_found"
    return bool(_NOT_FOUND.search(answer))


def quotes_of(passage: str | Sequence[str] | None) -> list[str]:
    return [] if passage is None else [passage] if isinstance(passage, str) else list(passage)


def is_gold(content: str, passage: str | Sequence[str] | None) -> bool:
    """Whether a passage's text contains one of the gold quotes (normalised, casefolded)."""
    text = normalise(content).casefold()
    return any(normalise(quote).casefold() in text for quote in quotes_of(passage))


def gold_rank(contents: Sequence[str], passage: str | Sequence[str] | None) -> int | None:
    """The 1-based rank of the first gold passage in a ranking, or None."""
    return next((r for r, c in enumerate(contents, start=1) if is_gold(c, passage)), None)


def field_right(
    value: str | None, found: bool, gold: Sequence[str] | None, placeholder_kept: bool = True
) -> bool:
    """Holding its gold facts in at most CONCISE_CHARS characters; without gold, left
    unfilled with its placeholder kept."""
    if gold is None:
        return not found and value is None and placeholder_kept
    concise = value is not None and len(normalise(value)) <= CONCISE_CHARS
    return found and concise and holds(value, gold)


# The FAR corpus's template (issue 15): (field name, instruction, gold facts or None when the
# documents do not answer it).
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
TEMPLATE_VALUES, TEMPLATE_UNANSWERABLE = 7, 3  # a corpus's template's fields (issue 53 item 6)
TEMPLATE_VALUE_CHARS = 30  # a gold fact this short is a value a template asks for


def tuning_template(questions: Sequence[dict]) -> list[tuple[str, str, list[str] | None]]:
    """The first TEMPLATE_VALUES lookups and paraphrases whose one gold fact is a value, then
    the first TEMPLATE_UNANSWERABLE unanswerable questions; fields named after their ids."""
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
    vector_rank: int | None = None  # with `--embeddings` (issue 16): by meaning only,
    hybrid_rank: int | None = None  # hybrid blend
    hybrid_rrf_rank: int | None = None  # and hybrid reciprocal rank fusion
    fact: bool = False
    first_fact: bool = False
    cited_gold: bool = False
    abstained: bool = False
    not_found: bool = False  # the answer says the documents do not answer (see is_not_found)

    @property
    def declined(self) -> bool:
        """`not_found` when the API gives `answer_type`, else `abstained` (issue 15's rule)."""
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
    """One question's chat answer (its text, `answer_type` and cited passages' text) and its
    two rankings (passage texts, best first), judged."""
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


def median_words(judged: Sequence[Judged]) -> float:
    """The median length in words of the answers (citation markers left out)."""
    return statistics.median(len(normalise(j.answer).split()) for j in judged)


def _share(hits: int, total: int) -> str:
    return f"{hits / total:.0%} ({hits}/{total})" if total else "n/a"


def _ratio(hits: int, total: int) -> str:
    return f"{hits / total:.2f} ({hits}/{total})" if total else "n/a"


def _count(items: Iterable[Judged], test) -> int:
    return sum(1 for item in items if test(item))


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

    def share(items, test) -> str:
        return _share(_count(items, test), len(items))

    def ratios(items, test) -> tuple[str, str]:
        return tuple(
            _ratio(_count(items, lambda j, a=a: test(getattr(j, a))), len(items))
            for a in ("search_rank", "peer_rank")
        )

    def in_top(rank: int | None) -> bool:
        return rank is not None and rank <= top

    return [
        Row("chat answer holds the right fact, all answerable questions",
            share(answerable, lambda j: j.fact), goal=">= 85%"),
        Row("... when the question uses other words than the passage (paraphrase)",
            share(paraphrases, lambda j: j.fact), goal=">= 60%"),
        Row('chat answers "not found" (no asserted answer) when the documents hold no answer',
            share(unanswerable, lambda j: j.declined), goal=">= 90%"),
        Row('chat answers "not found" to an answerable question (lower is better)',
            share(answerable, lambda j: j.not_found)),
        Row("the first quoted sentence holds the (first) fact",
            share(answerable, lambda j: j.first_fact), goal=">= 70%"),
        Row("citations include the passage that holds the fact",
            share(answerable, lambda j: j.cited_gold), goal=">= 90%"),
        Row(f"search: the right passage in the top {top}", *ratios(answerable, in_top),
            ">= 0.90"),
        Row(f"search: the right passage in the top {top}, paraphrases",
            *ratios(paraphrases, in_top), ">= 0.75"),
        Row("search: the right passage first", *ratios(answerable, lambda r: r == 1)),
    ]  # fmt: skip


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
    lines = [f"| measured | value | {peer_name} | goal |", "|---|---|---|---|"]
    return "\n".join(lines + [f"| {r.measured} | {r.value} | {r.peer} | {r.goal} |" for r in rows])


SEARCHES = {"lexical (the API)": "search_rank", "bm25s": "peer_rank", "vector only": "vector_rank",
            "hybrid, blend": "hybrid_rank", "hybrid, rrf": "hybrid_rrf_rank"}  # fmt: skip


def search_columns(judged: Sequence[Judged], top: int = 5, api: str = "lexical (the API)") -> str:
    """Each ranking's right passage in the top `top` (all, paraphrases, the others), first,
    and MRR@10 (issue 16); `api` labels the API's own ranking."""
    answerable = [j for j in judged if j.kind != "unanswerable"]
    paraphrases = [j for j in answerable if j.kind == "paraphrase"]
    others = [j for j in answerable if j.kind != "paraphrase"]
    groups = [("all", answerable), ("paraphrases", paraphrases), ("lookups and multi-fact", others)]
    header = [f"top {top}, {name}" for name, _ in groups] + ["first, all", "MRR@10, all"]
    lines = ["| search | " + " | ".join(header) + " |", "|---|" + "---|" * len(header)]
    for label, attribute in SEARCHES.items():
        label = api if attribute == "search_rank" else label
        ranks = {id(j): getattr(j, attribute) for j in answerable}
        cells = [_ratio(sum(1 for j in items if (ranks[id(j)] or 99) <= top), len(items))
                 for _, items in groups]  # fmt: skip
        cells.append(_ratio(sum(1 for j in answerable if ranks[id(j)] == 1), len(answerable)))
        reciprocal = sum(1 / ranks[id(j)] for j in answerable if ranks[id(j)])
        cells.append(f"{reciprocal / len(answerable):.3f}" if answerable else "n/a")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


KINDS = ("lookup", "paraphrase", "multi_fact")
OUTCOME_HEADER = (
    "| set | kind | n | asserted right | asserted wrong | not found | not found, answer among "
    "the closest | answering passage cited | search top {top} | bm25s top {top} |"
)


def outcome_cells(items: Sequence[Judged], top: int = 5) -> list[str]:
    """Asserted right, wrong, not found; of the "not found", the answering passage among the
    closest; that passage cited; search's and bm25s's top `top`."""
    n = len(items)
    not_found = [j for j in items if j.not_found]

    def share(test) -> str:
        return _share(_count(items, test), n)

    return [
        str(n), share(lambda j: j.asserted_right), share(lambda j: j.asserted_wrong),
        share(lambda j: j.not_found),
        _share(_count(not_found, lambda j: j.cited_gold), len(not_found)),
        share(lambda j: j.cited_gold),
        _ratio(_count(items, lambda j: (j.search_rank or 99) <= top), n),
        _ratio(_count(items, lambda j: (j.peer_rank or 99) <= top), n),
    ]  # fmt: skip


def outcome_table(judged: Sequence[Judged], top: int = 5) -> str:
    """Per question set, per kind and all answerable: outcome_cells; then per set the
    unanswerable questions that got no asserted answer (issue 27)."""
    lines = [OUTCOME_HEADER.format(top=top), "|---" * 10 + "|"]
    unanswerable_lines = []
    for name in dict.fromkeys(j.question_set for j in judged):
        in_set = [j for j in judged if j.question_set == name]
        answerable = [j for j in in_set if j.answerable]
        groups = [(kind, [j for j in answerable if j.kind == kind]) for kind in KINDS]
        for kind, items in [*groups, ("all answerable", answerable)]:
            if items:
                lines.append(f"| {name} | {kind} | " + " | ".join(outcome_cells(items, top)) + " |")
        unanswerable = [j for j in in_set if not j.answerable]
        if unanswerable:
            kept = _share(_count(unanswerable, lambda j: j.not_found), len(unanswerable))
            unanswerable_lines.append(f"| {name} | {len(unanswerable)} | {kept} |")
    if unanswerable_lines:
        lines += ["", "| set | unanswerable questions | no asserted answer |", "|---|---|---|"]
        lines += unanswerable_lines
    return "\n".join(lines)
