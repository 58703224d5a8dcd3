"""The soak as a short smoke (issue 10, item 5): bench/soak.py's own code, its mixed load
(reads, idempotent creates and their replays, uploads ingested by the worker, search, chat)
for 20 s at concurrency 3 against `strongroom serve --workers 2` and `strongroom worker` on a
throwaway PostgreSQL database and this run's Redis.

Asserted: zero errors (no 5xx, no unexpected status, no transport error, every upload
ingested, no error line in the server's or worker's log), every operation exercised, no
Hypercorn worker restarted, every process's memory sampled. Memory growth is not asserted:
20 s is within the processes' warm-up, and a slope over it says nothing about a leak; the
full-length run (`make bench-soak`, 10 minutes) judges it over its last half.
"""

from __future__ import annotations

import asyncio

import pytest

# bench/ is not a package: it is imported from the repository root as a namespace package,
# and bench/soak.py puts bench/ on sys.path for its own imports (stack, corpus).
from bench import soak
from tests.conftest import PG_ADMIN_URL, REDIS_URL

SECONDS = 20


async def test_soak_smoke(monkeypatch: pytest.MonkeyPatch) -> None:
    # The suite's PostgreSQL and Redis (STRONGROOM_TEST_*), not the benchmarks' (BENCH_*).
    monkeypatch.setattr(soak.stack, "ADMIN_URL", PG_ADMIN_URL)
    monkeypatch.setattr(soak.stack, "REDIS_URL", REDIS_URL)
    config = soak.SoakConfig(
        duration=SECONDS,
        concurrency=3,
        sample_seconds=5,
        replay_share=0.5,  # enough replays to count in 20 s
        timeout=30,
        # A bound, not a wait: since issue 29 the API takes ~200 uploads in 20 s, and one
        # tenant's documents are ingested one at a time per worker (issue 28's share), ~75 s.
        drain_seconds=180,
    )
    progress: list[str] = []
    report = await asyncio.to_thread(soak.run_soak, config, progress.append)
    text = soak.format_report(report) + "\n" + "\n".join(progress)

    assert report.errors == 0, text
    for name in soak.OPERATIONS:
        assert report.stats[name].requests >= 3, f"{name} was barely exercised\n{text}"
    assert set(report.ingestion) == {"ready"}, text
    assert report.worker_restarts == 0, text
    assert not any(report.log_error_counts.values()), text
    assert len(report.samples) >= 4, text
    for sample in report.samples:
        labels = set(sample.rss)
        assert "strongroom worker" in labels, text
        assert sum(label.startswith("serve worker") for label in labels) == 2, text
    # Not asserted on purpose: report.growing (see the module's docstring).
