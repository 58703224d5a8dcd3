"""Soak (issue 10, item 5): a mixed load on the production setup for a long time, watching
errors, latency and memory.

`strongroom serve --workers 2` and one `strongroom worker` on a throwaway PostgreSQL database
and the local Redis; CONCURRENCY virtual clients for DURATION seconds, each picking its next
call from MIX: reads, idempotent creates (retried with the same key, spec 4.1 rule 11; some
sent again, which must replay), uploads of small text and PDF contracts, search and chat. An
error: any 5xx, unexpected status, transport error, body without the fields the call needs,
replay that is not one, or failed ingestion. The report: per operation requests, errors, p50
and p99; latency by minute; each process's RSS from /proc with its slope over the last half.
Targets: zero errors, no memory growth. tests/faults/test_soak_smoke.py runs it for 20 s.

    make bench-soak                                   # 10 minutes, concurrency 8
    make bench-soak SOAK_ARGS="--duration 120 --concurrency 4"
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
import statistics
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

import stack
from corpus import ContractWriter, make_pdf
from stack import latencies, ms, percentile, row, table_head

# Share of each operation in the mix (a replay is drawn after a create, not here).
MIX = {"me": 14, "list_projects": 10, "list_documents": 8, "get_document": 14,
       "create_project": 12, "upload": 10, "search": 20, "chat": 12}  # fmt: skip
OPERATIONS = [*MIX, "replay_project"]
PROJECT_TYPES = ["commercial", "residential", "industrial", "infrastructure", "other"]
MIB = 1024 * 1024


# --- configuration and results ------------------------------------------------------------
@dataclass
class SoakConfig:
    duration: float = 600.0  # seconds of load
    concurrency: int = 8  # virtual clients
    serve_workers: int = 2  # `strongroom serve --workers`
    worker_concurrency: int = 2  # STRONGROOM_WORKER_CONCURRENCY of `strongroom worker`
    sample_seconds: float = 10.0  # RSS sampling period
    replay_share: float = 0.2  # of successful creates, sent again with the same key
    close_share: float = 0.02  # of requests sent with `Connection: close`
    timeout: float = 60.0  # per request, seconds
    max_growth: float = 1.0  # MiB/min of the total over the last half allowed
    drain_seconds: float = 180.0  # wait for the uploads' ingestion after
    seed: int = 11  # of the mix, the files and the questions


@dataclass
class OpStats:
    requests: int = 0  # HTTP attempts, retries included
    latencies: list[float] = field(default_factory=list)  # seconds, answered attempts
    answered_at: list[float] = field(default_factory=list)  # their ends, seconds into the load
    errors: Counter = field(default_factory=Counter)  # kind -> count
    retries: int = 0  # attempts after the first of a logical operation
    examples: list[str] = field(default_factory=list)  # the first few errors, in words

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def error(self, kind: str, detail: str) -> None:
        self.errors[kind] += 1
        if len(self.examples) < 5:
            self.examples.append(f"{kind}: {detail}"[:300])


@dataclass
class Sample:
    t: float  # seconds since the load started
    rss: dict[str, int]  # label -> bytes
    cpu: dict[str, float]  # label -> CPU seconds so far


@dataclass
class MemoryTrend:
    label: str
    first_mib: float
    last_mib: float
    slope_mib_per_min: float  # over the last half
    range_mib: float  # max - min over the last half


@dataclass
class SoakReport:
    config: SoakConfig
    load_seconds: float
    stats: dict[str, OpStats]
    samples: list[Sample]
    trends: list[MemoryTrend]  # per process, then "total"
    serve_worker_pids: list[int]  # every Hypercorn worker seen (a restart adds one)
    ingestion: dict[str, int]  # document status -> count, after the drain
    logs: dict[str, tuple[int, list[str]]]  # log file -> error/critical lines: count, first few

    @property
    def log_error_counts(self) -> dict[str, int]:
        return {name: count for name, (count, _) in self.logs.items()}

    @property
    def errors(self) -> int:
        return sum(stats.error_count for stats in self.stats.values())

    @property
    def total(self) -> MemoryTrend:
        return self.trends[-1]

    @property
    def growing(self) -> bool:
        return self.total.slope_mib_per_min > self.config.max_growth

    @property
    def worker_restarts(self) -> int:
        return max(0, len(self.serve_worker_pids) - self.config.serve_workers)


# --- processes and memory ---------------------------------------------------------------
class MemoryMonitor:
    """Samples the RSS and CPU time of the serve master, each Hypercorn worker and the worker."""

    def __init__(self, serve_pid: int, worker_pid: int) -> None:
        self.serve_pid, self.worker_pid = serve_pid, worker_pid
        self.samples: list[Sample] = []
        self.serve_worker_pids: list[int] = []

    def sample(self, t: float) -> None:
        workers = stack.hypercorn_workers(self.serve_pid)
        self.serve_worker_pids += [pid for pid in workers if pid not in self.serve_worker_pids]
        labelled = {"serve master": self.serve_pid, "strongroom worker": self.worker_pid,
                    **{f"serve worker {pid}": pid for pid in workers}}  # fmt: skip
        sample = Sample(t, {}, {})
        for label, pid in labelled.items():
            size, stat = stack.rss_kib(pid), stack.proc_stat(pid)
            if size is not None and stat is not None:
                sample.rss[label] = size * 1024
                sample.cpu[label] = (int(stat[1][11]) + int(stat[1][12])) / stack.CLOCK
        self.samples.append(sample)

    async def run(self, started: float, every: float, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.sample(time.monotonic() - started)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), every)
        self.sample(time.monotonic() - started)


def slope_per_minute(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MiB) points, in MiB per minute."""
    if len({t for t, _ in points}) < 2:
        return 0.0
    return statistics.linear_regression(*zip(*points, strict=True)).slope * 60


