"""Answer-quality benchmark (issue 15): how often chat, search, template fill and the
key-terms workflow are right on real public-domain construction documents, through the real
processes and the HTTP API. Prints the issue's table for bench/RESULTS.md.

The deployment is fresh (bench/stack.py): by default the embedded SQLite under `strongroom
dev` (one process, in-process job runners); `--backend postgresql` runs `strongroom serve`
and `strongroom worker` on PostgreSQL and Redis. Through the API, with a test key:

1. a project, and each document of the corpus uploaded to it, polled until `ready`. The
   corpus is `--corpus NAME`: `far` (the default: bench/quality/corpus/, FAR construction
   clauses as Markdown, text, HTML, CSV and DOCX), or one of bench/quality/corpora/<name>/
   (issue 27: OSHA 29 CFR 1926, FHWA 23 CFR 635, agency FAR supplements; PDF, DOCX, XLSX,
   HTML and Markdown); SOURCES.md says where each document comes from. `--corpus all` runs
   each corpus in turn, each on a fresh deployment;
2. for each question of the corpus's question files: for `far`, questions.yaml (or
   `--questions PATH`, which may be given more than once: tuning-open.yaml holds the rest
   of the tuning questions; heldout.yaml, heldout-open.yaml and heldout-open2.yaml are
   held-out sets that tuning never sees); for the other corpora, their tuning.yaml and
   heldout.yaml, reported apart: POST /api/v2/vault/search (k 10) and POST /api/v2/chat
   (the API's default k), both narrowed to the project. An answer is "not found" when the
   response's `answer_type` says so, or, from an API without `answer_type`, when its text
   says "not found in the documents"; any other answer is asserted, right or wrong;
3. the peer: the same passages, read from the database (document_chunks of the project),
   ranked with bm25s (BM25, English stop words, PyStemmer's Snowball stemmer) for the same
   questions;
4. a template fill of a DOCX the bench writes (fields with gold values, some that the
   documents do not answer: the FAR's own, or one over the corpus's tuning questions,
   scoring.tuning_template), polled until done; the filled DOCX downloaded to check that
   the unanswered placeholders are left as they were;
5. (`far` only) the key-terms workflow (wf_extract_key_terms) on a second project holding
   one paragraph with `Governing law: New South Wales.` inside it.

Scoring rules: bench/quality/scoring.py (unit-tested in tests/unit/bench). The benchmark
itself is not part of `make test`.

    make bench-quality    # every corpus; or: .venv/bin/python bench/quality/run.py --help
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import platform
import sqlite3
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import bm25s
import httpx
import psycopg
import Stemmer
import yaml
from docx import Document

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))

import scoring  # noqa: E402
from scanned import scanned_copy  # noqa: E402
from stack import (  # noqa: E402
    Deployment,
    api_server,
    deployment,
    issue_credential,
    worker_process,
)

from strongroom.runtime import Runtime  # noqa: E402

CORPUS = HERE / "corpus"
QUESTIONS = HERE / "questions.yaml"
CORPORA = HERE / "corpora"  # the corpora added by issue 27, one folder each
FAR = "far"  # the first corpus: bench/quality/corpus/ and the question files beside it
CONTENT_TYPES = {
    ".pdf": "application/pdf",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".md": "text/markdown",
    ".txt": "text/plain",
    ".html": "text/html",
    ".csv": "text/csv",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}
SEARCH_K = 10
TOP = 5


# Written for the benchmark (not from a public source): a contract-data paragraph with the
# governing law stated inside it, as the issue's example has it.
KEY_TERMS_TEXT = (
    "# Contract data\n\n"
    "The Contractor shall complete the works by the completion date stated in the schedule "
    "and shall give notice of any delay in writing. Governing law: New South Wales. "
    "Disputes are referred to the Contracting Officer before any other proceedings.\n"
)
KEY_TERMS_GOLD = "New South Wales"


def corpus_names() -> list[str]:
    return [FAR, *sorted(path.name for path in CORPORA.iterdir() if (path / "corpus").is_dir())]


def corpus_dir(name: str) -> Path:
    return CORPUS if name == FAR else CORPORA / name / "corpus"


def default_questions(name: str) -> list[Path]:
    """The question files a corpus is asked by default: for `far`, questions.yaml (its other
    files by `--questions`); for the others, the tuning and the held-out half."""
    if name == FAR:
        return [QUESTIONS]
    return [CORPORA / name / "tuning.yaml", CORPORA / name / "heldout.yaml"]


@dataclass
class Settings:
    backend: str
    timeout: float
    corpus: str = FAR
    questions: list[Path] | None = None  # None: the corpus's default_questions
    embeddings: str | None = None  # a provider for the vector and hybrid columns (issue 16)
    api_embeddings: str | None = None  # the provider the API itself runs with (issue 16)
    chat_openai: str | None = None  # an OpenAI-compatible endpoint chat answers with
    chat_openai_model: str | None = None
    chat_openai_max_tokens: int | None = None
    scanned: bool = False  # every document uploaded as a scanned copy (issue 51)


# What the API answers when its answer engine's model failed (it broke off, answered nothing,
# or did not answer in time), for chat and, as a job's error, for a template fill.
ENGINE_FAILURES = ("upstream_error", "upstream_timeout")


def engine_failed(status: int, body: dict) -> bool:
    """Whether a chat response (502/504) or a failed job's `error` says the model failed."""
    return status in (502, 504) and (body or {}).get("code") in ENGINE_FAILURES


