"""Meaning's cost to ingestion and to everything else (issue 50): the embeddings provider on
(`minilm`, the default) against words only (`none`), through the real processes, on the
embedded default (`strongroom dev`) and on PostgreSQL (`strongroom serve` + one worker).
A document is `ready` once its words are stored; its `meaning` follows in a job of its own.
Scenarios (`--scenario`, all by default):

- `ready`: seconds and CPU seconds (server and worker trees, from /proc) until every document
  is ready and until every one's meaning is settled, on against off in interleaved runs, for
  one small text, 30 at once, a ~400 KB text and the quality corpus (16 files of 7 types).
- `noisy-neighbour`: tenant A uploads a text of `--passages` passages; then tenant B 28 bytes:
  B's seconds to ready and to meaning; the job process's peak RSS above rest; after DELETE of
  A's document, seconds until near idle.
- `first-search`: a fresh server over documents ingested with vectors: the first search
  after /readyz against the median of 10 warm ones.

Every wait is bounded (`--wait-seconds`; a bound hit prints `# bound hit`). `--quick`: one
round, a 2,000-passage A.

    .venv/bin/python bench/meaning_bench.py [--scenario ready noisy-neighbour ...] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import mimetypes
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

import stack
from corpus import ContractWriter

QUALITY = Path(__file__).parent / "quality"
CORPUS_DIRS = [QUALITY / "corpus", QUALITY / "corpora" / "osha-1926" / "corpus"]
SETUPS = {"sqlite": "`strongroom dev` (SQLite)", "postgresql": "serve + worker (PostgreSQL)"}
ON, OFF = "minilm", "none"
SMALL_TEXT = (
    "The Contractor shall give the Engineer notice of any delay within 14 days of its "
    "occurrence. Liquidated damages accrue at the rate stated in the Contract Data for each "
    "day the Works remain incomplete after the Completion Date. The Employer may withhold "
    "retention of five percent from each interim payment until practical completion, and "
    "half of it until the end of the defects liability period."
)
B_TEXT = b"Liquidated damages are due.\n"  # 28 bytes
POLL = 0.25  # seconds between two looks at the documents (one list call)


@contextlib.asynccontextmanager
async def peak_rss(pid: int) -> AsyncIterator[list[float]]:
    """Sample the process's VmRSS every 0.2 s while the block runs: [peak MiB]."""
    peak = [stack.rss_mib(pid)]

    async def sample() -> None:
        while True:
            peak[0] = max(peak[0], stack.rss_mib(pid))
            await asyncio.sleep(0.2)

    task = asyncio.create_task(sample())
    try:
        yield peak
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def started(deployed: stack.Deployment, provider: str):
    """The setup's processes (stack.processes) with `provider`, left to settle."""
    return stack.processes(deployed, settle=120, STRONGROOM_EMBEDDINGS_PROVIDER=provider)


# --- documents ----------------------------------------------------------------------------
Upload = tuple[str, bytes, str]  # name, content, content type


async def upload_at_once(
    client: httpx.AsyncClient, key: str, project_id: str, items: list[Upload]
) -> list[dict]:
    """All the uploads at once, as a client sending a folder would (no semaphore)."""
    return await asyncio.gather(*(stack.upload(client, key, project_id, *item) for item in items))


def meaning_done(found: dict) -> bool:
    """Whether the document's meaning is settled (a failed document counts as settled)."""
    settled = found["status"] == "ready" and found["meaning"] in {"complete", "failed", "off"}
    return settled or found["status"] == "failed"


async def look(client: httpx.AsyncClient, key: str, project_id: str, ids: set[str]) -> dict:
    """The documents `ids` of the project, by id, from one list call (those past 100 one by
    one): cheap, so polling weighs little on the CPU measured."""
    params = {"project_id": project_id, "limit": 100}
    response = await client.get("/api/v2/vault/documents", params=params, headers=stack.auth(key))
    response.raise_for_status()
    found = {d["id"]: d for d in response.json()["data"] if d["id"] in ids}
    for document_id in ids - found.keys():
        found[document_id] = await stack.document(client, key, document_id)
    return found


