"""The answer engine on every TUNING half at once, in process (no server), for choosing the
engine's weights and its answer-or-"not found" threshold (issue 40). Never give it a
held-out file (run.py reports the held-out halves through the API). Passages ranked as
hybrid search ranks them, with the sentence vectors ingestion makes (bench/quality/inproc.py).

    .venv/bin/python bench/quality/tune.py [--lexical] [--failures] [--said] [--sets far ...]
    .venv/bin/python bench/quality/tune.py --features out.jsonl   # each question's best sentence
    .venv/bin/python bench/quality/tune.py --margins out.jsonl    # best and next scores (issue 53)
    .venv/bin/python bench/quality/tune.py --fill   # each corpus's template, filled as the job does
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import scoring  # noqa: E402
from inproc import Corpus, said  # noqa: E402

from strongroom.answers.base import Passage  # noqa: E402
from strongroom.answers.composing import with_items  # noqa: E402
from strongroom.answers.extractive import ExtractiveEngine  # noqa: E402
from strongroom.answers.meaning import Meaning  # noqa: E402
from strongroom.answers.ranking import near_pairs, question_pairs, ranked, scored_for  # noqa: E402
from strongroom.answers.reading import candidates_of  # noqa: E402
from strongroom.embeddings import create_provider  # noqa: E402
from strongroom.embeddings.remembered import RememberedEmbeddings  # noqa: E402
from strongroom.settings import Settings  # noqa: E402
from strongroom.templates.service import PASSAGES_PER_FIELD  # noqa: E402
from strongroom.text.question import Question  # noqa: E402


def tuning_sets() -> dict[str, list[tuple[str, Path]]]:
    """Each corpus's tuning files: the FAR's two, and every corpora/<name>/tuning.yaml."""
    sets = {"far": [("far", HERE / "questions.yaml"), ("far-open", HERE / "tuning-open.yaml")]}
    names = scoring.corpus_names()[1:]
    return sets | {name: [(name, scoring.CORPORA / name / "tuning.yaml")] for name in names}


async def fill(engine, body: Corpus, template) -> list[dict]:
    """Each field answered as the template-fill job does (brief, over PASSAGES_PER_FIELD
    passages, no markers, none for "not found"), beside chat's answer (issue 53 item 6)."""
    out = []
    for name, instruction, gold in template:
        question = Question.read(instruction)
        passages = await body.passages(instruction)
        answers = {}
        for brief, given in ((False, passages), (True, passages[:PASSAGES_PER_FIELD])):
            text, cites, not_found = await said(engine, question, given, brief=brief)
            answers[brief] = (None if not_found or not cites else text, not_found)
        chat, chat_not_found = answers[False]
        value = answers[True][0]
        if value is not None:
            value = scoring.MARKER.sub("", value).strip() or None
        chat_right = chat_not_found if gold is None else bool(chat and scoring.holds(chat, gold))
        right = scoring.field_right(value, value is not None, gold)
        out.append({"name": name, "value": value, "right": right, "chat_right": chat_right,
                    "left": gold is None})  # fmt: skip
    return out


def fill_report(filled: dict[str, list[dict]]) -> str:
    """Per template: fields right, and the fields chat answers right that the fill does not."""
    lines = ["| template | fields right | answerable right | unanswerable left | chat right |",
             "|---|---|---|---|---|"]  # fmt: skip
    lagging = []
    for name, fields in filled.items():
        answerable = [f for f in fields if not f["left"]]
        left = [f for f in fields if f["left"]]
        cells = [(fields, "right"), (answerable, "right"), (left, "right"), (fields, "chat_right")]
        counts = " | ".join(f"{sum(f[key] for f in some)}/{len(some)}" for some, key in cells)
        lines.append(f"| {name} | {counts} |")
        lagging += [f"- {name} {f['name']}: filled {f['value']!r}"
                    for f in fields if f["chat_right"] and not f["right"]]  # fmt: skip
    return "\n".join([*lines, "", "Fields chat answers right and the fill does not:", *lagging])


async def run(args) -> tuple[list[scoring.Judged], dict[str, list[dict]], dict[str, list]]:
    settings = Settings(embeddings_provider=args.provider)
    remembered = None if args.lexical else RememberedEmbeddings(create_provider(settings))
    engine = ExtractiveEngine(Meaning(remembered) if remembered is not None else None)
    if args.floor is not None and engine.meaning is not None:
        engine.meaning.floor = args.floor
    judged: list[scoring.Judged] = []
    filled: dict[str, list[dict]] = {}
    rows: dict[str, list] = {"features": [], "margins": []}
    for name, files in tuning_sets().items():
        if args.sets and name not in args.sets:
            continue
        body = Corpus(name, remembered)
        if remembered is not None:
            await body.embed()
        if args.fill:
            filled[name] = await fill(engine, body, scoring.template_of(name))
            continue
        for label, path in files:
            for question in scoring.load_questions(path):
                passages = await body.passages(question["question"])
                asked = Question.read(question["question"])
                answer, cites, not_found = await said(engine, asked, passages)
                result = scoring.judge(
                    question, answer, cites, search=[p.content for p in passages[:10]],
                    answer_type="not_found" if not_found else "answered", question_set=label,
                )  # fmt: skip
                judged.append(result)
                if args.features:
                    row = await candidate_features(engine, question, passages)
                    rows["features"].append(row | {"set": label})
                if args.margins:
                    row = await best_and_next(engine, question, passages)
                    rows["margins"].append(row | {"set": label, "answered": not not_found})
                if args.failures:
                    show_failure(question, result)
                if args.said:
                    show_said(question, result)
    return judged, filled, rows