class Api:
    """The few calls the benchmark makes, with the key, and failing loudly."""

    def __init__(self, client: httpx.AsyncClient, key: str) -> None:
        self.client = client
        self.headers = {"Authorization": f"Bearer {key}"}

    async def call(self, method: str, path: str, expect: int, **kwargs) -> httpx.Response:
        response = await self.client.request(method, path, headers=self.headers, **kwargs)
        if response.status_code != expect:
            raise RuntimeError(
                f"{method} {path}: {response.status_code}, expected {expect}: {response.text[:500]}"
            )
        return response

    async def project(self, name: str) -> str:
        body = {"name": name, "project_type": "institutional"}
        response = await self.call("POST", "/api/v2/vault/projects", 201, json=body)
        return response.json()["id"]

    async def upload(self, project: str, name: str, content: bytes, content_type: str) -> str:
        response = await self.call(
            "POST", "/api/v2/vault/documents", 202,
            data={"project_id": project}, files={"file": (name, content, content_type)},
        )  # fmt: skip
        return response.json()["id"]

    async def until(self, path: str, done: tuple[str, ...], seconds: float) -> dict:
        """The resource once its `status` is one of `done`, and for a document once its
        vectors are made too (`meaning` no longer `pending`, issue 50): the questions are
        asked of documents searched by meaning as well as by words."""
        deadline = time.monotonic() + seconds
        while True:
            body = (await self.call("GET", path, 200)).json()
            if body.get("meaning") == "failed":
                raise RuntimeError(f"{path}: its vectors failed (meaning failed)")
            if body["status"] in done and body.get("meaning") != "pending":
                return body
            if time.monotonic() > deadline:
                raise RuntimeError(f"{path} still {body['status']} after {seconds:.0f} s")
            await asyncio.sleep(0.5)

    async def search(self, project: str, query: str) -> list[str]:
        body = {"query": query, "k": SEARCH_K, "project_ids": [project]}
        response = await self.call("POST", "/api/v2/vault/search", 200, json=body)
        return [hit["content"] for hit in response.json()["data"]]

    async def chat(self, project: str, query: str) -> dict:
        """The answer; a model's failure (`engine_failed`) is judged as an answer without the
        fact, not the end of the run."""
        body = {"query": query, "project_ids": [project]}
        response = await self.client.post("/api/v2/chat", headers=self.headers, json=body)
        failed = response.status_code in (502, 504) and engine_failed(
            response.status_code, response.json()
        )
        if failed:
            code = response.json()["code"]
            return {"answer": f"[the answer engine failed: {code}]", "citations": []}
        # `answer_type` (issue 27) is read by scoring when present: "answered" | "not_found"
        if response.status_code != 200:
            raise RuntimeError(f"POST /api/v2/chat: {response.status_code}: {response.text[:500]}")
        return response.json()


# Corpus, questions, template --------------------------------------------------------------


