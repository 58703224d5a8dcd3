"""The offline embeddings providers' costs (issue 16): load time, memory, throughput on
passages and on sentences, and the latency of embedding one question. Prints a table for
bench/RESULTS.md.

`minilm` is the provider's default runtime (onnxruntime, int8), `minilm-numpy` the float32
reference (`STRONGROOM_EMBEDDINGS_MINILM_RUNTIME=numpy`). The int8 runtime is run twice, in
one fresh cache directory (`XDG_CACHE_HOME`): first building its model, then loading it from
the cache; the table's throughput is the second run's, `load s` shows both. Throughput is
given per wall-clock second and per CPU second of the process (every thread's: the providers
run one thread each, so this is per core, and it moves less when the machine is shared).

Each provider runs in a fresh process of its own (so that its memory is its alone), one after
the other in the same run, on the same texts: vault_bench's seeded construction prose
(bench/corpus.py), passages of about 1,100 characters, single sentences, and its search
queries. `embed_blocking` is timed, the call the provider's thread makes (the event loop's
hand-off is not part of it).

    .venv/bin/python bench/embeddings_bench.py          # wordllama, minilm, minilm-numpy
    .venv/bin/python bench/embeddings_bench.py --providers minilm minilm-numpy
    .venv/bin/python bench/embeddings_bench.py --providers wordllama --passages 2000
    .venv/bin/python bench/embeddings_bench.py --parity    # int8 against numpy: cosines
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

PROVIDERS = ("wordllama", "minilm", "minilm-numpy")


def rss_mib(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def measure(name: str, passages: int, sentences: int, queries: int) -> dict:
    """One provider, in this process: the numbers of one row."""
    from corpus import ContractWriter

    from strongroom.embeddings import create_provider
    from strongroom.settings import Settings

    writer = ContractWriter(seed=11)
    passage_texts = [writer.passage() for _ in range(passages)]
    sentence_texts = [writer.sentence(writer.topic(), writer.topic()) for _ in range(sentences)]
    query_texts = writer.queries(queries)

    before = rss_mib()
    provider, _, runtime = name.partition("-")
    settings = Settings(embeddings_provider=provider)
    if runtime:
        settings = settings.model_copy(update={"embeddings_minilm_runtime": runtime})
    provider = create_provider(settings)
    started = time.perf_counter()
    provider.embed_blocking(["warm up"])
    load_seconds = time.perf_counter() - started
    loaded = rss_mib()
    peak_loading = rss_mib("VmHWM")

    def rate(texts: list[str], batch: int) -> tuple[float, float]:
        """Texts per wall-clock second and per CPU second."""
        started, cpu = time.perf_counter(), time.process_time()
        for start in range(0, len(texts), batch):
            provider.embed_blocking(texts[start : start + batch])
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        return len(texts) / elapsed, len(texts) / cpu

    passage_rate, passage_cpu_rate = rate(passage_texts, 16)
    sentence_rate, sentence_cpu_rate = rate(sentence_texts, 64)
    latencies = []
    for query in query_texts:
        started = time.perf_counter()
        provider.embed_blocking([query])
        latencies.append(time.perf_counter() - started)
    return {
        "provider": name,
        "model": provider.model,
        "dimensions": int(provider.embed_blocking(["x"]).shape[1]),
        "load_seconds": load_seconds,
        "rss_before": before,
        "rss_loaded": loaded,
        "rss_peak_loading": peak_loading,
        "rss_after": rss_mib(),
        "rss_peak": rss_mib("VmHWM"),
        "passage_chars": sum(map(len, passage_texts)) / len(passage_texts),
        "passages_per_second": passage_rate,
        "passages_per_cpu_second": passage_cpu_rate,
        "sentences_per_second": sentence_rate,
        "sentences_per_cpu_second": sentence_cpu_rate,
        "query_p50_ms": percentile(latencies, 0.5) * 1e3,
        "query_p95_ms": percentile(latencies, 0.95) * 1e3,
    }


def parity(passages: int, sentences: int, queries: int) -> str:
    """The cosine of each text's int8 vector with its numpy (reference) vector."""
    import numpy as np
    from corpus import ContractWriter

    from strongroom.embeddings.minilm import MiniLMEmbeddings

    writer = ContractWriter(seed=11)
    sets = {
        "passages": [writer.passage() for _ in range(passages)],
        "sentences": [writer.sentence(writer.topic(), writer.topic()) for _ in range(sentences)],
        "questions": writer.queries(queries),
    }
    reference, int8 = MiniLMEmbeddings(runtime="numpy"), MiniLMEmbeddings(runtime="onnx-int8")
    lines = ["| texts | cosine int8 / numpy: min, 1st percentile, median, max |", "|---|---|"]
    for name, texts in sets.items():
        cosines = (reference.embed_blocking(texts) * int8.embed_blocking(texts)).sum(axis=1)
        low, one, median, high = np.quantile(cosines, [0, 0.01, 0.5, 1])
        lines.append(f"| {len(texts)} {name} | {low:.4f}, {one:.4f}, {median:.4f}, {high:.4f} |")
    return "\n".join(lines)