@dataclass
class Followed:
    """When the documents got ready and their meaning settled, and the CPU used until each
    (None: bound hit)."""

    ready: float | None = None
    meaning: float | None = None
    cpu_ready: float | None = None
    cpu_meaning: float | None = None
    failed: int = 0
    meaning_failed: int = 0


async def follow(client: httpx.AsyncClient, key: str, project_id: str, ids: list[str],
                 clock: Callable[[], tuple[float, float]], bound: float,
                 ready_only: bool = False) -> Followed:  # fmt: skip
    """Poll the documents every POLL s until all are ready (or failed) and, unless
    `ready_only`, all their meaning is settled; `clock()` gives (seconds, CPU seconds) since
    the measure began. Past `bound` s, what was reached by then (a line says so)."""
    out = Followed()
    wanted = set(ids)
    deadline = time.perf_counter() + bound
    while True:
        seen = await look(client, key, project_id, wanted)
        if out.ready is None and all(d["status"] in {"ready", "failed"} for d in seen.values()):
            out.ready, out.cpu_ready = clock()
        if out.ready is not None and (ready_only or all(map(meaning_done, seen.values()))):
            if not ready_only:
                out.meaning, out.cpu_meaning = clock()
            break
        if time.perf_counter() > deadline:
            what = f"documents {'ready' if out.ready is None else 'meaning'}"
            print(f"# bound hit: {what} after {bound:.0f} s", file=sys.stderr, flush=True)
            break
        await asyncio.sleep(POLL)
    out.failed = sum(d["status"] == "failed" for d in seen.values())
    out.meaning_failed = sum(d.get("meaning") == "failed" for d in seen.values())
    return out


def brief(followed: Followed) -> str:
    """One line of a follow's numbers, for the progress lines on stderr."""
    return (
        f"ready {seconds(followed.ready)} s ({seconds(followed.cpu_ready)} CPU s), meaning "
        f"{seconds(followed.meaning)} s ({seconds(followed.cpu_meaning)} CPU s), failed "
        f"{followed.failed}, meaning failed {followed.meaning_failed}"
    )


def measure_from(roots: list[int]) -> Callable[[], tuple[float, float]]:
    """A clock started now: (wall seconds, CPU seconds of the trees) since."""
    wall, cpu = time.perf_counter(), stack.tree_cpu(roots)
    return lambda: (time.perf_counter() - wall, stack.tree_cpu(roots) - cpu)


# --- texts --------------------------------------------------------------------------------
def varied_text(size: int) -> bytes:
    """`size` bytes of varied real prose: the quality corpora's texts in turn."""
    parts = sorted(QUALITY.glob("corpora/*/text/*"))
    texts = [p.read_text(errors="replace") for p in parts if p.suffix in {".txt", ".md"}]
    out, index = [], 0
    while sum(len(t) + 2 for t in out) < size:
        out.append(texts[index % len(texts)])
        index += 1
    return "\n\n".join(out).encode()[:size]


def corpus_files() -> list[Upload]:
    """The quality corpus (12 files) and OSHA 1926's (4): 16 documents of 7 types."""
    found = []
    for directory in CORPUS_DIRS:
        for path in sorted(directory.iterdir()):
            mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            if path.suffix == ".md":
                mime = "text/markdown"
            found.append((path.name, path.read_bytes(), mime))
    return found


def passages_text(passages: int, seed: int = 50) -> bytes:
    """A text of about `passages` passages: paragraphs of contract sentences, each under
    the chunker's 1,200-character target and two too long to share a passage, so one
    paragraph is one passage (about 1,150 characters)."""
    writer = ContractWriter(seed)
    paragraphs = []
    for _ in range(passages):
        topic, second = writer.topic(), writer.topic()
        sentences: list[str] = []
        size = 0
        while True:
            sentence = writer.sentence(topic, second)
            if size + len(sentence) + 1 > 1180:
                break
            sentences.append(sentence)
            size += len(sentence) + 1
        if size < 620:  # two must not fit one passage
            sentences.append(writer.sentence(topic, second)[: 620 - size])
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs).encode()