def total_rss(sample: Sample) -> int:
    """What the growth check watches: every process but the serve master (it only supervises)."""
    return sum(size for label, size in sample.rss.items() if label != "serve master")


def trends(samples: list[Sample], load_seconds: float) -> list[MemoryTrend]:
    half = load_seconds / 2
    series: dict[str, list[tuple[float, float]]] = {}
    for sample in samples:
        for label, size in sample.rss.items():
            series.setdefault(label, []).append((sample.t, size / MIB))
        series.setdefault("total", []).append((sample.t, total_rss(sample) / MIB))
    out = []
    for label, points in series.items():
        late = [(t, v) for t, v in points if t >= half] or points
        late_values = [v for _, v in late]
        spread = max(late_values) - min(late_values)
        out.append(MemoryTrend(label, points[0][1], points[-1][1], slope_per_minute(late), spread))
    out.sort(key=lambda trend: (trend.label == "total", trend.label))
    return out


# --- documents and questions --------------------------------------------------------------
def make_files(seed: int, count: int = 24) -> list[tuple[str, bytes, str]]:
    """(name, bytes, type) of small contracts, 1-3 pages: half text (pages apart by form
    feeds), half PDFs."""
    writer = ContractWriter(seed)
    files = []
    for index in range(count):
        pages = writer.pages(writer.rng.randint(1, 3), 1500)
        if index % 2:
            files.append((f"contract-{index:02d}.pdf", make_pdf(pages), "application/pdf"))
        else:
            text = "\f".join(pages).encode()
            files.append((f"contract-{index:02d}.txt", text, "text/plain"))
    return files


def make_questions(writer: ContractWriter, count: int) -> list[str]:
    templates = ["Who is responsible for the {t}?", "When is the {t} due?",
                 "What happens if the {t} is late?", "What notice is needed for the {t}?",
                 "Who pays for the {t}?"]  # fmt: skip
    out = []
    for _ in range(count):
        topic = writer.topic()
        term = writer.term(topic, topic)
        out.append(writer.rng.choice(templates).format(t=term))
    return out


