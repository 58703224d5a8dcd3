"""Scans through the real service (issue 51): how long a 50-page scanned PDF takes to be
`ready` on the embedded default and how much CPU it costs (the dev server and its parsing
children), and what each hostile image of the issue costs the service: its outcome, the
server's resident memory before and after, its CPU.

The pages are the quality corpus's text (bench/quality/corpus), laid out 45 lines a page on
A4 at 200 dpi and scanned a little askew and soft (tests/scans.py), one page in ten upside
down or sideways. The default configuration (`minilm` meaning on: it follows `ready`, issue 50,
and is not counted here).

    .venv/bin/python bench/scan_bench.py [--pages 50] [--bound 900]
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import httpx

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "quality"))
sys.path.insert(0, str(HERE.parent))

from meaning_bench import Upload, auth, started, upload  # noqa: E402
from scanned import printed_pages, scan_of  # noqa: E402
from stack import (  # noqa: E402
    credentials,
    deployment,
    parser,
    print_footer,
    print_header,
    rss_mib,
    tree_cpu,
)
from vault_bench import create_project  # noqa: E402

from tests.scans import (  # noqa: E402
    image_pdf_of_pages,
    png_declaring,
    tiff_of_frames,
    truncated_jpeg,
)

CORPUS = HERE / "quality" / "corpus"


def corpus_pages(count: int) -> list[str]:
    """`count` printed pages of the quality corpus's Markdown and text, its paragraphs one
    after another (bench/quality/scanned.py lays them out, 45 lines of 78 characters)."""
    paragraphs = [
        " ".join(paragraph.replace("#", "").split())
        for path in sorted(CORPUS.glob("*.md")) + sorted(CORPUS.glob("*.txt"))
        for paragraph in path.read_text().split("\n\n")
    ]
    pages = printed_pages(["\n\n".join(paragraphs)])
    return (pages * (count // len(pages) + 1))[:count]


HOSTILE = [
    ("PNG of 100 bytes declaring 100,000 x 100,000 pixels", "huge.png",
     lambda: png_declaring(100_000, 100_000), "image/png"),
    ("TIFF of 10,000 frames", "frames.tif", lambda: tiff_of_frames(10_000), "image/tiff"),
    ("PDF of 5,000 image pages", "pages.pdf", lambda: image_pdf_of_pages(5_000),
     "application/pdf"),
    ("JPEG cut in half", "cut.jpg", truncated_jpeg, "image/jpeg"),
]  # fmt: skip


async def until_settled(client, credential, document_id: str, bound: float) -> dict:
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        document = (
            await client.get(f"/api/v2/vault/documents/{document_id}", headers=auth(credential))
        ).json()
        if document["status"] != "processing":
            return document
        await asyncio.sleep(0.5)
    raise TimeoutError(f"not settled within {bound:.0f} s")


async def run(deployed, pages: int, bound: float) -> None:
    (credential,) = await credentials(deployed, "scans")
    async with (
        started(deployed, "minilm", bound) as running,
        httpx.AsyncClient(base_url=running.base, timeout=bound) as client,
    ):
        project = await create_project(client, credential.key)
        data = scan_of(corpus_pages(pages))
        cpu, start = tree_cpu(running.roots), time.monotonic()
        sent = await upload(
            client, credential, project, Upload("scan.pdf", data, "application/pdf")
        )
        document = await until_settled(client, credential, sent["id"], bound)
        elapsed, used = time.monotonic() - start, tree_cpu(running.roots) - cpu
        print(
            f"| {pages}-page scanned PDF ({len(data) / 2**20:.1f} MiB) | "
            f"{document['status']}, {document['ocr_page_count']} pages by OCR | "
            f"{elapsed:.1f} s | {used:.1f} CPU s ({pages / used:.2f} pages per CPU s) | |",
            flush=True,
        )
        for label, name, make, mime in HOSTILE:
            data, before = make(), rss_mib(running.jobs)
            cpu, start = tree_cpu(running.roots), time.monotonic()
            sent = await upload(client, credential, project, Upload(name, data, mime))
            document = await until_settled(client, credential, sent["id"], bound)
            error = (document["error"] or {}).get("code", "-")
            print(
                f"| {label} ({len(data) / 1024:,.0f} KiB) | {document['status']}, `{error}` | "
                f"{time.monotonic() - start:.1f} s | {tree_cpu(running.roots) - cpu:.1f} CPU s "
                f"| {before:.0f} -> {rss_mib(running.jobs):.0f} MiB |",
                flush=True,
            )


def main() -> None:
    arguments = parser(__doc__)
    arguments.add_argument("--pages", type=int, default=50)
    arguments.add_argument("--bound", type=float, default=900.0, help="seconds per document")
    args = arguments.parse_args()
    started_at = print_header(
        "| document | outcome | to ready or failed | CPU (server and children) | server RSS |"
    )
    with deployment("sqlite", "scans") as deployed:
        asyncio.run(run(deployed, args.pages, args.bound))
    print_footer(started_at)


if __name__ == "__main__":
    main()