def table(rows: list[dict]) -> str:
    lines = [
        "| provider (model, dimensions) | load s | RSS loaded | RSS after the run | peak RSS "
        "while loading / in the run | passages/s (per CPU s) | sentences/s (per CPU s) "
        "| query p50 / p95 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        load = f"{row['load_seconds']:.2f}"
        if "first_load_seconds" in row:
            load = f"{row['first_load_seconds']:.2f} building, {load} cached"
        lines.append(
            f"| `{row['provider']}` ({row['model']}, {row['dimensions']}) "
            f"| {load} "
            f"| +{row['rss_loaded'] - row['rss_before']:.0f} MiB "
            f"| +{row['rss_after'] - row['rss_before']:.0f} MiB "
            f"| +{row['rss_peak_loading'] - row['rss_before']:.0f} / "
            f"+{row['rss_peak'] - row['rss_before']:.0f} MiB "
            f"| {row['passages_per_second']:.1f} ({row['passages_per_cpu_second']:.1f}) "
            f"| {row['sentences_per_second']:.0f} ({row['sentences_per_cpu_second']:.0f}) "
            f"| {row['query_p50_ms']:.2f} / {row['query_p95_ms']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--providers", nargs="+", choices=PROVIDERS, default=list(PROVIDERS))
    parser.add_argument("--passages", type=int, default=400)
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--parity", action="store_true", help="cosines of int8 with numpy")
    parser.add_argument("--one", choices=PROVIDERS, help=argparse.SUPPRESS)  # the child
    args = parser.parse_args()
    if args.parity:
        print(parity(args.passages, args.sentences, args.queries))
        return
    if args.one:
        print(json.dumps(measure(args.one, args.passages, args.sentences, args.queries)))
        return
    rows = []
    with tempfile.TemporaryDirectory(prefix="embeddings-bench-cache-") as cache:
        environment = {**os.environ, "XDG_CACHE_HOME": cache}

        def child(name: str) -> dict:
            done = subprocess.run(
                [sys.executable, __file__, "--one", name, "--passages", str(args.passages),
                 "--sentences", str(args.sentences), "--queries", str(args.queries)],
                check=True, capture_output=True, text=True, env=environment,
            )  # fmt: skip
            return json.loads(done.stdout.strip().splitlines()[-1])

        for name in args.providers:
            row = child(name)
            if name == "minilm":  # the first run built the int8 model: again, from the cache
                first = row
                row = child(name)
                row["first_load_seconds"] = first["load_seconds"]
                row["first_rss_peak_loading"] = first["rss_peak_loading"] - first["rss_before"]
            rows.append(row)
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {platform.node()}, "
        f"{os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"Python {platform.python_version()}; {args.passages} passages of about "
        f"{rows[0]['passage_chars']:.0f} characters (batches of 16), {args.sentences} "
        f"sentences (batches of 64), {args.queries} questions one at a time; each provider "
        "in a fresh process (RSS relative to that process before the provider was made)."
    )
    print()
    print(table(rows))
    for row in rows:
        if "first_load_seconds" in row:
            print(
                f"\n`{row['provider']}`'s first load built the int8 model in a new cache "
                f"directory: {row['first_load_seconds']:.2f} s, peak RSS while loading "
                f"+{row['first_rss_peak_loading']:.0f} MiB."
            )


if __name__ == "__main__":
    main()
