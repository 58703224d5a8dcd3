"""Keyword search over vaults of 10-50 documents (issue 53, item 1): is a passage holding
every word asked in the top 3, through the API, with the API's own search (hybrid with
`--api-embeddings minilm`, the default here; `none` for words only)?

The deployment is fresh (bench/stack.py, the embedded SQLite under `strongroom dev`). Every
document of the quality corpora (bench/quality/corpus and bench/quality/corpora/*/corpus:
50 public-domain documents, no USACE EM 385-1-1 and no UFGS text) is uploaded to one project,
with a small contract written for this bench (CONTRACT), and polled until `ready` and its
vectors made. A vault is a set of those documents, searched with `document_ids` (so the
terms' rarity is the vault's own, as in a project of those documents):

- the README's case: the contract and 13 contract clauses (the FAR corpus's 12 documents and
  contracts-large's time, changes and disputes clauses), asked "liquidated damages";
- VAULTS: documents drawn at random (seed `--seed`) from the 50: two vaults of 10, two of
  20, two of 30, and all 50.

The keyword queries of a vault, by one rule: every run of two or three consecutive words of a
passage, separated by single spaces only (no punctuation, line break or digit between them),
each word alphabetic, at least 3 letters, neither a stop word nor a question word
("who", "when"...); kept when the passages of the vault holding every one of its analysed
terms (strongroom.text.analysis.query against the passage's stored `index_terms`; a
thesaurus phrase counts as its concept) number 1 to 3 (the phrase is specific), and its
analysed terms are two or more, or a concept. `--queries` of them (40) are drawn at random
per vault, in lower case.

Each query is searched through POST /api/v2/vault/search (k 10). Reported per vault size and
in all: the share whose top 3 holds a passage holding every query term (the goal: all), the
share with one first, and the share whose top 3 holds a passage with the phrase itself (its
words in that order). Beside it, for the same passages and queries: words only
(strongroom.retrieval.search.rank over the vault's stored terms: what the API ranks by words)
and bm25s (as bench/quality/run.py's peer).

    .venv/bin/python bench/keyword_bench.py [--api-embeddings minilm|none] [--json PATH]

Run it from a checkout of the code to measure (the server is that checkout's `strongroom`
when PYTHONPATH names it).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import sqlite3
import sys
import time
import uuid
from pathlib import Path

import httpx

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "quality"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from run import CONTENT_TYPES, Api, Peer, corpus_files, corpus_names, credential  # noqa: E402
from stack import api_server, deployment, machine, parser, table_head  # noqa: E402

from strongroom.retrieval.search import Candidate, rank  # noqa: E402
from strongroom.text import analysis  # noqa: E402
from strongroom.text.stopwords import QUESTION_WORDS  # noqa: E402

# Written for this bench (not from a public source): the README's "small contract".
CONTRACT = """# Agreement for the extension of the Harbour Tower

1. Parties. This agreement is made between Harbour Holdings Limited (the Employer) and
Northgate Building Services Limited (the Contractor) for the extension of the Harbour Tower
shown on the drawings listed in the schedule.

2. The works. The Contractor shall carry out and complete the works in a proper and
workmanlike manner, with materials of the kinds and standards described in the
specification, and shall give the Employer's representative access to the site and to every
place where work is being prepared for the contract at all reasonable times.

3. Time. The Contractor shall begin the works within ten days of possession of the site and
shall complete them by 30 June 2027. Where the works are delayed by a cause beyond the
Contractor's control and the Contractor gives notice within fourteen days, the Employer's
representative shall fix a fair later date for completion. If the works are not complete by
the date for completion, the Contractor shall pay liquidated damages of 5,000 pounds per week
until they are complete, which the Employer may deduct from any sum due.

4. Payment. The Employer shall pay each interim certificate within 30 days of its date, less
a retention of 5 percent, half of which is released at practical completion and the rest
at the end of the defects period of twelve months.

5. Insurance. The Contractor shall insure the works against loss and damage by fire, storm
and flood for their full reinstatement value until practical completion, in the joint names
of the Employer and the Contractor.

6. Disputes. A dispute shall first be referred to adjudication, then to the courts of
England and Wales.
"""
CONTRACT_NAME = "harbour-tower-contract.md"
README_QUERY = "liquidated damages"
README_CLAUSES = ("far-time-changes-and-disputes.txt",)  # besides the FAR corpus's 12
VAULT_SIZES = (10, 10, 20, 20, 30, 30, 50)
K = 10
TOP = 3


def phrases(text: str) -> set[str]:
    """The text's runs of two or three words (the rule in the docstring), in lower case."""
    found = set()
    for stretch in re.split(r"[^A-Za-z ]| {2,}", text):
        words = stretch.split()
        for length in (2, 3):
            for start in range(len(words) - length + 1):
                run = words[start : start + length]
                if all(
                    len(word) >= 3
                    and analysis.term_of(word) is not None
                    and word.lower() not in QUESTION_WORDS
                    for word in run
                ):
                    found.add(" ".join(word.lower() for word in run))
    return found


