"""sqlite-vec against held numpy vectors (issue 16): why the embedded default holds vectors in
the process (strongroom.retrieval.vector_memory) instead of a `vec0` table. Prints the p50/p95
of a k=300 nearest-neighbour query over N random unit vectors of 384 dimensions, 90% of
them one tenant's:

- `vec0 tenant`: sqlite-vec's `vec0` table with the tenant as a partition key and the
  project as a metadata column (the filters inside the KNN query);
- `vec0 tenant+project`: the same narrowed to one project (10%);
- `numpy masked`: one float32 matrix in memory, the other tenant masked before the top 300
  (what vector_memory does, without its database round trip).

This Python cannot load SQLite extensions (no `enable_load_extension`), so it runs in a
scratch environment on pysqlite3-binary, outside the project's dependencies:

    .tools/bin/uv run --no-project --python .venv/bin/python \\
        --with sqlite-vec==0.1.9 --with pysqlite3-binary==0.5.4 --with numpy \\
        bench/sqlite_vec_bench.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import pysqlite3 as sqlite3
import sqlite_vec

QUERIES = 60  # the first ten warm up


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1e3


def main() -> None:
    print("| passages | search | p50 ms | p95 ms |")
    print("|---|---|---|---|")
    for count in (10_000, 100_000):
        random = np.random.default_rng(1)
        vectors = random.standard_normal((count, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        path = Path(tempfile.mkdtemp()) / "vectors.db"
        db = sqlite3.connect(path)
        db.enable_load_extension(True)
        sqlite_vec.load(db)
        db.execute(
            "CREATE VIRTUAL TABLE v USING vec0(tenant text partition key, project integer, "
            "embedding float[384] distance_metric=cosine)"
        )
        started = time.perf_counter()
        db.executemany(
            "INSERT INTO v(rowid, tenant, project, embedding) VALUES (?, ?, ?, ?)",
            (
                (row + 1, "a" if row % 10 else "b", row % 10, vectors[row].tobytes())
                for row in range(count)
            ),
        )
        db.commit()
        inserted = count / (time.perf_counter() - started)
        queries = random.standard_normal((QUERIES, 384)).astype(np.float32)
        knn = "SELECT rowid, distance FROM v WHERE embedding MATCH ? AND k = 300 AND tenant = 'a'"
        timings: dict[str, list[float]] = {}
        for name, sql in (("vec0 tenant", knn), ("vec0 tenant+project", knn + " AND project = 3")):
            timings[name] = []
            for query in queries:
                start = time.perf_counter()
                db.execute(sql, (query.tobytes(),)).fetchall()
                timings[name].append(time.perf_counter() - start)
        mask = np.arange(count) % 10 != 0
        timings["numpy masked"] = []
        for query in queries:
            start = time.perf_counter()
            cosines = vectors @ query
            cosines[~mask] = -np.inf
            np.argpartition(-cosines, 299)[:300]
            timings["numpy masked"].append(time.perf_counter() - start)
        for name, values in timings.items():
            values = values[10:]
            print(
                f"| {count:,} | {name} | {percentile(values, 0.5):.1f} | "
                f"{percentile(values, 0.95):.1f} |"
            )
        print(f"({count:,}: vec0 inserts {inserted:,.0f} rows/s)")
        db.close()


if __name__ == "__main__":
    main()