def corpus_files(name: str = FAR) -> list[Path]:
    return sorted(p for p in corpus_dir(name).iterdir() if p.suffix in CONTENT_TYPES)


def load_questions(path: Path = QUESTIONS) -> list[dict]:
    return yaml.safe_load(path.read_text())["questions"]


def question_set_name(path: Path) -> str:
    """How a question file is named in the report: its name, with its corpus's folder."""
    path = path.resolve()
    return path.name if path.parent == HERE.resolve() else f"{path.parent.name}/{path.name}"


def load_question_sets(paths: list[Path]) -> list[tuple[str, dict]]:
    """Every question of the files, each with the name of its file (its set)."""
    return [(question_set_name(path), q) for path in paths for q in load_questions(path)]


def template_of(name: str) -> list[tuple[str, str, list[str] | None]]:
    """The template a corpus is filled with: the FAR's own; for the others, one over their
    tuning questions (scoring.tuning_template, issue 53 item 6)."""
    if name == FAR:
        return scoring.FAR_TEMPLATE
    return scoring.tuning_template(load_questions(CORPORA / name / "tuning.yaml"))


def template_docx(fields: list[tuple[str, str, list[str] | None]]) -> bytes:
    """A Word template with one `{{ name | instruction }}` placeholder per field."""
    document = Document()
    document.add_heading("Contract summary", level=1)
    table = document.add_table(rows=0, cols=2)
    for name, instruction, _ in fields:
        row = table.add_row().cells
        row[0].text = name.replace("_", " ").capitalize()
        row[1].text = f"{{{{ {name} | {instruction} }}}}"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def docx_text(content: bytes) -> str:
    document = Document(io.BytesIO(content))
    cells = [cell.text for table in document.tables for row in table.rows for cell in row.cells]
    return "\n".join([*(p.text for p in document.paragraphs), *cells])


# The peer: bm25s over the same passages ---------------------------------------------------


def stored_passages(deployed: Deployment) -> list[str]:
    """Every passage in the database (the benchmark's tenant has only the corpus's project
    when this is read)."""
    query = "SELECT content FROM document_chunks ORDER BY document_id, ordinal"
    if deployed.is_postgres:
        with psycopg.connect(deployed.admin_url) as connection:
            return [row[0] for row in connection.execute(query)]
    path = deployed.settings.data_dir / "strongroom.db"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        return [row[0] for row in connection.execute(query)]


class Peer:
    """bm25s (BM25, Lucene's variant as bm25s defaults) with English stop words and the
    Snowball stemmer of PyStemmer, over the passages."""

    def __init__(self, passages: list[str]) -> None:
        self.passages = passages
        self.stemmer = Stemmer.Stemmer("english")
        self.retriever = bm25s.BM25()
        tokens = bm25s.tokenize(passages, stopwords="en", stemmer=self.stemmer, show_progress=False)
        self.retriever.index(tokens, show_progress=False)

    def rank(self, query: str, k: int = SEARCH_K) -> list[str]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        k = min(k, len(self.passages))
        ids, scores = self.retriever.retrieve(tokens, k=k, show_progress=False)
        return [self.passages[i] for i, s in zip(ids[0], scores[0], strict=True) if s > 0]


# The run ----------------------------------------------------------------------------------


async def credential(deployed: Deployment):
    runtime = Runtime.create(deployed.settings)
    try:
        return await issue_credential(runtime, "bench-quality")
    finally:
        await runtime.close()


def openai_engine_environment(settings: Settings) -> dict[str, str]:
    """The environment that makes the API (and the worker: template fills) answer with the
    `openai` engine at `settings.chat_openai`; its key, if it needs one, from
    BENCH_CHAT_OPENAI_API_KEY (a key on the command line would show in the process list)."""
    if not settings.chat_openai:
        return {}
    env = {
        "STRONGROOM_CHAT_ENGINE": "openai",
        "STRONGROOM_CHAT_OPENAI_BASE_URL": settings.chat_openai,
        "STRONGROOM_CHAT_OPENAI_MODEL": settings.chat_openai_model or "default",
        "STRONGROOM_CHAT_OPENAI_TIMEOUT_SECONDS": "120",
    }
    if settings.chat_openai_max_tokens:
        env["STRONGROOM_CHAT_OPENAI_MAX_TOKENS"] = str(settings.chat_openai_max_tokens)
    key = os.environ.get("BENCH_CHAT_OPENAI_API_KEY")
    if key:
        env["STRONGROOM_CHAT_OPENAI_API_KEY"] = key
    return env