# --- the load -----------------------------------------------------------------------------
class Load:
    def __init__(self, client: httpx.AsyncClient, key: str, config: SoakConfig) -> None:
        self.client = client
        self.auth = {"Authorization": f"Bearer {key}"}
        self.config = config
        self.rng = random.Random(config.seed)  # noqa: S311 (a load mix, not secrets)
        writer = ContractWriter(config.seed + 1)
        self.queries = writer.queries(300)
        self.questions = make_questions(writer, 300)
        self.files = make_files(config.seed + 2)
        self.stats = {name: OpStats() for name in OPERATIONS}
        self.projects: list[str] = []
        self.documents: list[tuple[str, str]] = []  # (document id, project id), newest last
        self.conversations: list[tuple[str, int]] = []  # (id, questions asked)
        self.deadline = math.inf
        self.started = time.monotonic()  # reset when the load starts

    async def call(
        self, op: str, method: str, path: str, expect: int, *, idempotency_key=None, **options
    ) -> httpx.Response | None:
        """One logical operation: attempts until `expect` answers, retried with the same key
        (spec 4.1 rule 11) on a 409 in progress, a 5xx or no answer; None once it failed."""
        stats = self.stats[op]
        headers = dict(self.auth)
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        if self.rng.random() < self.config.close_share:
            headers["Connection"] = "close"
        backoff = 1.0
        for attempt in range(8):
            stats.requests += 1
            stats.retries += attempt > 0
            start = time.perf_counter()
            wait = None  # exponential backoff, unless the server says
            try:
                response = await self.client.request(method, path, headers=headers, **options)
            except httpx.TransportError as error:
                stats.error(f"transport {type(error).__name__}", f"{method} {path}: {error!r}")
                if idempotency_key is None or time.monotonic() > self.deadline:
                    return None  # without a key, the outcome is unknown: not retried
            else:
                stats.latencies.append(time.perf_counter() - start)
                stats.answered_at.append(time.monotonic() - self.started)
                status = response.status_code
                if status == expect:
                    return response
                code = _code(response)
                if status == 409 and code == "idempotency_in_progress" and idempotency_key:
                    wait = float(response.headers.get("Retry-After", "5"))
                else:
                    kind = f"{status} {code}" if status < 500 else f"5xx {status} {code}"
                    stats.error(kind, f"{method} {path}: {response.text[:200]}")
                    if status < 500 or not idempotency_key:
                        return None
            if wait is None:
                wait, backoff = backoff, min(backoff * 2, 30.0)
            if time.monotonic() + wait > self.deadline + 30:
                return None  # the load is over: abandoned, not failed
            await asyncio.sleep(wait)
        stats.error("gave up", f"{method} {path}: 8 attempts")
        return None

    def _body(self, op: str, response: httpx.Response, *fields: str) -> dict | None:
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or any(name not in body for name in fields):
            self.stats[op].error("bad body", response.text[:200])
            return None
        return body

    async def fetch(self, op: str, method: str, path: str, expect: int, *fields: str, **options):
        """One operation's body, which must have `fields` (None: it failed, and was counted)."""
        response = await self.call(op, method, path, expect, **options)
        return None if response is None else self._body(op, response, *fields)

    # The operations.
    async def me(self) -> None:
        await self.fetch("me", "GET", "/api/v2/me", 200)

    async def list_projects(self) -> None:
        path = "/api/v2/vault/projects?limit=25"
        await self.fetch("list_projects", "GET", path, 200, "data", "has_more")

    async def list_documents(self) -> None:
        if not self.projects:
            return
        path = f"/api/v2/vault/documents?project_id={self.rng.choice(self.projects)}&limit=25"
        await self.fetch("list_documents", "GET", path, 200, "data", "has_more")

    async def get_document(self) -> None:
        if not self.documents:
            return
        # Mostly recent documents (likely still processing), some old ones.
        recent = self.documents[-50:]
        document, _ = self.rng.choice(recent if self.rng.random() < 0.6 else self.documents)
        path = f"/api/v2/vault/documents/{document}"
        body = await self.fetch("get_document", "GET", path, 200, "id", "status")
        if body and body["id"] != document:
            self.stats["get_document"].error("wrong document", str(body)[:200])

    async def create_project(self) -> None:
        body = {"name": f"Soak project {self.rng.randint(1, 10**6)}",
                "project_type": self.rng.choice(PROJECT_TYPES),
                "description": "Created by bench/soak.py"}  # fmt: skip
        key, path = str(uuid.uuid4()), "/api/v2/vault/projects"
        sent = {"idempotency_key": key, "json": body}
        created = await self.fetch("create_project", "POST", path, 201, "id", **sent)
        if created is None:
            return
        self.projects.append(created["id"])
        if self.rng.random() < self.config.replay_share:
            again = await self.call("replay_project", "POST", path, 201, **sent)
            replayed = again and self._body("replay_project", again, "id")
            flag = again and again.headers.get("Idempotent-Replayed")
            if replayed and (replayed["id"] != created["id"] or flag != "true"):
                detail = f"id {replayed['id']} vs {created['id']}, Idempotent-Replayed: {flag}"
                self.stats["replay_project"].error("not a replay", detail)

    async def upload(self) -> None:
        if not self.projects:
            return
        project = self.rng.choice(self.projects[-20:])
        name, content, content_type = self.rng.choice(self.files)
        body = await self.fetch(
            "upload", "POST", "/api/v2/vault/documents", 202, "id", "status",
            data={"project_id": project}, files={"file": (name, content, content_type)},
        )  # fmt: skip
        if body is None:
            return
        if body["status"] != "processing":
            self.stats["upload"].error("not processing", str(body)[:200])
        self.documents.append((body["id"], project))

    async def search(self) -> None:
        body: dict = {"query": self.rng.choice(self.queries), "k": 10}
        if self.projects and self.rng.random() < 0.25:
            body["project_ids"] = [self.rng.choice(self.projects)]
        await self.fetch("search", "POST", "/api/v2/vault/search", 200, "data", json=body)

    async def chat(self) -> None:
        body: dict = {"query": self.rng.choice(self.questions)}
        continuing = None
        if self.conversations and self.rng.random() < 0.3:
            continuing = self.rng.randrange(len(self.conversations))
            body["conversation_id"] = self.conversations[continuing][0]
        fields = ("answer", "citations", "conversation_id")
        answer = await self.fetch("chat", "POST", "/api/v2/chat", 200, *fields, json=body)
        if answer is None:
            return
        if continuing is None:
            self.conversations.append((answer["conversation_id"], 1))
            del self.conversations[:-50]
        else:
            conversation, asked = self.conversations[continuing]
            if asked + 1 >= 6:  # keep conversations short: start others
                self.conversations.pop(continuing)
            else:
                self.conversations[continuing] = (conversation, asked + 1)

    async def seed(self) -> None:
        """A few projects and documents, ingested before the clock starts."""
        for _ in range(3):
            await self.create_project()
        for _ in range(6):
            await self.upload()
        await self.drain(60.0)

    async def client_loop(self) -> None:
        operations, weights = list(MIX), list(MIX.values())
        while time.monotonic() < self.deadline:
            op = self.rng.choices(operations, weights)[0]
            await getattr(self, op)()

    async def drain(self, seconds: float) -> Counter:
        """Wait until no uploaded document is still processing (or `seconds` pass); the
        documents' statuses then."""
        statuses: Counter = Counter()
        give_up = time.monotonic() + seconds
        while True:
            statuses = Counter()
            cursor = None
            while True:
                path = "/api/v2/vault/documents?limit=100" + (f"&cursor={cursor}" if cursor else "")
                response = await self.client.get(path, headers=self.auth)
                response.raise_for_status()
                page = response.json()
                statuses.update(document["status"] for document in page["data"])
                cursor = page["next_cursor"]
                if not page["has_more"]:
                    break
            if not statuses["processing"] or time.monotonic() > give_up:
                return statuses
            await asyncio.sleep(1.0)


