"""run.py's results (its --json files with --corpus all) summed over the TUNING and the
HELD-OUT halves apart, several runs side by side: the table of record for issue 40, with
the right answers' median words and fact first (issue 53).

    .venv/bin/python bench/quality/halves.py before=/tmp/before.json after=/tmp/after.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import scoring

TUNING = ("questions.yaml", "tuning-open.yaml", "tuning.yaml")


def load(path: Path) -> list[scoring.Judged]:
    """Every judged question of a run (its per-corpus files)."""
    files = sorted(path.parent.glob(f"{path.stem}-*{path.suffix}")) or [path]
    return [scoring.Judged(**q) for f in files for q in json.loads(f.read_text())["questions"]]


def cells(judged: list[scoring.Judged]) -> list[str]:
    """Right, by kind, wrong among asserted, unanswerable declined, right answers' words."""
    share = scoring._share
    answerable = [j for j in judged if j.answerable]
    unanswerable = [j for j in judged if not j.answerable]
    asserted = [j for j in judged if j.asserted]
    by_kind = [
        share(sum(j.asserted_right for j in answerable if j.kind == kind),
              sum(j.kind == kind for j in answerable))
        for kind in scoring.KINDS
    ]  # fmt: skip
    right = [j for j in answerable if j.asserted_right]
    return [
        share(len(right), len(answerable)),
        *by_kind,
        share(sum(j.asserted_wrong for j in asserted), len(asserted)),
        share(sum(j.not_found for j in unanswerable), len(unanswerable)),
        f"{scoring.median_words(right):g}" if right else "n/a",
        share(sum(j.first_fact for j in right), len(right)),
    ]


def main() -> None:
    print(
        "| run | half | all answerable right | lookups right | paraphrases right | "
        "multi-fact right | wrong among asserted | unanswerable: not asserted | "
        "median words, right answers | fact in the first sentence, right answers |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, path in (argument.split("=", 1) for argument in sys.argv[1:]):
        judged = load(Path(path))
        for half, tuning in (("tuning", True), ("held out", False)):
            chosen = [j for j in judged if (j.question_set.split("/")[-1] in TUNING) == tuning]
            print(f"| {name} | {half} | " + " | ".join(cells(chosen)) + " |")


if __name__ == "__main__":
    main()