def queries_of(passages: list[dict], count: int, rng: random.Random) -> list[str]:
    """`count` keyword queries of the vault's passages, by the rule in the docstring."""
    held = [set(passage["terms"]) for passage in passages]
    seen: dict[str, bool] = {}
    for passage in passages:
        for phrase in phrases(passage["content"]):
            if phrase in seen:
                continue
            wanted = analysis.query(phrase).terms
            specific = len(wanted) >= 2 or any(term.startswith("zz") for term in wanted)
            holding = sum(1 for terms in held if set(wanted) <= terms) if specific else 0
            seen[phrase] = 1 <= holding <= 3
    chosen = sorted(phrase for phrase, kept in seen.items() if kept)
    return rng.sample(chosen, min(count, len(chosen)))


def has_phrase(content: str, phrase: str) -> bool:
    return phrase in " ".join(re.findall(r"[a-z]+", content.lower()))


def first(ranked: list[dict], holds) -> int | None:
    """The 1-based rank of the first passage of `ranked` that `holds`, or None."""
    return next((n for n, passage in enumerate(ranked, start=1) if holds(passage)), None)


def stored(deployed) -> dict[str, dict]:
    """Every passage of the database by chunk id: its document, content and index terms."""
    path = deployed.settings.data_dir / "strongroom.db"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        rows = connection.execute(
            "SELECT id, document_id, content, index_terms FROM document_chunks"
        ).fetchall()
    return {
        str(uuid.UUID(hex=str(chunk_id).replace("-", ""))): {
            "document": str(uuid.UUID(hex=str(document_id).replace("-", ""))),
            "content": content,
            "terms": terms.split(),
        }
        for chunk_id, document_id, content, terms in rows
    }


def holds(query: str, passage: dict) -> bool:
    """Whether the passage holds every analysed term of the query."""
    return set(analysis.query(query).terms) <= set(passage["terms"])


def ranks(query: str, found: list[tuple[str, float]], inside: dict[str, dict], peer) -> dict:
    """The rank of the first passage holding every word of `query`, and of the first with the
    phrase itself, in the API's ranking (`found`), by words only (search.rank over the vault's
    stored terms) and by bm25s (`peer`, over the vault's passages)."""
    order = sorted(inside)
    candidates = [Candidate(uuid.UUID(cid), inside[cid]["terms"]) for cid in order]
    words = rank(analysis.query(query).terms, candidates, len(candidates))
    by_content = {inside[cid]["content"]: inside[cid] for cid in order}
    rankings = {
        "search": [inside[cid] for cid, _ in found],
        "words": [inside[str(cid)] for cid, _ in words[:K]],
        "bm25s": [by_content[content] for content in peer.rank(query, K)],
    }
    row: dict = {"query": query}
    for column, ranked in rankings.items():
        row[f"{column}_every"] = first(ranked, lambda passage: holds(query, passage))
        row[f"{column}_phrase"] = first(
            ranked, lambda passage: has_phrase(passage["content"], query)
        )
    return row


async def search(api: Api, query: str, documents: list[str]) -> list[tuple[str, float]]:
    """(chunk id, score) of the API's k best for `query` among `documents`."""
    body = {"query": query, "k": K, "document_ids": documents}
    response = await api.call("POST", "/api/v2/vault/search", 200, json=body)
    return [(hit["chunk_id"], hit["score"]) for hit in response.json()["data"]]


