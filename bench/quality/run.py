"""Answer-quality benchmark (issue 15): chat, search (bm25s over the same passages as a
peer), template fill and, for the FAR, the key-terms workflow, on real public-domain
construction documents (SOURCES.md), through the processes and the HTTP API of a fresh
deployment (bench/stack.py; `--backend postgresql`: serve and worker on PostgreSQL and Redis).
Scoring: scoring.py. Prints the tables for bench/RESULTS.md.

    make bench-quality    # every corpus; or: .venv/bin/python bench/quality/run.py --help
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import functools
import io
import json
import os
import platform
import sqlite3
import subprocess
import sys
import time
import uuid
from dataclasses import asdict
from pathlib import Path

import bm25s
import httpx
import psycopg
import Stemmer
from docx import Document

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))

import scoring  # noqa: E402
from inproc import TYPES  # noqa: E402
from scanned import scanned_copy  # noqa: E402
from scoring import FAR, corpus_names  # noqa: E402
from stack import Deployment, api_server, credentials, deployment, rss_mib, worker_process  # noqa: E402

from strongroom.runtime import Runtime  # noqa: E402

CONTENT_TYPES = {suffix: kind.content_type.split(";")[0] for suffix, kind in TYPES.items()}
SEARCH_K = 10
TOP = 5
# Written for the benchmark: a contract-data paragraph with the governing law inside it.
KEY_TERMS_TEXT = (
    "# Contract data\n\n"
    "The Contractor shall complete the works by the completion date stated in the schedule "
    "and shall give notice of any delay in writing. Governing law: New South Wales. "
    "Disputes are referred to the Contracting Officer before any other proceedings.\n"
)
KEY_TERMS_GOLD = "New South Wales"
ENGINE_FAILURES = ("upstream_error", "upstream_timeout")
DOCUMENTS = "/api/v2/vault/documents"
progress = functools.partial(print, file=sys.stderr, flush=True)


def engine_failed(status: int, body: dict) -> bool:
    """Whether a chat response or a failed job's `error` says the answer engine's model
    failed (broke off, answered nothing, or not in time)."""
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
        return (await self.call("POST", "/api/v2/vault/projects", 201, json=body)).json()["id"]

    async def upload(self, project: str, name: str, content: bytes, content_type: str) -> str:
        response = await self.call(
            "POST", DOCUMENTS, 202,
            data={"project_id": project}, files={"file": (name, content, content_type)},
        )  # fmt: skip
        return response.json()["id"]

    async def until(self, path: str, done: tuple[str, ...], seconds: float) -> dict:
        """The resource once its `status` is one of `done` and, for a document, its vectors
        are made (`meaning` no longer `pending`, issue 50)."""
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
        """The answer; a model's failure is judged as an answer without the fact."""
        body = {"query": query, "project_ids": [project]}
        response = await self.client.post("/api/v2/chat", headers=self.headers, json=body)
        if response.status_code in (502, 504) and engine_failed(502, response.json()):
            failure = f"[the answer engine failed: {response.json()['code']}]"
            return {"answer": failure, "citations": []}
        if response.status_code != 200:
            raise RuntimeError(f"POST /api/v2/chat: {response.status_code}: {response.text[:500]}")
        return response.json()


def questions_of(settings) -> list[tuple[str, dict]]:
    """Each question with its file's name (with its corpus's folder): `--questions`, or far's
    questions.yaml, or another corpus's tuning and held-out halves."""
    halves = [scoring.CORPORA / settings.corpus / f"{half}.yaml" for half in ("tuning", "heldout")]
    out, far = [], [HERE / "questions.yaml"]
    for path in settings.questions or (far if settings.corpus == FAR else halves):
        path = path.resolve()
        name = path.name if path.parent == HERE.resolve() else f"{path.parent.name}/{path.name}"
        out += [(name, question) for question in scoring.load_questions(path)]
    return out


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


def stored_passages(deployed: Deployment) -> list[str]:
    """Every passage in the database (only the corpus's project's, when this is read)."""
    query = "SELECT content FROM document_chunks ORDER BY document_id, ordinal"
    if deployed.is_postgres:
        with psycopg.connect(deployed.admin_url) as connection:
            return [row[0] for row in connection.execute(query)]
    path = deployed.settings.data_dir / "strongroom.db"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        return [row[0] for row in connection.execute(query)]