def passage_count(text: bytes) -> int:
    """Passages the chunker cuts the text into, counted in this process."""
    from strongroom.ingest.chunking import chunk_pages

    return len(chunk_pages([text.decode()]))


# --- cells --------------------------------------------------------------------------------
def seconds(value: float | None, bound: float | None = None) -> str:
    """A cell: seconds (two places under 10), or the bound it did not reach."""
    if value is None:
        return f"> {bound:.0f} (bound)" if bound else "bound hit"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def median_of(values: list[float | None]) -> float | None:
    """Median of the runs, None if any run hit its bound."""
    return None if not values or any(v is None for v in values) else statistics.median(values)


def pair(on: list[float | None], off: list[float | None]) -> str:
    """`on / off (ratio)` of the runs' medians."""
    a, b = median_of(on), median_of(off)
    text = f"{seconds(a)} / {seconds(b)}"
    if a is not None and b:
        text += f" ({a / b:.1f}x)"
    return text


# --- scenario: ready ----------------------------------------------------------------------
def workloads(quick: bool) -> list[tuple[str, list[Upload]]]:
    """(label, uploads) of the `ready` scenario."""
    small = [(f"note-{n:02d}.txt", f"Note {n}. {SMALL_TEXT}\n".encode(), "text/plain")
             for n in range(30)]  # fmt: skip
    size = 100_000 if quick else 400_000
    big = ("varied.txt", varied_text(size), "text/plain")
    files = corpus_files()
    return [
        ("one small text (~400 B)", small[:1]),
        ("30 small texts at once", small),
        (f"one varied text ({size // 1000} KB, {passage_count(big[1])} passages)", [big]),
        (f"quality corpus, {len(files)} files of 7 types at once", files),
    ]


async def ready_run(
    deployed: stack.Deployment, provider: str, loads: list[tuple[str, list[Upload]]], bound: float
) -> dict[str, Followed]:
    """Fresh processes with `provider`, warmed by one small document, then each workload in
    a project of its own after the trees go quiet."""
    key = (await stack.credentials(deployed, f"ready-{provider}"))[0].key
    results = {}
    async with (
        started(deployed, provider) as running,
        httpx.AsyncClient(base_url=running.base, timeout=120) as client,
    ):
        warm = await stack.create_project(client, key)
        first = await stack.upload(client, key, warm, *loads[0][1][0])
        await follow(client, key, warm, [first["id"]], measure_from(running.roots), bound)
        for label, items in loads:
            await stack.until_idle(running.roots, 0.1, 60)
            project = await stack.create_project(client, key)
            clock = measure_from(running.roots)
            ids = [d["id"] for d in await upload_at_once(client, key, project, items)]
            results[label] = await follow(client, key, project, ids, clock, bound)
            print(f"# ready {deployed.backend} {provider} {label}: {brief(results[label])}",
                  file=sys.stderr, flush=True)  # fmt: skip
    return results


def ready(args: argparse.Namespace) -> None:
    loads = workloads(args.quick)
    rounds = 1 if args.quick else args.rounds
    runs: dict[tuple[str, str, str], list[Followed]] = {}
    columns = (
        "| setup | workload | s to all ready: on / off (x) | s to all meaning: on / off (x) "
        "| CPU s to ready: on / off (x) | CPU s to meaning: on / off (x) | failed on/off |"
    )
    started_at = stack.print_header(columns)
    for backend in args.backends:
        for _ in range(rounds):
            for provider in (ON, OFF):
                with stack.deployment(backend, f"meaning-{provider}") as deployed:
                    found = asyncio.run(ready_run(deployed, provider, loads, args.wait_seconds))
                for label, result in found.items():
                    runs.setdefault((backend, label, provider), []).append(result)
        for label, _ in loads:
            on, off = runs[(backend, label, ON)], runs[(backend, label, OFF)]
            cells = [
                pair([getattr(r, name) for r in on], [getattr(r, name) for r in off])
                for name in ("ready", "meaning", "cpu_ready", "cpu_meaning")
            ]
            failed = f"{sum(r.failed + r.meaning_failed for r in on)}/{sum(r.failed for r in off)}"
            print(stack.row(SETUPS[backend], label, *cells, failed), flush=True)
    print(
        f"\non = `{ON}`, off = `{OFF}`; medians of {rounds} interleaved round(s) per setup; "
        "CPU: server (+ worker) processes and all their descendants; 'meaning' = every "
        "document's `meaning` settled."
    )
    stack.print_footer(started_at)


