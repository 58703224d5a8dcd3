"""A parsing child's answer, pickle against the data-only format of strongroom/jobs/wire.py
(issue 52): the time to encode (in the child) and to decode (in the parent) the largest answer
ingestion sends, an IndexedPassages of 20,000 passages (IngestLimits.max_passages) of about
1,200 characters each with their index terms, and its size.

    .venv/bin/python bench/wire_bench.py [--passages N] [--repeat R]

Prints the best of R runs of each (CPU time of this process, in milliseconds: steadier than
wall time on a shared machine), and the sizes in MB. Each run encodes new str objects (see
`fresh`).
"""

from __future__ import annotations

import argparse
import pickle
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from strongroom.ingest.chunking import Chunk  # noqa: E402
from strongroom.ingest.passages import IndexedPassages, Passages  # noqa: E402
from strongroom.jobs import wire  # noqa: E402
from strongroom.text.analysis import index_texts  # noqa: E402

WORDS = (
    "the tenant shall pay rent quarterly in advance landlord premises clause lease term "
    "notwithstanding indemnify liability insurance repair covenant schedule annex déjà "
    "façade Zürich 12.5% £1,200 (b) section 8.1"
).split()


def answer(passages: int, ascii_only: bool = False) -> IndexedPassages:
    rng = random.Random(52)  # noqa: S311 (sample text)
    words_from = [word for word in WORDS if word.isascii()] if ascii_only else WORDS
    contents = []
    for _ in range(passages):
        words, size = [], 0
        while size < 1200:
            word = rng.choice(words_from)
            words.append(word)
            size += len(word) + 1
        contents.append(" ".join(words)[:1200])
    chunks = [Chunk(page_number=1 + i // 4, content=text) for i, text in enumerate(contents)]
    return IndexedPassages(Passages(page_count=passages // 4, chunks=chunks), index_texts(contents))


def fresh(value: IndexedPassages) -> IndexedPassages:
    """The same answer in new str objects: pickle keeps the UTF-8 it encodes a str to in
    the str (PyUnicode_AsUTF8AndSize), so a str pickled before is pickled again for free,
    which a child's answer never is."""
    passages = value.passages
    chunks = [Chunk(chunk.page_number, "".join(list(chunk.content))) for chunk in passages.chunks]
    terms = ["".join(list(text)) for text in value.terms]
    return IndexedPassages(Passages(passages.page_count, chunks), terms)


def best(repeat: int, function, make) -> tuple[float, object]:
    """The best time of `function(make())`, in ms, and its last result."""
    times, result = [], None
    for _ in range(repeat):
        argument = make()
        start = time.process_time()
        result = function(argument)
        times.append(time.process_time() - start)
        del argument
    return min(times) * 1000, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ascii", action="store_true", help="text of ASCII words only")
    options = parser.parse_args()
    value = answer(options.passages, options.ascii)
    pickle_dump, pickled = best(
        options.repeat, lambda v: pickle.dumps(("ok", v, True)), lambda: fresh(value)
    )
    pickle_load, unpickled = best(options.repeat, pickle.loads, lambda: pickled)
    wire_dump, pieces = best(
        options.repeat, lambda v: wire.dumps("ok", v, True), lambda: fresh(value)
    )
    sent = b"".join(pieces)
    wire_load, received = best(options.repeat, wire.loads, lambda: sent)
    assert unpickled == ("ok", value, True) and received == ("ok", value, True)
    text = "ASCII" if options.ascii else "some non-ASCII words in every passage"
    print(f"{options.passages} passages ({text}), CPU time, best of {options.repeat}")
    print("format  encode ms  decode ms  total ms  MB")
    for name, dump, load, payload in (
        ("pickle", pickle_dump, pickle_load, pickled),
        ("wire", wire_dump, wire_load, sent),
    ):
        size = len(payload) / 1e6
        print(f"{name:6}  {dump:9.1f}  {load:9.1f}  {dump + load:8.1f}  {size:.1f}")


if __name__ == "__main__":
    main()