async def scoring_inputs(engine, question: dict, passages: list[Passage]):
    """The question read, its candidate sentences, and their closeness (meaning on)."""
    asked = Question.read(question["question"])
    candidates = candidates_of(passages)
    closeness = await engine._closeness(asked.text, candidates) if engine.meaning else None
    return asked, candidates, closeness


async def best_and_next(engine, question: dict, passages: list[Passage]) -> dict:
    """The best answering sentence's score, the next one's (of another text), and whether the
    best holds the primary fact: what the standout margin is calibrated on (issue 53)."""
    asked, candidates, closeness = await scoring_inputs(engine, question, passages)
    everything, scored = scored_for(asked, passages, candidates, closeness)
    facts = question.get("answer") or []
    best = scored[0] if scored else None

    def after(items):
        return next(
            (s.score for s in items if best and s.sentence.text != best.sentence.text), None
        )

    return {
        "id": question["id"], "kind": question["kind"], "best": best.score if best else None,
        "next": after(scored),  # the next that may answer (holding a value of the kind asked)
        "next_any": after(everything),  # the next of every candidate
        "right": bool(best and facts and scoring.holds(best.sentence.text, facts[:1])),
    }  # fmt: skip


async def candidate_features(engine, question: dict, passages: list[Passage]) -> dict:
    """The question's 30 best candidate sentences as the engine scores them, each with
    whether it holds the primary gold fact."""
    asked, candidates, closeness = await scoring_inputs(engine, question, passages)
    scored = ranked(asked.terms, passages, candidates=candidates, closeness=closeness)
    pairs = question_pairs(asked.terms)
    facts, wanted, rows = question.get("answer") or [], asked.wanted, []
    for item in scored[:30]:
        sentence = item.sentence
        text = " ".join(s.text for s in with_items([sentence], candidates))
        rows.append({
            "words": item.words, "close": item.closeness,
            "phrase": near_pairs(pairs, sentence.sequence), "number": sentence.passage.number,
            "passage_score": sentence.passage.score,
            "value": wanted is None or wanted.held_by(sentence.text, besides=asked.text),
            "named_kind": bool(wanted and wanted.kinds), "wants": wanted is not None,
            "right": bool(facts) and scoring.holds(text, facts[:1]), "text": sentence.text[:200],
        })  # fmt: skip
    return {"id": question["id"], "kind": question["kind"], "candidates": rows}


def show_failure(question: dict, result: scoring.Judged) -> None:
    if question["kind"] == "unanswerable":
        if result.not_found:
            return
        print(f"--- {question['id']} UNANSWERABLE: {question['question']}")
    elif result.fact and not result.not_found:
        return
    else:
        print(f"--- {question['id']} {question['kind']}: {question['question']}")
        print(f"    gold: {question['answer']}  rank {result.search_rank}")
    print(f"    answer: {result.answer[:400]}")


def show_said(question: dict, result: scoring.Judged) -> None:
    """A right answer as said (issue 53 item 5): its words, its fact first or later."""
    if not (result.answerable and result.asserted_right):
        return
    words = len(scoring.normalise(result.answer).split())
    first = "first" if result.first_fact else "LATER"
    print(f"=== {question['id']} {words}w {first}: {question['question']}")
    print(f"    gold: {question['answer']}")
    print(f"    answer: {result.answer}")


def summary(judged: list[scoring.Judged]) -> str:
    """One line over every set: the three numbers the engine is tuned for."""
    answerable = [j for j in judged if j.answerable]
    unanswerable = [j for j in judged if not j.answerable]
    asserted = [j for j in judged if j.asserted]
    right = sum(j.asserted_right for j in answerable)
    wrong = sum(j.asserted_wrong for j in asserted)
    held_back = sum(j.not_found for j in unanswerable)
    right_ones = [j for j in answerable if j.asserted_right]
    words = scoring.median_words(right_ones) if right_ones else 0
    first = sum(j.first_fact for j in right_ones)
    return (
        f"all: answerable right {right}/{len(answerable)} ({right / len(answerable):.0%}), "
        f"wrong of asserted {wrong}/{len(asserted)} ({wrong / max(1, len(asserted)):.0%}), "
        f"unanswerable not asserted {held_back}/{len(unanswerable)} "
        f"({held_back / max(1, len(unanswerable)):.0%}); right answers: median words "
        f"{words:g}, fact in the first sentence {first}/{len(right_ones)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lexical", action="store_true", help="no embeddings provider")
    parser.add_argument("--provider", default="minilm", choices=["minilm", "wordllama"])
    parser.add_argument("--failures", action="store_true")
    parser.add_argument("--features", help="write each question's decision features here")
    parser.add_argument("--floor", type=float, help="the answer floor to try (meaning on)")
    parser.add_argument("--margins", help="write each question's best and next scores here")
    parser.add_argument("--said", action="store_true", help="print each right answer as said")
    parser.add_argument("--sets", nargs="*", help="corpora to run (default: every one)")
    parser.add_argument("--fill", action="store_true", help="fill each corpus's template instead")
    args = parser.parse_args()
    judged, filled, rows = asyncio.run(run(args))
    if args.fill:
        print(fill_report(filled))
        return
    for path, written in ((args.features, rows["features"]), (args.margins, rows["margins"])):
        if path:
            Path(path).write_text("".join(json.dumps(row) + "\n" for row in written))
    print(scoring.outcome_table(judged))
    print(summary(judged))


if __name__ == "__main__":
    main()