def _code(response: httpx.Response) -> str:
    try:
        return str(response.json().get("code", "-"))
    except (ValueError, AttributeError):
        return "-"


def _log_errors(path: Path) -> tuple[int, list[str]]:
    """Lines of a JSON-lines log at level error or critical (and plain tracebacks)."""
    if not path.exists():
        return 0, []
    count, lines = 0, []
    for line in path.read_text(errors="replace").splitlines():
        try:
            level = json.loads(line).get("level", "")
        except (ValueError, AttributeError):
            level = "error" if line.startswith("Traceback") else ""
        if level in ("error", "critical"):
            count += 1
            if len(lines) < 5:
                lines.append(line[:500])
    return count, lines


async def soak(deployed: stack.Deployment, config: SoakConfig, progress=print) -> SoakReport:
    """The soak on a migrated PostgreSQL deployment (stack.deployment)."""
    phase = time.monotonic()
    (credential,) = await stack.credentials(deployed, "soak")
    progress(f"  tenant and key in {time.monotonic() - phase:.1f} s")
    # One tenant's load: a deployment of one tenant keeps no slot for others (issue 28,
    # docs/configuration.md); with the default its uploads would queue behind one slot.
    slots = {"STRONGROOM_JOB_SLOTS_KEPT_FOR_OTHER_TENANTS": "0"}
    serving = stack.started_server(deployed, config.serve_workers, tries=900, every_worker=True)
    limits = httpx.Limits(max_connections=config.concurrency + 4)
    async with (
        stack.worker_process(deployed, config.worker_concurrency, **slots) as worker,
        serving as (base, server),
        httpx.AsyncClient(base_url=base, timeout=config.timeout, limits=limits) as client,
    ):
        progress(f"  serve and worker up in {time.monotonic() - phase:.1f} s")
        phase = time.monotonic()
        load = Load(client, credential.key, config)
        await load.seed()
        progress(f"  seeded in {time.monotonic() - phase:.1f} s; the load starts")
        monitor, stop = MemoryMonitor(server.pid, worker.pid), asyncio.Event()
        started = load.started = time.monotonic()
        load.deadline = started + config.duration
        sampler = asyncio.create_task(monitor.run(started, config.sample_seconds, stop))
        reporter = asyncio.create_task(_progress(load, monitor, started, config, progress))
        await asyncio.gather(*(load.client_loop() for _ in range(config.concurrency)))
        load_seconds = time.monotonic() - started
        stop.set()
        reporter.cancel()
        await sampler
        with contextlib.suppress(asyncio.CancelledError):
            await reporter
        load.deadline, phase = math.inf, time.monotonic()
        statuses = await load.drain(config.drain_seconds)
        progress(f"  ingestion drained in {time.monotonic() - phase:.1f} s")
        # Before the processes stop, so that shutdown lines are not counted.
        logs = {"server.log": _log_errors(stack.server_log(deployed)),
                "worker.log": _log_errors(deployed.settings.data_dir / "worker.log")}  # fmt: skip
    if statuses["failed"] or statuses["processing"]:
        detail = f"{statuses['failed']} failed, {statuses['processing']} still processing"
        load.stats["upload"].error("ingestion not ready", f"after the drain: {detail}")
    return SoakReport(config, load_seconds, load.stats, monitor.samples,
                      trends(monitor.samples, load_seconds), monitor.serve_worker_pids,
                      dict(statuses), logs)  # fmt: skip