class Peer:
    """bm25s (its BM25 defaults), English stop words, PyStemmer's Snowball stemmer."""

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


def openai_engine_environment(settings) -> dict[str, str]:
    """The API's (and worker's) environment for the `openai` engine at `--chat-openai`; its
    key from BENCH_CHAT_OPENAI_API_KEY, not the command line (the process list shows it)."""
    if not settings.chat_openai:
        return {}
    env = {
        "STRONGROOM_CHAT_ENGINE": "openai",
        "STRONGROOM_CHAT_OPENAI_BASE_URL": settings.chat_openai,
        "STRONGROOM_CHAT_OPENAI_MODEL": settings.chat_openai_model or "default",
        "STRONGROOM_CHAT_OPENAI_TIMEOUT_SECONDS": "120",
        "STRONGROOM_CHAT_OPENAI_MAX_TOKENS": str(settings.chat_openai_max_tokens or ""),
        "STRONGROOM_CHAT_OPENAI_API_KEY": os.environ.get("BENCH_CHAT_OPENAI_API_KEY"),
    }
    return {name: value for name, value in env.items() if value}


async def measure(deployed: Deployment, settings) -> dict:
    (cred,) = await credentials(deployed, "bench-quality")
    extra = {}
    if settings.api_embeddings:  # the API searches (and chat retrieves) hybrid, on SQLite
        extra["STRONGROOM_EMBEDDINGS_PROVIDER"] = settings.api_embeddings
    extra |= openai_engine_environment(settings)
    asked = questions_of(settings)
    questions = [question for _, question in asked]
    async with api_server(deployed, **extra) as base, contextlib.AsyncExitStack() as stack:
        if deployed.is_postgres:
            await stack.enter_async_context(worker_process(deployed, concurrency=2, **extra))
        client = await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=120))
        api = Api(client, cred.key)
        project = await api.project(f"bench-quality corpus {settings.corpus}")
        started = time.monotonic()
        documents = {}
        for path in sorted(scoring.corpus_dir(settings.corpus).iterdir()):
            if path.suffix not in CONTENT_TYPES:
                continue
            content, content_type = path.read_bytes(), CONTENT_TYPES[path.suffix]
            if settings.scanned:  # issue 51: every document as an image-only PDF
                content, content_type = scanned_copy(path), "application/pdf"
            documents[path.name] = await api.upload(project, path.name, content, content_type)
        ingested = {}
        for name, document in documents.items():
            body = await api.until(f"{DOCUMENTS}/{document}", ("ready", "failed"), settings.timeout)
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
            judged.append(scoring.judge(
                question, answer["answer"], cited, search, peer.rank(question["question"]),
                answer_type=answer.get("answer_type"), question_set=question_set,
            ))  # fmt: skip
        if settings.embeddings:
            await semantic_ranks(deployed, settings.embeddings, project, questions, judged)
        fields = await fill_template(api, project, settings)
        far = settings.corpus == FAR  # key terms are about the FAR clauses
        key_terms = await run_key_terms(api, settings) if far else None
    model = f"openai ({settings.chat_openai_model or 'default'} at {settings.chat_openai})"
    return {
        "corpus": settings.corpus, "embeddings": settings.embeddings,
        "api_embeddings": settings.api_embeddings,
        "engine": model if settings.chat_openai else "extractive",
        "documents": ingested, "passages": len(passages), "judged": judged, "fields": fields,
        "key_terms": key_terms,
    }  # fmt: skip


