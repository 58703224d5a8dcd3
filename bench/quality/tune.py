"""The answer engine on every TUNING half at once, in process (no server), for choosing the
engine's weights and its answer-or-"not found" threshold (issue 40). Never give it a
held-out file: what it is tuned on is no longer held out (bench/quality/run.py reports the
held-out halves through the API).

Passages are read as ingestion reads them, ranked as hybrid search ranks them (BM25 with
the one analysis, blended with the passage vectors' cosine), and carry the sentence vectors
ingestion makes (strongroom.retrieval.sentence_vectors); vectors are cached per corpus in
bench/quality/.tune-cache/. Prints each set's outcomes and the whole.

    .venv/bin/python bench/quality/tune.py [--lexical] [--failures] [--sets far osha-1926 ...]
    .venv/bin/python bench/quality/tune.py --features out.jsonl   # each question's best sentence
    .venv/bin/python bench/quality/tune.py --margins out.jsonl    # best and next scores (issue 53)
    .venv/bin/python bench/quality/tune.py --fill   # each corpus's template, filled as the job does
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import statistics
import sys
from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import scoring  # noqa: E402
from inproc import corpus  # noqa: E402

from strongroom.answers.base import Cite, Delta, NotFound, Passage  # noqa: E402
from strongroom.answers.composing import with_items  # noqa: E402
from strongroom.answers.extractive import ExtractiveEngine, sentence_texts  # noqa: E402
from strongroom.answers.meaning import Meaning  # noqa: E402
from strongroom.answers.ranking import near_pairs, question_pairs, ranked, scored_for  # noqa: E402
from strongroom.answers.reading import candidates_of  # noqa: E402
from strongroom.embeddings import create_provider  # noqa: E402
from strongroom.embeddings.remembered import RememberedEmbeddings  # noqa: E402
from strongroom.retrieval.search import Candidate, rank  # noqa: E402
from strongroom.retrieval.semantic import Semantic, fuse  # noqa: E402
from strongroom.retrieval.sentence_vectors import from_blob, to_blob  # noqa: E402
from strongroom.settings import Settings  # noqa: E402
from strongroom.text import analysis  # noqa: E402
from strongroom.text.question import Question  # noqa: E402

CACHE = HERE / ".tune-cache"
K = 15  # chat's default `k`


def tuning_sets() -> dict[str, list[tuple[str, Path]]]:
    """Each corpus's tuning files: the FAR's two, and every corpora/<name>/tuning.yaml."""
    sets = {"far": [("far", HERE / "questions.yaml"), ("far-open", HERE / "tuning-open.yaml")]}
    for folder in sorted((HERE / "corpora").iterdir()):
        if (folder / "tuning.yaml").exists() and (folder / "corpus").is_dir():
            sets[folder.name] = [(folder.name, folder / "tuning.yaml")]
    return sets


class Corpus:
    """A corpus's passages with their passage and sentence vectors (cached)."""

    def __init__(self, name: str, provider) -> None:
        self.name = name
        self.chunks = corpus(name)  # (id, file name, page, text)
        self.candidates = [
            Candidate(cid, analysis.index_text(text).split()) for cid, _, _, text in self.chunks
        ]
        self.provider = provider
        self.vectors = None
        self.sentences: list = [{} for _ in self.chunks]

    async def embed(self) -> None:
        texts = [text for *_, text in self.chunks]
        per_chunk = [sentence_texts(text) for text in texts]
        digest = hashlib.sha256(
            json.dumps([self.provider.model, texts, per_chunk]).encode()
        ).hexdigest()[:16]
        path = CACHE / f"{self.name}-{digest}.npz"
        if path.exists():
            saved = np.load(path)
            passages, sentences = saved["passages"], saved["sentences"]
        else:
            flat = [s for group in per_chunk for s in group]
            passages = await self.provider.embed(texts)
            sentences = await self.provider.embed(flat) if flat else np.zeros((0, 384))
            CACHE.mkdir(exist_ok=True)
            np.savez(path, passages=passages, sentences=sentences)
        self.vectors = passages
        start = 0
        for index, group in enumerate(per_chunk):
            rows = sentences[start : start + len(group)]
            self.sentences[index] = from_blob(to_blob(group, rows)) if group else {}
            start += len(group)

    async def passages(self, question: str) -> list[Passage]:
        terms = analysis.query(question).terms
        ranking = rank(terms, self.candidates, len(self.candidates))
        if self.vectors is not None:
            (query,) = await self.provider.embed([question])
            cosines = self.vectors @ query
            by_meaning = sorted(
                ((self.chunks[i][0], float(cosines[i])) for i in range(len(self.chunks))),
                key=lambda item: -item[1],
            )
            ranking = fuse(Semantic(self.provider), ranking, by_meaning)
        where = {cid: i for i, (cid, *_) in enumerate(self.chunks)}
        out = []
        for number, (cid, score) in enumerate(ranking[:K], start=1):
            index = where[cid]
            _, name, page, text = self.chunks[index]
            out.append(Passage(number, cid, cid, name, page, text, score, self.sentences[index]))
        return out