async def measure(deployed, args, progress) -> dict:
    cred = await credential(deployed)
    extra = {"STRONGROOM_EMBEDDINGS_PROVIDER": args.api_embeddings}  # `none` said, not assumed
    files = [path for name in corpus_names() for path in corpus_files(name)]
    async with api_server(deployed, **extra) as base:
        async with httpx.AsyncClient(base_url=base, timeout=120) as client:
            api = Api(client, cred.key)
            project = await api.project("bench keyword search")
            started = time.monotonic()
            uploads = {CONTRACT_NAME: (CONTRACT.encode(), CONTENT_TYPES[".md"])}
            uploads |= {
                path.name: (path.read_bytes(), CONTENT_TYPES[path.suffix]) for path in files
            }
            documents = {
                name: await api.upload(project, name, content, content_type)
                for name, (content, content_type) in uploads.items()
            }
            for name, document in documents.items():
                body = await api.until(f"/api/v2/vault/documents/{document}", ("ready",), 900)
                if body["status"] != "ready":
                    raise RuntimeError(f"{name} did not ingest")
            progress(f"{len(documents)} documents ready with their vectors in "
                     f"{time.monotonic() - started:.0f} s")  # fmt: skip
            passages = stored(deployed)
            rng = random.Random(args.seed)  # noqa: S311 (a sample, not secrets)
            public = sorted(name for name in documents if name != CONTRACT_NAME)
            readme = [CONTRACT_NAME, *(path.name for path in corpus_files("far")), *README_CLAUSES]
            vaults = [("readme", readme, [README_QUERY])]
            for size in VAULT_SIZES:
                names = sorted(rng.sample(public, min(size, len(public))))
                inside = [p for p in passages.values() if p["document"] in
                          {documents[name] for name in names}]  # fmt: skip
                vaults.append((str(len(names)), names, queries_of(inside, args.queries, rng)))
            asked = []
            for label, names, queries in vaults:
                ids = [documents[name] for name in names]
                inside = {cid: p for cid, p in passages.items() if p["document"] in set(ids)}
                peer = Peer([inside[cid]["content"] for cid in sorted(inside)])
                for query in queries:
                    found = await search(api, query, ids)
                    row = ranks(query, found, inside, peer)
                    row |= {"vault": label, "documents": len(names)}
                    if label == "readme":
                        contract = documents[CONTRACT_NAME]
                        row["contract_rank"] = next(
                            (n for n, (cid, _) in enumerate(found, start=1)
                             if inside[cid]["document"] == contract and holds(query, inside[cid])),
                            None,
                        )  # fmt: skip
                        names_of = {document: name for name, document in documents.items()}
                        row["ranking"] = [
                            (names_of[inside[cid]["document"]], holds(query, inside[cid]),
                             round(score, 3))
                            for cid, score in found
                        ]  # fmt: skip
                    asked.append(row)
            progress(f"{len(asked)} queries asked")
    return {"embeddings": args.api_embeddings, "queries": asked}


def share(rows: list[dict], key: str, top: int) -> str:
    hits = sum(1 for row in rows if row[key] is not None and row[key] <= top)
    return f"{hits / len(rows):.2f} ({hits}/{len(rows)})" if rows else "-"


def report(result: dict) -> str:
    rows = result["queries"]
    out = []
    readme = [row for row in rows if row["vault"] == "readme"]
    for row in readme:
        out.append(
            f"README case ({row['documents']} documents), {row['query']!r}: the contract's passage "
            "holding the words "
            f"is {row['contract_rank'] or 'not'} in the top {K} (search, "
            f"{result['embeddings']}); a passage holding every word first at rank "
            f"{row['search_every']}. The top {K} (document, holds every word, score):"
        )
        out += [f"  {n}. {name}, {holds}, {score}" for n, (name, holds, score) in
                enumerate(row["ranking"], start=1)]  # fmt: skip
    out.append("")
    out += table_head(
        f"| vaults (documents) | queries | search: every word in top {TOP} | words only | "
        f"bm25s | search: every word first | words only | bm25s | "
        f"search: the phrase in top {TOP} | words only | bm25s |"
    )
    kept = [row for row in rows if row["vault"] != "readme"]
    groups = sorted({row["documents"] for row in kept})
    for group in [*groups, None]:
        chosen = [row for row in kept if group is None or row["documents"] == group]
        cells = [
            share(chosen, f"{column}_{kind}", top)
            for kind, top in (("every", TOP), ("every", 1), ("phrase", TOP))
            for column in ("search", "words", "bm25s")
        ]
        name = "all" if group is None else str(group)
        out.append(f"| {name} | {len(chosen)} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> None:
    arguments = parser(__doc__)
    arguments.add_argument("--api-embeddings", choices=("minilm", "wordllama", "none"),
                           default="minilm")  # fmt: skip
    arguments.add_argument("--queries", type=int, default=40, help="queries per vault (40)")
    arguments.add_argument("--seed", type=int, default=53)
    arguments.add_argument("--json", help="also write every query's ranks to this file")
    arguments.add_argument(
        "--failures",
        action="store_true",
        help="also list each query whose top 3 holds no passage with every word",
    )
    args = arguments.parse_args()
    print(f"{machine()}; api embeddings {args.api_embeddings}", flush=True)
    with deployment("sqlite", "keyword") as deployed:
        result = asyncio.run(measure(deployed, args, lambda m: print(m, file=sys.stderr)))
    print(report(result))
    if args.failures:
        for row in result["queries"]:
            if row["search_every"] is None or row["search_every"] > TOP:
                print(f"- {row['vault']}: {row['query']!r}: every word first at "
                      f"{row['search_every']}, words only {row['words_every']}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