async def _progress(load: Load, monitor: MemoryMonitor, started: float, config, progress) -> None:
    """A line a minute (or every 10 s on short runs) while the load runs."""
    every = 60.0 if config.duration >= 300 else 10.0
    while True:
        await asyncio.sleep(every)
        requests = sum(stats.requests for stats in load.stats.values())
        errors = sum(stats.error_count for stats in load.stats.values())
        total = total_rss(monitor.samples[-1]) / MIB if monitor.samples else 0.0
        progress(
            f"  {time.monotonic() - started:6.0f} s: {requests} requests, {errors} errors, "
            f"RSS total {total:.1f} MiB, {len(load.documents)} documents uploaded"
        )


def run_soak(config: SoakConfig, progress=print) -> SoakReport:
    """The soak on a throwaway database, in an event loop of its own."""
    started = time.monotonic()
    with stack.deployment("postgresql", "soak") as deployed:
        progress(f"  database created and migrated in {time.monotonic() - started:.1f} s")
        return asyncio.run(soak(deployed, config, progress))


# --- the report ---------------------------------------------------------------------------
def format_report(report: SoakReport) -> str:
    config, stats = report.config, report.stats
    everything = [latency for name in OPERATIONS for latency in stats[name].latencies]
    requests = sum(each.requests for each in stats.values())
    lines = [
        *table_head("| Operation | Requests | Errors | Retries | p50 (ms) | p99 (ms) | max (ms) |"),
        *(row(name, f"{each.requests:,}", each.error_count, each.retries,
              *latencies(each.latencies, (0.5, 0.99))) for name, each in stats.items()),
        row("**overall**", f"{requests:,}", report.errors,
            sum(each.retries for each in stats.values()), *latencies(everything, (0.5, 0.99))),
        "",
        f"{requests / report.load_seconds:.1f} requests/s over {report.load_seconds:.0f} s; "
        "documents after the drain: "
        + ", ".join(f"{count} {status}" for status, count in sorted(report.ingestion.items())),
    ]  # fmt: skip
    lines += [f"- error in {name}: {example}" for name in OPERATIONS
              for example in stats[name].examples]  # fmt: skip
    for name, (count, first) in report.logs.items():
        if count:
            lines += [f"- {name}: {count} lines at level error/critical, first:",
                      *(f"    {line}" for line in first)]  # fmt: skip
    half = report.load_seconds / 2
    lines += [
        "",
        *timeline(report),
        "",
        f"RSS, sampled every {config.sample_seconds:.0f} s ({len(report.samples)} samples); "
        f"slope and max-min over the last half (t >= {half:.0f} s):",
        "",
        *table_head("| Process | first (MiB) | last (MiB) | slope last half (MiB/min) "
                    "| max-min last half (MiB) | CPU (s) |"),
    ]  # fmt: skip
    last = report.samples[-1] if report.samples else Sample(0, {}, {})
    for trend in report.trends:
        total = trend.label == "total"
        cpu = (sum(v for k, v in last.cpu.items() if k != "serve master") if total
               else last.cpu.get(trend.label, math.nan))  # fmt: skip
        lines.append(row(f"**{trend.label}**" if total else trend.label,
                         f"{trend.first_mib:.1f}", f"{trend.last_mib:.1f}",
                         f"{trend.slope_mib_per_min:+.2f}", f"{trend.range_mib:.1f}",
                         f"{cpu:.0f}"))  # fmt: skip
    lines += ["", f"Hypercorn workers seen: {len(report.serve_worker_pids)} "
              f"({report.worker_restarts} restarts).",
              f"Verdict: {report.errors} errors; memory {'GROWING' if report.growing else 'flat'} "
              f"(slope {report.total.slope_mib_per_min:+.2f} MiB/min, limit "
              f"{config.max_growth})."]  # fmt: skip
    return "\n".join(lines)