# --- scenario: noisy neighbour ------------------------------------------------------------
@dataclass
class Neighbour:
    a_passages: int
    a_ready: float | None = None
    b: Followed = field(default_factory=Followed)
    rest_mib: float = 0.0
    peak_mib: float = 0.0
    idle_after_delete: float | None = None
    idle_threshold: float = 0.0


async def neighbour_run(deployed: stack.Deployment, text: bytes, passages: int, bound: float):
    """A's big text, B's 28 bytes behind it, A deleted."""
    a, b = (each.key for each in await stack.credentials(deployed, "tenant-a", "tenant-b"))
    out = Neighbour(passages)
    big = ("tenant-a.txt", text, "text/plain")
    async with started(deployed, ON) as running:
        out.rest_mib = stack.rss_mib(running.jobs)
        out.idle_threshold = max(0.05, 2 * running.idle + 0.02)
        async with (
            httpx.AsyncClient(base_url=running.base, timeout=300) as client,
            peak_rss(running.jobs) as peak,
        ):
            project_a = await stack.create_project(client, a)
            project_b = await stack.create_project(client, b)
            clock = measure_from(running.roots)
            created = await stack.upload(client, a, project_a, *big)
            followed = await follow(client, a, project_a, [created["id"]], clock, bound,
                                    ready_only=True)  # fmt: skip
            out.a_ready = followed.ready
            clock = measure_from(running.roots)
            small = await stack.upload(client, b, project_b, "b.txt", B_TEXT, "text/plain")
            out.b = await follow(client, b, project_b, [small["id"]], clock, bound)
            response = await client.delete(
                f"/api/v2/vault/documents/{created['id']}", headers=stack.auth(a)
            )
            response.raise_for_status()
            out.idle_after_delete = await stack.until_idle(running.roots, out.idle_threshold, bound)
            out.peak_mib = peak[0]
    return out


def noisy_neighbour(args: argparse.Namespace) -> None:
    passages = 2000 if args.quick and args.passages == 14_000 else args.passages
    text = passages_text(passages)
    counted = passage_count(text)
    print(f"# A's text: {len(text) / 1e6:.1f} MB, {counted:,} passages by the chunker",
          file=sys.stderr, flush=True)  # fmt: skip
    columns = (
        "| setup | A: passages, MB | A: s to ready | B (28 B): s to ready | B: s to meaning "
        "| job process peak RSS above rest | s to near idle after DELETE A |"
    )
    started_at = stack.print_header(columns)
    bound = args.wait_seconds
    for backend in args.backends:
        with stack.deployment(backend, "meaning-neighbour") as deployed:
            r = asyncio.run(neighbour_run(deployed, text, counted, bound))
        who = "dev server" if backend == "sqlite" else "worker"
        print(stack.row(SETUPS[backend], f"{r.a_passages:,}, {len(text) / 1e6:.1f}",
                        seconds(r.a_ready, bound), seconds(r.b.ready, bound),
                        seconds(r.b.meaning, bound),
                        f"{who}: +{r.peak_mib - r.rest_mib:,.0f} MiB (rest {r.rest_mib:,.0f})",
                        f"{seconds(r.idle_after_delete, bound)} (< {r.idle_threshold:.2f} cores)"),
              flush=True)  # fmt: skip
    print(
        "\nProvider `minilm`. B waits behind A only once A is ready or the bound is hit. "
        "Near idle: one 0.5 s window of the server (+ worker) trees under the threshold (twice "
        "their use at rest + 0.02, at least 0.05 cores)."
    )
    stack.print_footer(started_at)