async def measure(deployed: Deployment, settings: Settings, progress) -> dict:
    cred = await credential(deployed)
    extra = {}
    if settings.api_embeddings:  # the API searches (and chat retrieves) hybrid, on SQLite
        extra["STRONGROOM_EMBEDDINGS_PROVIDER"] = settings.api_embeddings
    extra |= openai_engine_environment(settings)
    async with api_server(deployed, **extra) as base:
        if deployed.is_postgres:
            async with worker_process(deployed, concurrency=2, **extra):
                return await _measure(base, cred.key, deployed, settings, progress)
        return await _measure(base, cred.key, deployed, settings, progress)


async def _measure(base: str, key: str, deployed: Deployment, settings: Settings, progress):
    asked = load_question_sets(settings.questions or default_questions(settings.corpus))
    questions = [question for _, question in asked]
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        api = Api(client, key)
        project = await api.project(f"bench-quality corpus {settings.corpus}")
        started = time.monotonic()
        documents = {}
        for path in corpus_files(settings.corpus):
            content, content_type = path.read_bytes(), CONTENT_TYPES[path.suffix]
            if settings.scanned:  # issue 51: every document as an image-only PDF
                content, content_type = scanned_copy(path), "application/pdf"
            documents[path.name] = await api.upload(project, path.name, content, content_type)
        ingested = {}
        for name, document in documents.items():
            body = await api.until(
                f"/api/v2/vault/documents/{document}", ("ready", "failed"), settings.timeout
            )
            if body["status"] != "ready":
                raise RuntimeError(f"{name} failed to ingest: {body['error']}")
            ingested[name] = body["document_type"]
        progress(f"{len(documents)} documents ready, meaning complete, in "
                 f"{time.monotonic() - started:.1f} s")  # fmt: skip

        passages = stored_passages(deployed)
        peer = Peer(passages)
        progress(f"{len(passages)} passages; asking {len(questions)} questions")

        judged = []
        for question_set, question in asked:
            search = await api.search(project, question["question"])
            answer = await api.chat(project, question["question"])
            cited = [c["content"] for c in answer["citations"]]
            judged.append(
                scoring.judge(
                    question,
                    answer["answer"],
                    cited,
                    search,
                    peer.rank(question["question"]),
                    answer_type=answer.get("answer_type"),
                    question_set=question_set,
                )
            )

        if settings.embeddings:
            await semantic_ranks(
                deployed, settings.embeddings, project, questions, judged, progress
            )

        fields = await fill_template(api, project, settings)
        far = settings.corpus == FAR  # key terms are about the FAR clauses
        key_terms = await run_key_terms(api, settings) if far else None
    return {
        "corpus": settings.corpus,
        "embeddings": settings.embeddings,
        "api_embeddings": settings.api_embeddings,
        "engine": (
            f"openai ({settings.chat_openai_model or 'default'} at {settings.chat_openai})"
            if settings.chat_openai
            else "extractive"
        ),
        "documents": ingested,
        "passages": len(passages),
        "judged": judged,
        "fields": fields,
        "key_terms": key_terms,
    }


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def semantic_ranks(
    deployed: Deployment, provider_name: str, project: str, questions, judged, progress
) -> None:
    """The vector-only and hybrid rankings (issue 16), in this process over the deployment's
    database: the project's passages embedded by `reembed` (the code the CLI and job run),
    then each question searched by `search_chunks` with the provider, as the API would with
    STRONGROOM_EMBEDDINGS_PROVIDER set. Notes the embedding time and the memory it took."""
    from strongroom.retrieval.filters import Filters
    from strongroom.retrieval.search import search_chunks
    from strongroom.retrieval.semantic import Semantic
    from strongroom.tenants.partition import DataPartition
    from strongroom.vault.models import Project
    from strongroom.vault.reembedding import reembed

    settings = deployed.settings.model_copy(update={"embeddings_provider": provider_name})
    runtime = Runtime.create(settings)
    before = rss_mib()
    try:
        started = time.monotonic()
        embedded = await reembed(runtime)
        seconds = time.monotonic() - started
        progress(
            f"{embedded} passages embedded by {runtime.embeddings.model} in {seconds:.1f} s "
            f"({embedded / seconds:.1f}/s); RSS {before:.0f} -> {rss_mib():.0f} MiB"
        )
        provider = runtime.embeddings
        searches = {
            "vector_rank": Semantic(provider, lexical_weight=0, vector_weight=1),
            "hybrid_rank": Semantic.configured(provider, settings),
            "hybrid_rrf_rank": Semantic.configured(
                provider, settings.model_copy(update={"search_fusion": "rrf"})
            ),
        }
        timings = []
        async with runtime.sessions() as session:
            partition = DataPartition.of(await session.get(Project, uuid.UUID(project)))
            filters = Filters([uuid.UUID(project)])
            for question, item in zip(questions, judged, strict=True):
                for attribute, semantic in searches.items():
                    started = time.perf_counter()
                    hits = await search_chunks(
                        session, partition, question["question"], k=SEARCH_K,
                        filters=filters, semantic=semantic,
                    )  # fmt: skip
                    timings.append(time.perf_counter() - started)
                    contents = [hit.chunk.content for hit in hits]
                    setattr(item, attribute, scoring.gold_rank(contents, question.get("passage")))
        timings.sort()
        progress(
            f"hybrid search_chunks (question embedded each time): p50 "
            f"{timings[len(timings) // 2] * 1e3:.1f} ms, p95 "
            f"{timings[int(len(timings) * 0.95)] * 1e3:.1f} ms; RSS now {rss_mib():.0f} MiB"
        )
    finally:
        await runtime.close()


