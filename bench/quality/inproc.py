"""The answer engine in process (no server): a corpus's passages as ingestion reads them,
ranked as search ranks them, answered and judged. Its command is the scratch that preceded
tune.py (one question file, vectors of passages only); run.py is the benchmark of record."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import uuid
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import scoring  # noqa: E402

from strongroom.answers.base import Cite, Delta, NotFound, Passage  # noqa: E402
from strongroom.answers.extractive import ExtractiveEngine, sentence_texts  # noqa: E402
from strongroom.answers.meaning import Meaning  # noqa: E402
from strongroom.corpus.models import DocumentType as T  # noqa: E402
from strongroom.embeddings import create_provider  # noqa: E402
from strongroom.embeddings.remembered import RememberedEmbeddings  # noqa: E402
from strongroom.ingest.limits import IngestLimits  # noqa: E402
from strongroom.ingest.passages import read_passages  # noqa: E402
from strongroom.retrieval.search import Candidate, rank  # noqa: E402
from strongroom.retrieval.semantic import Semantic, fuse  # noqa: E402
from strongroom.retrieval.sentence_vectors import from_blob, to_blob  # noqa: E402
from strongroom.settings import Settings  # noqa: E402
from strongroom.text import analysis  # noqa: E402
from strongroom.text.question import Question  # noqa: E402

TYPES = {".md": T.MARKDOWN, ".txt": T.TEXT}
TYPES |= {f".{t}": t for t in (T.PDF, T.XLSX, T.HTML, T.CSV, T.DOCX)}
CACHE = HERE / ".tune-cache"


def corpus(name: str = scoring.FAR) -> list[tuple]:
    """The corpus's passages: (id, file name, page, text)."""
    out = []
    for path in sorted(scoring.corpus_dir(name).iterdir()):
        if path.suffix in TYPES:
            for chunk in read_passages(path, TYPES[path.suffix], limits=IngestLimits()).chunks:
                out.append((uuid.uuid4(), path.name, chunk.page_number, chunk.content))
    return out


def provider_of(name: str):
    return create_provider(Settings(embeddings_provider=name))


async def said(engine, question: Question, passages: list[Passage], **kwargs):
    """The engine's answer: its text, the cited passages' text, and whether "not found"."""
    text, cites, not_found = [], [], False
    async for event in engine.answer(question, passages, **kwargs):
        if isinstance(event, Delta):
            text.append(event.text)
        elif isinstance(event, Cite):
            cites.append(event.passage.content)
        elif isinstance(event, NotFound):
            not_found = True
    return "".join(text), cites, not_found


class Corpus:
    """A corpus's passages, ranked by words, or hybrid once `vectors` are set."""

    def __init__(self, name: str, provider) -> None:
        self.name = name
        self.chunks = corpus(name)
        self.candidates = [
            Candidate(cid, analysis.index_text(text).split()) for cid, _, _, text in self.chunks
        ]
        self.provider = provider
        self.vectors = None
        self.sentences: list = [{} for _ in self.chunks]

    async def embed(self) -> None:
        """Passage and sentence vectors as ingestion makes them, cached in CACHE."""
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

    async def passages(self, question: str, k: int = 15) -> list[Passage]:
        ranking = rank(analysis.query(question).terms, self.candidates, len(self.candidates))
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
        for number, (cid, score) in enumerate(ranking[:k], start=1):
            index = where[cid]
            _, name, page, text = self.chunks[index]
            out.append(Passage(number, cid, cid, name, page, text, score, self.sentences[index]))
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="far", help="far, or a folder of corpora/")
    parser.add_argument("--questions", help="default: the corpus's tuning file; never held out")
    parser.add_argument("--hybrid", action="store_true")
    parser.add_argument("--failures", action="store_true")
    parser.add_argument("--meaning", action="store_true")
    parser.add_argument("--provider", default="minilm")
    parser.add_argument("--k", type=int, default=15)
    args = parser.parse_args()
    default = "questions.yaml" if args.corpus == "far" else f"corpora/{args.corpus}/tuning.yaml"
    questions = scoring.load_questions(Path(args.questions or HERE / default))
    judged = asyncio.run(run(args, questions))
    for row in scoring.chat_and_search_rows(judged):
        print(f"{row.measured:70} {row.value}")
    print(scoring.outcome_table(judged))


async def run(args, questions: list[dict]) -> list[scoring.Judged]:
    body = Corpus(args.corpus, None)
    engine = ExtractiveEngine()
    if args.hybrid:
        body.provider = provider = provider_of(args.provider)
        cache = HERE / f".inproc-vectors-{args.corpus}-{args.provider}.npy"
        if cache.exists() and np.load(cache).shape[0] == len(body.chunks):
            body.vectors = np.load(cache)
        else:
            body.vectors = await provider.embed([text for *_, text in body.chunks])
            np.save(cache, body.vectors)
        if args.meaning:
            engine = ExtractiveEngine(Meaning(RememberedEmbeddings(provider)))
    judged = []
    for question in questions:
        passages = await body.passages(question["question"], args.k)
        answer, cites, _ = await said(engine, Question.read(question["question"]), passages)
        result = scoring.judge(question, answer, cites, search=[p.content for p in passages[:10]])
        judged.append(result)
        if args.failures and question["kind"] != "unanswerable" and not result.fact:
            print(f"--- {question['id']} {question['kind']}: {question['question']}")
            print(f"    gold rank {result.search_rank}; answer: {answer[:300]}")
        if args.failures and question["kind"] == "unanswerable" and not result.abstained:
            print(f"--- {question['id']} UNANS: {question['question']}")
            print(f"    answer: {answer[:300]}")
    return judged


if __name__ == "__main__":
    main()