async def fill(engine, body: Corpus, template) -> list[dict]:
    """Each field of `template` answered as the template-fill job answers it (the engine's
    brief answer over the job's PASSAGES_PER_FIELD passages, its value without markers, none
    for a "not found"), beside chat's answer to the same question (K passages): issue 53
    item 6, a field chat answers right is filled right."""
    from strongroom.templates.service import PASSAGES_PER_FIELD

    out = []
    for name, instruction, gold in template:
        question = Question.read(instruction)
        passages = await body.passages(instruction)
        said = {}
        for brief, given in ((False, passages), (True, passages[:PASSAGES_PER_FIELD])):
            text, cited, not_found = [], False, False
            async for event in engine.answer(question, given, brief=brief):
                if isinstance(event, Delta):
                    text.append(event.text)
                cited = cited or isinstance(event, Cite)
                not_found = not_found or isinstance(event, NotFound)
            said[brief] = (None if not_found or not cited else "".join(text), not_found)
        chat, chat_not_found = said[False]
        value = said[True][0]
        if value is not None:
            value = scoring.MARKER.sub("", value).strip() or None
        chat_right = chat_not_found if gold is None else bool(chat and scoring.holds(chat, gold))
        right = scoring.field_right(value, value is not None, gold)
        out.append({"name": name, "value": value, "right": right, "chat_right": chat_right})
    return out


def fill_report(filled: dict[str, list[dict]]) -> str:
    """Per template: fields filled right, chat's answers right, and the fields chat answers
    right that the fill does not."""
    lines = ["| template | fields right | answerable right | unanswerable left | chat right |"]
    lines.append("|---|---|---|---|---|")
    lagging = []
    for name, fields in filled.items():
        answerable = [f for f in fields if f["name"] not in _UNANSWERABLE[name]]
        left = [f for f in fields if f["name"] in _UNANSWERABLE[name]]
        lines.append(
            f"| {name} | {sum(f['right'] for f in fields)}/{len(fields)} | "
            f"{sum(f['right'] for f in answerable)}/{len(answerable)} | "
            f"{sum(f['right'] for f in left)}/{len(left)} | "
            f"{sum(f['chat_right'] for f in fields)}/{len(fields)} |"
        )
        lagging += [
            f"- {name} {f['name']}: filled {f['value']!r}"
            for f in fields
            if f["chat_right"] and not f["right"]
        ]
    return "\n".join([*lines, "", "Fields chat answers right and the fill does not:", *lagging])


_UNANSWERABLE: dict[str, set[str]] = {}


def template_of(name: str):
    template = (
        scoring.FAR_TEMPLATE
        if name == "far"
        else scoring.tuning_template(
            yaml.safe_load((HERE / "corpora" / name / "tuning.yaml").read_text())["questions"]
        )
    )
    _UNANSWERABLE[name] = {field for field, _, gold in template if gold is None}
    return template


async def run(args) -> tuple[list[scoring.Judged], list[dict] | None]:
    provider = (
        None if args.lexical else create_provider(Settings(embeddings_provider=args.provider))
    )
    remembered = RememberedEmbeddings(provider) if provider is not None else None
    engine = ExtractiveEngine(Meaning(remembered) if remembered is not None else None)
    if args.floor is not None and engine.meaning is not None:
        engine.meaning.floor = args.floor
    judged: list[scoring.Judged] = []
    features: list[dict] | None = [] if args.features else None
    margins: list[dict] | None = [] if getattr(args, "margins", None) else None
    args.filled = {}
    for name, files in tuning_sets().items():
        if args.sets and name not in args.sets:
            continue
        body = Corpus(name, remembered)
        if remembered is not None:
            await body.embed()
        if getattr(args, "fill", False):
            args.filled[name] = await fill(engine, body, template_of(name))
            continue
        for label, path in files:
            questions = yaml.safe_load(path.read_text())["questions"]
            for question in questions:
                passages = await body.passages(question["question"])
                answer, cites, not_found = [], [], False
                async for event in engine.answer(Question.read(question["question"]), passages):
                    if isinstance(event, Delta):
                        answer.append(event.text)
                    elif isinstance(event, Cite):
                        cites.append(event.passage.content)
                    elif isinstance(event, NotFound):
                        not_found = True
                result = scoring.judge(
                    question,
                    "".join(answer),
                    cites,
                    search=[p.content for p in passages[:10]],
                    answer_type="not_found" if not_found else "answered",
                    question_set=label,
                )
                judged.append(result)
                if features is not None:
                    row = await candidate_features(engine, question, passages)
                    features.append(row | {"set": label})
                if margins is not None:
                    row = await best_and_next(engine, question, passages)
                    margins.append(row | {"set": label, "answered": not not_found})
                if args.failures:
                    show_failure(question, result)
                if getattr(args, "said", False):
                    show_said(question, result)
    args.margin_rows = margins  # written by main
    return judged, features