async def fill_template(api: Api, project: str, settings: Settings) -> list[dict]:
    template = template_of(settings.corpus)
    response = await api.call(
        "POST", "/api/v2/templates/fill", 202,
        data={"project_id": project},
        files={"file": ("contract-summary.docx", template_docx(template), CONTENT_TYPES[".docx"])},
    )  # fmt: skip
    job = response.json()["job_id"]
    body = await api.until(
        f"/api/v2/templates/fill/{job}", ("succeeded", "failed"), settings.timeout
    )
    error = body["error"] or {}
    if body["status"] == "failed" and engine_failed(error.get("status", 0), error):
        # a model that kept failing: every field is judged unfilled
        filled, by_name = "", {}
    elif body["status"] != "succeeded":
        raise RuntimeError(f"template fill failed: {body['error']}")
    else:
        result = await api.call("GET", f"/api/v2/templates/fill/{job}/result", 200)
        filled = docx_text(result.content)
        by_name = {f["name"]: f for f in body["fields"]}
    out = []
    for name, instruction, gold in template:
        field = by_name.get(name, {"value": None, "found": False})
        placeholder_kept = f"{{{{ {name} | {instruction} }}}}" in filled
        out.append(
            {
                "name": name,
                "gold": gold,
                "value": field["value"],
                "found": field["found"],
                "placeholder_kept": placeholder_kept,
                "right": scoring.field_right(
                    field["value"], field["found"], gold, placeholder_kept
                ),
            }
        )
    return out


async def run_key_terms(api: Api, settings: Settings) -> dict:
    project = await api.project("Key terms")
    document = await api.upload(
        project, "contract-data.md", KEY_TERMS_TEXT.encode(), CONTENT_TYPES[".md"]
    )
    await api.until(f"/api/v2/vault/documents/{document}", ("ready", "failed"), settings.timeout)
    response = await api.call(
        "POST", "/api/v2/workflows/wf_extract_key_terms/runs", 202, json={"project_id": project}
    )
    run = response.json()["run_id"]
    body = await api.until(
        f"/api/v2/workflows/runs/{run}", ("succeeded", "failed"), settings.timeout
    )
    laws = (body.get("output") or {}).get("governing_law", [])
    found = [law["jurisdiction"] for law in laws]
    return {"status": body["status"], "jurisdictions": found, "found": KEY_TERMS_GOLD in found}