async def semantic_ranks(deployed: Deployment, provider_name: str, project: str, questions, judged):
    """`--embeddings` (issue 16): the project's passages embedded by `reembed`, then each
    question ranked by `search_chunks` by meaning only and hybrid, in this process."""
    from strongroom.retrieval.filters import Filters
    from strongroom.retrieval.search import search_chunks
    from strongroom.retrieval.semantic import Semantic
    from strongroom.tenants.partition import DataPartition
    from strongroom.vault.models import Project
    from strongroom.vault.reembedding import reembed

    settings = deployed.settings.model_copy(update={"embeddings_provider": provider_name})
    runtime = Runtime.create(settings)
    before = rss_mib(os.getpid())
    try:
        started = time.monotonic()
        embedded = await reembed(runtime)
        seconds = time.monotonic() - started
        progress(
            f"{embedded} passages embedded by {runtime.embeddings.model} in {seconds:.1f} s "
            f"({embedded / seconds:.1f}/s); RSS {before:.0f} -> {rss_mib(os.getpid()):.0f} MiB"
        )
        provider = runtime.embeddings
        rrf = settings.model_copy(update={"search_fusion": "rrf"})
        searches = {
            "vector_rank": Semantic(provider, lexical_weight=0, vector_weight=1),
            "hybrid_rank": Semantic.configured(provider, settings),
            "hybrid_rrf_rank": Semantic.configured(provider, rrf),
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
        p50, p95 = timings[len(timings) // 2] * 1e3, timings[int(len(timings) * 0.95)] * 1e3
        progress(f"hybrid search_chunks (question embedded each time): p50 {p50:.1f} ms, "
                 f"p95 {p95:.1f} ms; RSS now {rss_mib(os.getpid()):.0f} MiB")  # fmt: skip
    finally:
        await runtime.close()


async def fill_template(api: Api, project: str, settings) -> list[dict]:
    """The corpus's template filled (scoring.template_of), its DOCX read back for the
    placeholders left."""
    template = scoring.template_of(settings.corpus)
    response = await api.call(
        "POST", "/api/v2/templates/fill", 202,
        data={"project_id": project},
        files={"file": ("contract-summary.docx", template_docx(template), CONTENT_TYPES[".docx"])},
    )  # fmt: skip
    job = response.json()["job_id"]
    path = f"/api/v2/templates/fill/{job}"
    body = await api.until(path, ("succeeded", "failed"), settings.timeout)
    error = body["error"] or {}
    if body["status"] == "failed" and engine_failed(error.get("status", 0), error):
        filled, by_name = "", {}  # a model that kept failing: every field is judged unfilled
    elif body["status"] != "succeeded":
        raise RuntimeError(f"template fill failed: {body['error']}")
    else:
        document = Document(io.BytesIO((await api.call("GET", f"{path}/result", 200)).content))
        cells = [c.text for table in document.tables for row in table.rows for c in row.cells]
        filled = "\n".join([*(p.text for p in document.paragraphs), *cells])
        by_name = {f["name"]: f for f in body["fields"]}
    out = []
    for name, instruction, gold in template:
        field = by_name.get(name, {"value": None, "found": False})
        kept = f"{{{{ {name} | {instruction} }}}}" in filled
        right = scoring.field_right(field["value"], field["found"], gold, kept)
        out.append({"name": name, "gold": gold, "value": field["value"], "found": field["found"],
                    "placeholder_kept": kept, "right": right})  # fmt: skip
    return out


async def run_key_terms(api: Api, settings) -> dict:
    """wf_extract_key_terms on a project of KEY_TERMS_TEXT alone."""
    project = await api.project("Key terms")
    text = KEY_TERMS_TEXT.encode()
    document = await api.upload(project, "contract-data.md", text, CONTENT_TYPES[".md"])
    await api.until(f"{DOCUMENTS}/{document}", ("ready", "failed"), settings.timeout)
    workflows, json_body = "/api/v2/workflows", {"project_id": project}
    response = await api.call("POST", f"{workflows}/wf_extract_key_terms/runs", 202, json=json_body)
    path = f"{workflows}/runs/{response.json()['run_id']}"
    body = await api.until(path, ("succeeded", "failed"), settings.timeout)
    laws = (body.get("output") or {}).get("governing_law", [])
    found = [law["jurisdiction"] for law in laws]
    return {"status": body["status"], "jurisdictions": found, "found": KEY_TERMS_GOLD in found}


def rows(result: dict) -> list[scoring.Row]:
    out = scoring.chat_and_search_rows(result["judged"], top=TOP)
    if result["fields"] is not None:
        out.append(scoring.template_row(result["fields"]))
    if (key_terms := result["key_terms"]) is not None:
        found = f"no (found: {key_terms['jurisdictions'] or 'none'})"
        found = "yes" if key_terms["found"] else found
        measured = f"key-terms workflow finds `Governing law: {KEY_TERMS_GOLD}.` inside a paragraph"
        out.append(scoring.Row(measured, found, goal="yes"))
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
    kinds = collections.Counter(item.kind for item in judged)
    corpus = ", ".join(f"{name} ({kind})" for name, kind in result["documents"].items())
    lines = [
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
    ]
    if result["embeddings"]:
        api = f"the API (embeddings: {result['api_embeddings'] or 'none'})"
        lines += [
            "",
            f"Search by ranking (embeddings: {result['embeddings']}):",
            "",
            scoring.search_columns(judged, top=TOP, api=api),
        ]
    return "\n".join(lines)


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
            answer = j.answer.replace("\n", " ")[:240]
            lines.append(f"- {j.question_set} {j.id} ({j.kind}): {', '.join(wrong)}: {answer}")
    lines += [f"- template {f['name']}: value {f['value']!r} (found {f['found']}, placeholder "
              f"kept {f['placeholder_kept']})"
              for f in result["fields"] or [] if not f["right"]]  # fmt: skip
    return "\n".join(lines)


def to_json(result: dict, backend: str) -> dict:
    return {
        "machine": machine(backend), "corpus": result["corpus"],
        "documents": result["documents"], "passages": result["passages"],
        "rows": [asdict(row) for row in rows(result)],
        "questions": [asdict(j) for j in result["judged"]],
        "template_fields": result["fields"], "key_terms": result["key_terms"],
        "engine": result["engine"],
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    # fmt: off
    add("--backend", choices=("sqlite", "postgresql"), default="sqlite",
        help="sqlite: `strongroom dev` (default); postgresql: serve and worker")
    add("--corpus", choices=[*corpus_names(), "all"], default=FAR,
        help="far (bench/quality/corpus/, the default), a corpus of bench/quality/corpora/, "
        "or all in turn, each on a fresh deployment")
    add("--json", metavar="PATH", help="also write the results to PATH as JSON (with --corpus "
        "all: one file per corpus, its name before the suffix)")
    add("--timeout", type=float, default=300.0, help="seconds for each job")
    add("--questions", type=Path, action="append", metavar="PATH",
        help="a question file to ask, each a set of its own (default: the corpus's; far's "
        "others: tuning-open.yaml, heldout*.yaml)")
    add("--embeddings", choices=("minilm", "wordllama", "openai"),
        help="also rank by meaning and hybrid with this provider (issue 16)")
    add("--api-embeddings", choices=("minilm", "wordllama"),
        help="run the API itself with this embeddings provider (issue 16)")
    add("--chat-openai", metavar="BASE_URL",
        help="answer with the `openai` engine at this endpoint (key: BENCH_CHAT_OPENAI_API_KEY)")
    add("--chat-openai-model", metavar="NAME", help="its model name")
    add("--chat-openai-max-tokens", type=int, metavar="N",
        help="each answer's `max_tokens` (default: the API's, 1024)")
    add("--failures", action="store_true", help="also list what was not right")
    add("--scanned", action="store_true",
        help="upload each document as a scanned copy (scanned.py, issue 51)")
    # fmt: on
    args = parser.parse_args()
    names = corpus_names() if args.corpus == "all" else [args.corpus]
    if args.questions and len(names) > 1:
        parser.error("--questions names one corpus's files: give it with one --corpus")
    for name in names:
        json_path = args.json
        if json_path and len(names) > 1:
            path = Path(json_path)
            json_path = str(path.with_name(f"{path.stem}-{name}{path.suffix}"))
        run(argparse.Namespace(**{**vars(args), "corpus": name}), json_path)


def run(settings: argparse.Namespace, json_path: str | None) -> None:
    """One corpus: a fresh deployment, its documents and questions, the report printed."""
    label = f"quality{uuid.uuid4().hex[:4]}"
    with deployment(settings.backend, label) as deployed:
        result = asyncio.run(measure(deployed, settings))
    print(report(result, settings.backend))
    if settings.failures:
        print("\nNot right:\n" + (failures(result) or "(none)"))
    if json_path:
        Path(json_path).write_text(json.dumps(to_json(result, settings.backend), indent=2) + "\n")


if __name__ == "__main__":
    main()