async def best_and_next(engine, question: dict, passages: list[Passage]) -> dict:
    """The question's best answering sentence's score and the next one's (of another text),
    as `choose` ranks them, and whether the best holds the primary gold fact: what the
    standout margin (issue 53, item 4) is calibrated on."""
    asked = Question.read(question["question"])
    candidates = candidates_of(passages)
    closeness = await engine._closeness(asked.text, candidates) if engine.meaning else None
    everything, scored = scored_for(asked, passages, candidates, closeness)
    facts = question.get("answer") or []
    best = scored[0] if scored else None

    def after(items):
        return next(
            (s.score for s in items if best and s.sentence.text != best.sentence.text), None
        )

    return {
        "id": question["id"],
        "kind": question["kind"],
        "best": best.score if best else None,
        "next": after(scored),  # the next that may answer (holding a value of the kind asked)
        "next_any": after(everything),  # the next of every candidate
        "right": bool(best and facts and scoring.holds(best.sentence.text, facts[:1])),
    }


async def candidate_features(engine, question: dict, passages: list[Passage]) -> dict:
    """The question's candidate sentences as the engine scores them (its 30 best), each with
    whether it holds the primary gold fact: what bench/quality/calibrate.py fits on."""
    asked = Question.read(question["question"])
    candidates = candidates_of(passages)
    closeness = await engine._closeness(asked.text, candidates) if engine.meaning else None
    scored = ranked(asked.terms, passages, candidates=candidates, closeness=closeness)
    pairs = question_pairs(asked.terms)
    facts = question.get("answer") or []
    rows = []
    for item in scored[:30]:
        sentence = item.sentence
        text = " ".join(s.text for s in with_items([sentence], candidates))
        rows.append(
            {
                "words": item.words,
                "close": item.closeness,
                "phrase": near_pairs(pairs, sentence.sequence),
                "number": sentence.passage.number,
                "passage_score": sentence.passage.score,
                "value": asked.wanted is None
                or asked.wanted.held_by(sentence.text, besides=asked.text),
                "named_kind": bool(asked.wanted and asked.wanted.kinds),
                "wants": asked.wanted is not None,
                "right": bool(facts) and scoring.holds(text, facts[:1]),
                "text": sentence.text[:200],
            }
        )
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
    """A right answer as said (issue 53 item 5): its words, whether its first quoted
    sentence holds the fact, and the answer."""
    if not (result.answerable and result.asserted_right):
        return
    words = len(scoring.normalise(result.answer).split())
    first = "first" if result.first_fact else "LATER"
    print(f"=== {question['id']} {words}w {first}: {question['question']}")
    print(f"    gold: {question['answer']}")
    print(f"    answer: {result.answer}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lexical", action="store_true", help="no embeddings provider")
    parser.add_argument("--provider", default="minilm", choices=["minilm", "wordllama"])
    parser.add_argument("--failures", action="store_true")
    parser.add_argument("--features", help="write each question's decision features here")
    parser.add_argument("--floor", type=float, help="the answer floor to try (meaning on)")
    parser.add_argument(
        "--margins", help="write each question's best and next sentence scores here (issue 53)"
    )
    parser.add_argument(
        "--said", action="store_true", help="print each right answer, its words, fact first"
    )
    parser.add_argument("--sets", nargs="*", help="corpora to run (default: every one)")
    parser.add_argument(
        "--fill", action="store_true", help="fill each corpus's template instead (issue 53)"
    )
    args = parser.parse_args()
    judged, features = asyncio.run(run(args))
    if args.fill:
        print(fill_report(args.filled))
        return
    if features is not None:
        Path(args.features).write_text("".join(json.dumps(row) + "\n" for row in features))
    if args.margin_rows is not None:
        Path(args.margins).write_text("".join(json.dumps(r) + "\n" for r in args.margin_rows))
    print(scoring.outcome_table(judged))
    print(summary(judged))


def summary(judged: list[scoring.Judged]) -> str:
    """One line over every set: the three numbers the engine is tuned for."""
    answerable = [j for j in judged if j.answerable]
    unanswerable = [j for j in judged if not j.answerable]
    asserted = [j for j in judged if j.asserted]
    right = sum(j.asserted_right for j in answerable)
    wrong = sum(j.asserted_wrong for j in asserted)
    held_back = sum(j.not_found for j in unanswerable)
    right_ones = [j for j in answerable if j.asserted_right]
    words = (
        statistics.median(len(scoring.normalise(j.answer).split()) for j in right_ones)
        if right_ones
        else 0
    )
    first = sum(j.first_fact for j in right_ones)
    return (
        f"all: answerable right {right}/{len(answerable)} ({right / len(answerable):.0%}), "
        f"wrong of asserted {wrong}/{len(asserted)} ({wrong / max(1, len(asserted)):.0%}), "
        f"unanswerable not asserted {held_back}/{len(unanswerable)} "
        f"({held_back / max(1, len(unanswerable)):.0%}); right answers: median words "
        f"{words:g}, fact in the first sentence {first}/{len(right_ones)}"
    )


if __name__ == "__main__":
    main()