# Output -----------------------------------------------------------------------------------


def rows(result: dict) -> list[scoring.Row]:
    out = scoring.chat_and_search_rows(result["judged"], top=TOP)
    if result["fields"] is not None:
        out.append(scoring.template_row(result["fields"]))
    key_terms = result["key_terms"]
    if key_terms is None:
        return out
    out.append(
        scoring.Row(
            f"key-terms workflow finds `Governing law: {KEY_TERMS_GOLD}.` inside a paragraph",
            "yes" if key_terms["found"] else f"no (found: {key_terms['jurisdictions'] or 'none'})",
            goal="yes",
        )
    )
    return out


def machine(backend: str) -> str:
    def run(*command: str) -> str:
        return subprocess.run(command, capture_output=True, text=True).stdout.strip()

    root = HERE.parents[1]
    commit = run("git", "-C", str(root), "rev-parse", "--short", "HEAD")
    dirty = run("git", "-C", str(root), "status", "--porcelain", "strongroom")
    return (
        f"{run('date', '-u')}; {platform.node()}, {os.cpu_count()} cores, load average "
        f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}; Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}; backend {backend}; commit {commit}"
        + (f" (+ uncommitted changes to {len(dirty.splitlines())} files under strongroom/)"
           if dirty else "")
    )  # fmt: skip


def report(result: dict, backend: str) -> str:
    judged = result["judged"]
    kinds = {}
    for item in judged:
        kinds[item.kind] = kinds.get(item.kind, 0) + 1
    corpus = ", ".join(f"{name} ({kind})" for name, kind in result["documents"].items())
    return "\n".join(
        [
            machine(backend),
            "",
            f"Corpus `{result['corpus']}`: {len(result['documents'])} documents, "
            f"{result['passages']} passages: {corpus}.",
            f"Questions: {len(judged)} ("
            + ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
            + f"). Search k {SEARCH_K}; chat with the API's default k; answer engine "
            + f"{result['engine']}.",
            "",
            scoring.markdown(rows(result)),
            "",
            "Asserted right / wrong / not found, per question set and kind (issue 27):",
            "",
            scoring.outcome_table(judged, top=TOP),
            *(
                [
                    "",
                    f"Search by ranking (embeddings: {result['embeddings']}):",
                    "",
                    scoring.search_columns(
                        judged,
                        top=TOP,
                        api=f"the API (embeddings: {result['api_embeddings'] or 'none'})",
                    ),
                ]
                if result["embeddings"]
                else []
            ),
        ]
    )


def failures(result: dict) -> str:
    """What went wrong, question by question, for whoever tunes the engine."""
    lines = []
    for j in result["judged"]:
        wrong = []
        if j.kind == "unanswerable":
            if j.asserted:
                wrong.append("asserted an answer")
        else:
            wrong += ["not found"] if j.not_found else [] if j.fact else ["asserted wrong"]
            wrong += [] if j.first_fact else ["first sentence"]
            wrong += [] if j.cited_gold else ["citation"]
            wrong += [] if (j.search_rank or 99) <= TOP else [f"search rank {j.search_rank}"]
        if wrong:
            answer = j.answer.replace("\n", " ")
            lines.append(
                f"- {j.question_set} {j.id} ({j.kind}): {', '.join(wrong)}: {answer[:240]}"
            )
    for field in result["fields"] or []:
        if not field["right"]:
            lines.append(
                f"- template {field['name']}: value {field['value']!r} (found {field['found']},"
                f" placeholder kept {field['placeholder_kept']})"
            )
    return "\n".join(lines)