# --- scenario: first search ---------------------------------------------------------------
QUERIES = [
    "who pays when the site conditions differ from the contract",
    "how much notice before suspending the work",
    "what happens if the contractor is late finishing",
    "retention withheld from progress payments", "warranty period for defective materials",
    "ladder safety requirements on site", "noise exposure limits for workers",
    "termination for default of the contractor", "who cleans up the site at the end",
    "schedule of the work submitted for approval", "bonds required for construction contracts",
]  # fmt: skip


async def first_search_run(deployed: stack.Deployment, rounds: int, bound: float) -> list[tuple]:
    """The quality corpus ingested with vectors by processes then stopped; per round: (s to
    /readyz, first search s, warm searches' median s) of a fresh server."""
    key = (await stack.credentials(deployed, "first-search"))[0].key
    async with (
        started(deployed, ON) as running,
        httpx.AsyncClient(base_url=running.base, timeout=120) as client,
    ):
        project = await stack.create_project(client, key)
        ids = [d["id"] for d in await upload_at_once(client, key, project, corpus_files())]
        await follow(client, key, project, ids, measure_from(running.roots), bound)
    deployed.analyze()
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        async with (
            stack.api_server(deployed, STRONGROOM_EMBEDDINGS_PROVIDER=ON) as base,
            httpx.AsyncClient(base_url=base, timeout=bound, headers=stack.auth(key)) as client,
        ):
            readyz = time.perf_counter() - start
            timings = [await timed_search(client, query) for query in QUERIES]
        out.append((readyz, timings[0], statistics.median(timings[1:])))
    return out


async def timed_search(client: httpx.AsyncClient, query: str) -> float:
    """Seconds of one POST /api/v2/vault/search (which must answer 200)."""
    start = time.perf_counter()
    response = await client.post("/api/v2/vault/search", json={"query": query})
    elapsed = time.perf_counter() - start
    if response.status_code != 200:
        raise RuntimeError(f"search {query!r}: {response.status_code} {response.text[:300]}")
    return elapsed


def first_search(args: argparse.Namespace) -> None:
    rounds = 1 if args.quick else 2
    columns = (
        "| setup | round | s to /readyz | first search s | warm median s (10) | first / warm |"
    )
    started_at = stack.print_header(columns)
    for backend in args.backends:
        with stack.deployment(backend, "meaning-first") as deployed:
            rows = asyncio.run(first_search_run(deployed, rounds, args.wait_seconds))
        server = "`strongroom serve` (PostgreSQL)" if backend == "postgresql" else SETUPS[backend]
        for number, (readyz, first, warm) in enumerate(rows, 1):
            print(stack.row(server, number, f"{readyz:.2f}", f"{first:.3f}", f"{warm:.3f}",
                            f"{first / warm:.0f}x"), flush=True)  # fmt: skip
    print(
        f"\nProvider `minilm`; {len(corpus_files())} documents ingested with vectors by an "
        "earlier process; each round a fresh server, the first search sent as soon as /readyz "
        "answered 200, then 10 other questions one after another."
    )
    stack.print_footer(started_at)


# --- main ---------------------------------------------------------------------------------
SCENARIOS = {"ready": ready, "noisy-neighbour": noisy_neighbour, "first-search": first_search}


def main() -> None:
    arguments = stack.parser(__doc__, backends=["sqlite", "postgresql"])
    arguments.add_argument("--scenario", nargs="+", choices=list(SCENARIOS), default=[*SCENARIOS])
    arguments.add_argument("--rounds", type=int, default=2, help="`ready`: interleaved rounds")
    arguments.add_argument("--passages", type=int, default=14_000, help="A's text, in passages")
    arguments.add_argument("--wait-seconds", type=float, default=300.0, help="bound of each wait")
    arguments.add_argument("--quick", action="store_true", help="1 round, A 2,000, 100 KB text")
    args = arguments.parse_args()
    for name in args.scenario:
        print(f"\n### {name}\n", flush=True)
        began = time.perf_counter()
        SCENARIOS[name](args)
        print(f"# {name}: {time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
