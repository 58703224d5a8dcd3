"""The answer-quality results of bench/quality/run.py (its --json files, one per corpus) summed
over the TUNING halves and over the HELD-OUT halves apart, for several runs side by side: the
table of record for issue 40 (tune on one half, report the other). Issue 53 adds how long the
right answers are (their median words, citation markers left out) and how many of them hold
their (first) fact in their first quoted sentence (scoring.first_quoted_sentence).

    .venv/bin/python bench/quality/halves.py before=/tmp/before.json after=/tmp/after.json

Each NAME=PATH is a run: PATH as given to run.py's --json with --corpus all (the files are
PATH with each corpus's name before the suffix). Tuning halves: the FAR's questions.yaml
and tuning-open.yaml and every corpus's tuning.yaml; held out: the FAR's heldout*.yaml
(when the run asked them) and every corpus's heldout.yaml.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import scoring

TUNING = ("questions.yaml", "tuning-open.yaml", "tuning.yaml")


def half_of(question_set: str) -> str:
    return "tuning" if question_set.split("/")[-1] in TUNING else "held out"


def load(path: Path) -> list[scoring.Judged]:
    """Every judged question of a run (its per-corpus files)."""
    files = sorted(path.parent.glob(f"{path.stem}-*{path.suffix}")) or [path]
    return [
        scoring.Judged(**question)
        for file in files
        for question in json.loads(file.read_text())["questions"]
    ]


def cells(judged: list[scoring.Judged]) -> list[str]:
    """By scoring's own rules: right, by kind, wrong among asserted, unanswerable declined."""
    answerable = [j for j in judged if j.answerable]
    unanswerable = [j for j in judged if not j.answerable]
    asserted = [j for j in judged if j.asserted]
    by_kind = [
        scoring._share(sum(j.asserted_right for j in answerable if j.kind == kind),
                       sum(j.kind == kind for j in answerable))
        for kind in ("lookup", "paraphrase", "multi_fact")
    ]  # fmt: skip
    right = [j for j in answerable if j.asserted_right]
    return [
        scoring._share(len(right), len(answerable)),
        *by_kind,
        scoring._share(sum(j.asserted_wrong for j in asserted), len(asserted)),
        scoring._share(sum(j.not_found for j in unanswerable), len(unanswerable)),
        f"{median_words(right):g}" if right else "n/a",
        scoring._share(sum(j.first_fact for j in right), len(right)),
    ]


def median_words(judged: list[scoring.Judged]) -> float:
    """The median length in words of the answers (citation markers left out)."""
    return statistics.median(len(scoring.normalise(j.answer).split()) for j in judged)


def main() -> None:
    runs = [argument.split("=", 1) for argument in sys.argv[1:]]
    print(
        "| run | half | all answerable right | lookups right | paraphrases right | "
        "multi-fact right | wrong among asserted | unanswerable: not asserted | "
        "median words, right answers | fact in the first sentence, right answers |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, path in runs:
        judged = load(Path(path))
        for half in ("tuning", "held out"):
            chosen = [j for j in judged if half_of(j.question_set) == half]
            print(f"| {name} | {half} | " + " | ".join(cells(chosen)) + " |")


if __name__ == "__main__":
    main()