def to_json(result: dict, backend: str) -> dict:
    return {
        "machine": machine(backend),
        "corpus": result["corpus"],
        "documents": result["documents"],
        "passages": result["passages"],
        "rows": [asdict(row) for row in rows(result)],
        "questions": [asdict(j) for j in result["judged"]],
        "template_fields": result["fields"],
        "key_terms": result["key_terms"],
        "engine": result["engine"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Answer quality on real public-domain construction documents (issue 15): "
        "chat, search (with bm25s as a peer), template fill and key terms, through the API."
    )
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="sqlite: the embedded default (`strongroom dev`); postgresql: `strongroom serve` "
        "and `strongroom worker` with Redis (default: sqlite)",
    )
    parser.add_argument(
        "--corpus",
        choices=[*corpus_names(), "all"],
        default=FAR,
        help="the documents and their questions: far (bench/quality/corpus/, the default), "
        "a corpus of bench/quality/corpora/ (asked its tuning.yaml and heldout.yaml, "
        "reported apart), or all of them in turn (each on a fresh deployment)",
    )
    parser.add_argument(
        "--json",
        metavar="PATH",
        help="also write every result to PATH as JSON (with --corpus all: PATH with the "
        "corpus's name before the suffix, one file per corpus)",
    )
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds to wait for each job (default 300)"
    )
    parser.add_argument(
        "--questions",
        type=Path,
        action="append",
        metavar="PATH",
        help="a question file to ask (may be given more than once; each is reported as a "
        "set of its own). Default: the corpus's own (far: bench/quality/questions.yaml, "
        "which with tuning-open.yaml holds the questions the engine's thresholds are chosen "
        "on; heldout.yaml, heldout-open.yaml and heldout-open2.yaml are held-out sets that "
        "tuning never sees; the other corpora: their tuning.yaml and heldout.yaml)",
    )
    parser.add_argument(
        "--embeddings",
        choices=("minilm", "wordllama", "openai"),
        help="also rank by meaning and hybrid with this embeddings provider (issue 16; "
        "`openai` reads STRONGROOM_EMBEDDINGS_OPENAI_* from the environment)",
    )
    parser.add_argument(
        "--api-embeddings",
        choices=("minilm", "wordllama"),
        help="run the API itself with this embeddings provider (on the default sqlite "
        "backend), so that its search and chat's retrieval are hybrid (issue 16)",
    )
    parser.add_argument(
        "--chat-openai",
        metavar="BASE_URL",
        help="answer chat and template fills with the `openai` engine at this "
        "OpenAI-compatible endpoint (e.g. http://127.0.0.1:8000/v1; its key, if any, from "
        "BENCH_CHAT_OPENAI_API_KEY) instead of the extractive engine",
    )
    parser.add_argument(
        "--chat-openai-model", metavar="NAME", help="the model name sent to --chat-openai"
    )
    parser.add_argument(
        "--chat-openai-max-tokens",
        type=int,
        metavar="N",
        help="the `max_tokens` of each answer (default: the API's, 1024)",
    )
    parser.add_argument(
        "--failures", action="store_true", help="also list each question that was not right"
    )
    parser.add_argument(
        "--scanned",
        action="store_true",
        help="upload each document as a scanned copy, an image-only PDF read by OCR "
        "(bench/quality/scanned.py, issue 51)",
    )
    args = parser.parse_args()
    names = corpus_names() if args.corpus == "all" else [args.corpus]
    if args.questions and len(names) > 1:
        parser.error("--questions names one corpus's files: give it with one --corpus")
    for name in names:
        json_path = args.json
        if json_path and len(names) > 1:
            path = Path(json_path)
            json_path = str(path.with_name(f"{path.stem}-{name}{path.suffix}"))
        run(args, name, json_path)


def run(args: argparse.Namespace, corpus: str, json_path: str | None) -> None:
    """One corpus: a fresh deployment, its documents and questions, the report printed."""
    settings = Settings(
        backend=args.backend,
        timeout=args.timeout,
        corpus=corpus,
        questions=args.questions,
        embeddings=args.embeddings,
        api_embeddings=args.api_embeddings,
        chat_openai=args.chat_openai,
        chat_openai_model=args.chat_openai_model,
        chat_openai_max_tokens=args.chat_openai_max_tokens,
        scanned=args.scanned,
    )

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    label = f"quality{uuid.uuid4().hex[:4]}"
    with deployment(args.backend, label) as deployed:
        result = asyncio.run(measure(deployed, settings, progress))
    print(report(result, args.backend))
    if args.failures:
        print("\nNot right:\n" + (failures(result) or "(none)"))
    if json_path:
        Path(json_path).write_text(json.dumps(to_json(result, args.backend), indent=2) + "\n")


if __name__ == "__main__":
    main()
