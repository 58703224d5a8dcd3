"""The answer engine in process (no server), for tune.py: a corpus's passages as ingestion
reads them, ranked as hybrid search ranks them, and the engine's answer. (Its scratch command,
tune.py's predecessor, is retired: `git show fca3be6:bench/quality/inproc.py`.)"""

from __future__ import annotations

import hashlib
import json
import uuid

import numpy as np
import scoring

from strongroom.answers.base import Cite, Delta, NotFound, Passage
from strongroom.answers.extractive import sentence_texts
from strongroom.corpus.models import DocumentType as T
from strongroom.ingest.limits import IngestLimits
from strongroom.ingest.passages import read_passages
from strongroom.retrieval.search import Candidate, rank
from strongroom.retrieval.semantic import Semantic, fuse
from strongroom.retrieval.sentence_vectors import from_blob, to_blob
from strongroom.text import analysis

TYPES = {".md": T.MARKDOWN, ".txt": T.TEXT}
TYPES |= {f".{t}": t for t in (T.PDF, T.XLSX, T.HTML, T.CSV, T.DOCX)}
CACHE = scoring.HERE / ".tune-cache"


def corpus(name: str = scoring.FAR) -> list[tuple]:
    """The corpus's passages: (id, file name, page, text)."""
    out = []
    for path in sorted(scoring.corpus_dir(name).iterdir()):
        if path.suffix in TYPES:
            for chunk in read_passages(path, TYPES[path.suffix], limits=IngestLimits()).chunks:
                out.append((uuid.uuid4(), path.name, chunk.page_number, chunk.content))
    return out


async def said(engine, question, passages: list[Passage], **kwargs):
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
