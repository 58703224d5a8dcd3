"""The answer-quality results of bench/quality/run.py (its --json files, one per corpus) summed
over the TUNING halves and over the HELD-OUT halves apart, for several runs side by side: the
table of record for issue 40 (tune on one half, report the other).

    .venv/bin/python bench/quality/halves.py before=/tmp/before.json after=/tmp/after.json

Each NAME=PATH is a run: PATH as given to run.py's --json with --corpus all (the files are
PATH with each corpus's name before the suffix). Tuning halves: the FAR's questions.yaml
and tuning-open.yaml and every corpus's tuning.yaml; held out: the FAR's heldout*.yaml
(when the run asked them) and every corpus's heldout.yaml.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TUNING = ("questions.yaml", "tuning-open.yaml", "tuning.yaml")


def half_of(question_set: str) -> str:
    return "tuning" if question_set.split("/")[-1] in TUNING else "held out"


def load(path: Path) -> list[dict]:
    """Every judged question of a run (its per-corpus files)."""
    files = sorted(path.parent.glob(f"{path.stem}-*{path.suffix}")) or [path]
    return [question for file in files for question in json.loads(file.read_text())["questions"]]


def share(part: int, whole: int) -> str:
    return f"{part / whole:.0%} ({part}/{whole})" if whole else "n/a"


def cells(questions: list[dict]) -> list[str]:
    answerable = [q for q in questions if q["kind"] != "unanswerable"]
    unanswerable = [q for q in questions if q["kind"] == "unanswerable"]
    asserted = [q for q in questions if q["answer_type"] != "not_found"]

    def right(q: dict) -> bool:
        return q["kind"] != "unanswerable" and q["answer_type"] != "not_found" and q["fact"]

    by_kind = [
        share(sum(right(q) for q in answerable if q["kind"] == kind),
              sum(q["kind"] == kind for q in answerable))
        for kind in ("lookup", "paraphrase", "multi_fact")
    ]  # fmt: skip
    wrong = sum(not right(q) for q in asserted)
    declined = sum(q["answer_type"] == "not_found" for q in unanswerable)
    return [
        share(sum(map(right, answerable)), len(answerable)),
        *by_kind,
        share(wrong, len(asserted)),
        share(declined, len(unanswerable)),
    ]


def main() -> None:
    runs = [argument.split("=", 1) for argument in sys.argv[1:]]
    print(
        "| run | half | all answerable right | lookups right | paraphrases right | "
        "multi-fact right | wrong among asserted | unanswerable: not asserted |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, path in runs:
        questions = load(Path(path))
        for half in ("tuning", "held out"):
            chosen = [q for q in questions if half_of(q["question_set"]) == half]
            print(f"| {name} | {half} | " + " | ".join(cells(chosen)) + " |")


if __name__ == "__main__":
    main()