def timeline(report: SoakReport) -> list[str]:
    """Latency over the run, in windows of a minute (10 s on short runs): does it drift?"""
    every = 60.0 if report.load_seconds >= 300 else 10.0
    # Calls that end just after the deadline count in the last window.
    windows = max(1, math.floor(report.load_seconds / every + 0.5))
    by_op: dict[str, list[list]] = {name: [[] for _ in range(windows)] for name in OPERATIONS}
    for name, stats in report.stats.items():
        for at, latency in zip(stats.answered_at, stats.latencies, strict=True):
            by_op[name][min(windows - 1, max(0, int(at // every)))].append(latency)
    lines = table_head(
        "| Window | Requests/s | p50 (ms) | p99 (ms) | search p99 | chat p99 | upload p99 |"
    )
    for index in range(windows):
        start = index * every
        end = report.load_seconds if index == windows - 1 else (index + 1) * every
        values = [latency for windowed in by_op.values() for latency in windowed[index]]
        lines.append(row(f"{start:.0f}-{end:.0f} s", f"{len(values) / max(end - start, 1e-9):.1f}",
                         ms(percentile(values, 0.5)), ms(percentile(values, 0.99)),
                         *(ms(percentile(by_op[op][index], 0.99))
                           for op in ("search", "chat", "upload"))))  # fmt: skip
    return lines


def main() -> None:
    arguments = stack.parser(__doc__)
    defaults = SoakConfig()
    names = "duration concurrency serve_workers worker_concurrency sample_seconds replay_share"
    for name in (names + " timeout max_growth seed").split():
        default = getattr(defaults, name)
        arguments.add_argument("--" + name.replace("_", "-"), type=type(default),
                               default=default)  # fmt: skip
    config = SoakConfig(**vars(arguments.parse_args()))
    print(f"soak: {config.duration:.0f} s, concurrency {config.concurrency}, serve --workers "
          f"{config.serve_workers}\n{stack.machine()}", flush=True)  # fmt: skip
    report = run_soak(config, progress=lambda line: print(line, flush=True))
    print(f"\nfinished: {stack.machine()}\n")
    print(format_report(report))
    sys.exit(1 if report.errors or report.growing else 0)


if __name__ == "__main__":
    main()
