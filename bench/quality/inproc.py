"""Scratch: the quality benchmark's chat rows in process (no server), for fast iteration.

Reads the corpus with read_passages, ranks with search.rank (BM25 over the one analysis),
optionally fused with MiniLM cosine (blend 0.4/0.6), answers with the extractive engine,
judges with scoring.judge. Not the benchmark of record (run.py is)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import scoring  # noqa: E402

from strongroom.answers.base import Cite, Delta, Passage  # noqa: E402
from strongroom.answers.extractive import ExtractiveEngine  # noqa: E402
from strongroom.corpus.models import DocumentType  # noqa: E402
from strongroom.ingest.limits import IngestLimits  # noqa: E402
from strongroom.ingest.passages import read_passages  # noqa: E402
from strongroom.retrieval.search import Candidate, rank  # noqa: E402
from strongroom.text import analysis  # noqa: E402
from strongroom.text.question import Question  # noqa: E402

TYPES = {
    ".pdf": DocumentType.PDF,
    ".xlsx": DocumentType.XLSX,
    ".md": DocumentType.MARKDOWN,
    ".txt": DocumentType.TEXT,
    ".html": DocumentType.HTML,
    ".csv": DocumentType.CSV,
    ".docx": DocumentType.DOCX,
}


def corpus(name: str = "far"):
    out = []
    folder = HERE / "corpus" if name == "far" else HERE / "corpora" / name / "corpus"
    for path in sorted(folder.iterdir()):
        if path.suffix not in TYPES:
            continue
        passages = read_passages(path, TYPES[path.suffix], limits=IngestLimits())
        for chunk in passages.chunks:
            out.append((uuid.uuid4(), path.name, chunk.page_number, chunk.content))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", default="far", help="far, or a folder of corpora/")
    parser.add_argument(
        "--questions",
        help="default: questions.yaml (far), else the corpus's tuning.yaml; never tune on a "
        "held-out file",
    )
    parser.add_argument("--hybrid", action="store_true")
    parser.add_argument("--failures", action="store_true")
    parser.add_argument("--meaning", action="store_true")
    parser.add_argument("--provider", default="minilm")
    parser.add_argument("--k", type=int, default=15)
    args = parser.parse_args()
    default = "questions.yaml" if args.corpus == "far" else f"corpora/{args.corpus}/tuning.yaml"
    questions = yaml.safe_load(Path(args.questions or HERE / default).read_text())["questions"]
    judged = asyncio.run(run(args, questions, corpus(args.corpus)))
    for row in scoring.chat_and_search_rows(judged):
        print(f"{row.measured:70} {row.value}")
    print(scoring.outcome_table(judged))


async def run(args, questions: list[dict], chunks) -> list[scoring.Judged]:
    """Each question judged; `args` as main's parser gives them."""
    candidates = [Candidate(cid, analysis.index_text(text).split()) for cid, _, _, text in chunks]
    by_id = {cid: (name, page, text) for cid, name, page, text in chunks}
    provider = None
    if args.hybrid:
        from strongroom.embeddings import create_provider
        from strongroom.settings import Settings

        provider = create_provider(Settings(embeddings_provider=args.provider))
        cache = HERE / f".inproc-vectors-{args.corpus}-{args.provider}.npy"
        if cache.exists() and np.load(cache).shape[0] == len(chunks):
            vectors = np.load(cache)
        else:
            vectors = await provider.embed([text for *_, text in chunks])
            np.save(cache, vectors)
    engine = ExtractiveEngine()
    if provider is not None and args.meaning:
        from strongroom.answers.meaning import Meaning
        from strongroom.embeddings.remembered import RememberedEmbeddings

        engine = ExtractiveEngine(Meaning(RememberedEmbeddings(provider)))
    judged = []
    for question in questions:
        terms = analysis.query(question["question"]).terms
        lexical = rank(terms, candidates, len(candidates))
        ranking = lexical
        if provider is not None:
            (q,) = await provider.embed([question["question"]])
            cos = vectors @ q
            vec = sorted(
                ((chunks[i][0], float(cos[i])) for i in range(len(chunks))), key=lambda x: -x[1]
            )
            from strongroom.retrieval.semantic import Semantic, fuse

            ranking = fuse(Semantic(provider), lexical, vec)
        top = ranking[: args.k]
        passages = [
            Passage(n, cid, cid, by_id[cid][0], by_id[cid][1], by_id[cid][2], score)
            for n, (cid, score) in enumerate(top, start=1)
        ]
        answer, cites = [], []
        async for event in engine.answer(Question.read(question["question"]), passages):
            if isinstance(event, Delta):
                answer.append(event.text)
            elif isinstance(event, Cite):
                cites.append(event.passage.content)
        result = scoring.judge(
            question, "".join(answer), cites, search=[p.content for p in passages[:10]]
        )
        judged.append(result)
        if args.failures and question["kind"] != "unanswerable" and not result.fact:
            print(f"--- {question['id']} {question['kind']}: {question['question']}")
            print(f"    gold rank {result.search_rank}; answer: {''.join(answer)[:300]}")
        if args.failures and question["kind"] == "unanswerable" and not result.abstained:
            print(f"--- {question['id']} UNANS: {question['question']}")
            print(f"    answer: {''.join(answer)[:300]}")
    return judged


if __name__ == "__main__":
    main()
