"""What ingestion's OCR (strongroom.ingest.ocr) reads of a site's scans (issue 51), measured
on scans made here.

Pages of the quality corpora's text are laid out and degraded by bench/scans.py (clean,
skewed, noisy, skewed-noisy, rotated 90/180/270), put in an image-only PDF and rendered back
at 200 dpi, as ingestion would read a scan; the shipped code reads them in a child process
(its CPU and peak memory its own). CER: Levenshtein distance over characters against the
text drawn, over its length, after NFKC, plain quotes and dashes and whitespace collapsed (or
removed: "CER no sp."); WER the same over words.

`--service`: through the real service, how long a 50-page scanned PDF (the quality corpus's
text, 45 lines a page, a little askew, one page in ten turned; bench/quality/scanned.py)
takes to be `ready` on the embedded default and its CPU (server and parsing children), and
what each hostile image costs: its outcome, the server's RSS before and after, its CPU.

    .venv/bin/python bench/ocr_bench.py            # 20 pages a variant
    .venv/bin/python bench/ocr_bench.py --pages 2  # a look
    .venv/bin/python bench/ocr_bench.py --service [--pages 50] [--bound 900]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
VARIANTS = ("clean", "skewed", "noisy", "skewed-noisy", "rotated")
# Documents from five corpora; pages are taken from each in turn.
DOCS = (
    "osha-1926/1926.1052-stairways",
    "far/far-52.232-5-payments",
    "concrete-spec/illinois-municipal-concrete",
    "fhwa-635/635.109-changed-conditions",
    "agency-clauses/va-852.236-88-contract-changes",
    "safety-large/1926.451-scaffolds-general-requirements",
)


# --- scoring --------------------------------------------------------------------------------
def levenshtein(a, b) -> int:
    """Edit distance between two sequences (characters or words): Hyyrö's bit-parallel form
    of Myers' algorithm, on Python's unbounded integers (a 4,000-character page in ms)."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    m = len(b)
    mask = (1 << m) - 1
    high = 1 << (m - 1)
    peq: dict = {}
    for i, item in enumerate(b):
        peq[item] = peq.get(item, 0) | (1 << i)
    pv, mv, score = mask, 0, m
    for item in a:
        eq = peq.get(item, 0)
        xv = eq | mv
        xh = ((((eq & pv) + pv) ^ pv) | eq) & mask
        ph = (mv | ~(xh | pv)) & mask
        mh = pv & xh
        if ph & high:
            score += 1
        elif mh & high:
            score -= 1
        ph = ((ph << 1) | 1) & mask
        mh = (mh << 1) & mask
        pv = (mh | ~(xv | ph)) & mask
        mv = ph & xv
    return score


# typographic quotes and dashes as typed on a keyboard (on both sides of a comparison)
PLAIN = str.maketrans("\u2018\u2019\u201c\u201d\u2014\u2013\u2010", "''\"\"---")


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(PLAIN)
    return " ".join(text.split())


def scores(ocr: str, truth: str) -> dict:
    o, t = normalise(ocr), normalise(truth)
    o_ns, t_ns = o.replace(" ", ""), t.replace(" ", "")
    return {
        "chars": len(t),
        "char_errors": levenshtein(o, t),
        "chars_ns": len(t_ns),
        "char_errors_ns": levenshtein(o_ns, t_ns),
        "words": len(t.split()),
        "word_errors": levenshtein(o.split(), t.split()),
    }


# --- the child ----------------------------------------------------------------------------
def child(manifest: list[dict]) -> dict:
    """Reads every page as ingestion does, blocks joined by lines; with the CPU of its imports
    and its peak memory (VmHWM: ru_maxrss would keep the parent's peak across exec)."""
    cpu0 = time.process_time()
    from PIL import Image

    from strongroom.ingest import ocr
    from strongroom.ingest.recognition import OcrLimits

    imported = time.process_time() - cpu0
    pages = []
    for entry in manifest:
        image = Image.open(entry["path"]).convert("L")
        image.info["dpi"] = (200, 200)
        start = time.process_time()
        read = ocr._recognise(image, OcrLimits())
        text = "\n".join(getattr(block, "text", block) for block in read.blocks)
        pages.append({"text": text, "cpu": time.process_time() - start, "ok": not read.gave_up})
    status = Path("/proc/self/status").read_text().splitlines()
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    return {"import_cpu": imported, "pages": pages, "rss": peak / 1024}


# --- the parent -----------------------------------------------------------------------------
def make_pages(folder: Path, count: int, seed: int) -> dict[str, list[dict]]:
    """``count`` pages of each variant as PNG files rendered back from an image-only PDF."""
    import pypdfium2
    import scans

    sources = scans.source_texts()
    per_doc = [scans.layout_pages([sources[name]]) for name in DOCS]
    chosen: list[tuple[str, scans.Page]] = []
    for turn in range(max(len(p) for p in per_doc)):
        for name, doc_pages in zip(DOCS, per_doc, strict=True):
            if turn < len(doc_pages) and len(chosen) < count:
                chosen.append((name, doc_pages[turn]))
    manifests: dict[str, list[dict]] = {}
    for variant in VARIANTS:
        degraded = [
            scans.degrade(page.image, variant, seed=seed, index=i)
            for i, (_, page) in enumerate(chosen)
        ]
        pdf = pypdfium2.PdfDocument(scans.image_pdf([image for image, _, _ in degraded]))
        manifests[variant] = []
        for i, ((name, page), (_, quarter, skew)) in enumerate(zip(chosen, degraded, strict=True)):
            path = folder / f"{variant}-{i:02}.png"
            pdf[i].render(scale=200 / 72, grayscale=True).to_pil().save(path)
            manifests[variant].append({"path": str(path), "variant": variant, "doc": name,
                                       "rotation": quarter, "skew": round(skew, 2),
                                       "truth": page.text})  # fmt: skip
        pdf.close()
    return manifests


def run_child(manifest: list[dict], folder: Path) -> dict:
    """`child` in a process of its own (one OCR thread, as ingestion runs it)."""
    path = folder / "manifest.json"
    path.write_text(json.dumps(manifest))
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(path)]
    environment = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=900)
    if done.returncode:
        raise RuntimeError(f"the OCR child failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"  OCR: {len(manifest)} pages, {time.time() - started:.0f} s", file=sys.stderr)
    return result


def summarise(rows: list[tuple[str, float, dict]]) -> dict:
    """rows: (text, cpu, entry) per page -> the table's numbers."""
    totals = dict.fromkeys(("chars", "char_errors", "chars_ns", "char_errors_ns", "words",
                            "word_errors"), 0)  # fmt: skip
    page_cers, cpus, read_turned = [], [], []
    for text, cpu, entry in rows:
        s = scores(text, entry["truth"])
        for key in totals:
            totals[key] += s[key]
        page_cers.append(s["char_errors"] / max(1, s["chars"]))
        cpus.append(cpu)
        if entry["rotation"]:
            read_turned.append(page_cers[-1] <= 0.05)
    cpu = sum(cpus)
    return {
        "pages": len(rows),
        "cer": totals["char_errors"] / totals["chars"],
        "cer_ns": totals["char_errors_ns"] / totals["chars_ns"],
        "wer": totals["word_errors"] / totals["words"],
        "worst_page_cer": max(page_cers),
        "cpu_per_page": cpu / len(rows),
        "pages_per_cpu_s": len(rows) / cpu if cpu else float("inf"),
        "turned_read": f"{sum(read_turned)}/{len(read_turned)}" if read_turned else "",
    }


def percent(value: float) -> str:
    return f"{100 * value:.2f}%"


def reading(args: argparse.Namespace) -> None:
    """OCR alone on the variants' pages, in a child process: the table."""
    from stack import print_footer, print_header, row

    started_at = print_header(
        "| engine / recipe | variant | pages | CER | CER no sp. | WER | worst page CER | "
        "CPU s/page | pages per CPU s | turned pages read | peak RSS MiB |"
    )
    results = []
    with tempfile.TemporaryDirectory(prefix="ocr-bench-") as tmp:
        folder = Path(tmp)
        started = time.process_time()
        manifests = make_pages(folder, args.pages or 20, args.seed)
        print(f"  pages made: {time.process_time() - started:.1f} s CPU", file=sys.stderr)
        every = [entry for variant in VARIANTS for entry in manifests[variant]]
        shipped = run_child(every, folder)
    for variant in VARIANTS:
        pages = zip(shipped["pages"], every, strict=True)
        s = summarise([(p["text"], p["cpu"], e) for p, e in pages if e["variant"] == variant])
        results.append((variant, s))
        print(row("strongroom.ingest.ocr", variant, s["pages"], percent(s["cer"]),
                  percent(s["cer_ns"]), percent(s["wer"]), percent(s["worst_page_cer"]),
                  f"{s['cpu_per_page']:.2f}", f"{s['pages_per_cpu_s']:.2f}",
                  s["turned_read"] or "-", f"{shipped['rss']:.0f}"))  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"results": results, "raw": shipped}, indent=1))
    print_footer(started_at)


# --- through the service --------------------------------------------------------------------
def hostile() -> list[tuple[str, str, object, str]]:
    """The issue's hostile images: (label, file name, maker, content type)."""
    sys.path.insert(0, str(HERE.parent))
    from tests.scans import image_pdf_of_pages, png_declaring, tiff_of_frames, truncated_jpeg

    return [
        ("PNG of 100 bytes declaring 100,000 x 100,000 pixels", "huge.png",
         lambda: png_declaring(100_000, 100_000), "image/png"),
        ("TIFF of 10,000 frames", "frames.tif", lambda: tiff_of_frames(10_000), "image/tiff"),
        ("PDF of 5,000 image pages", "pages.pdf", lambda: image_pdf_of_pages(5_000),
         "application/pdf"),
        ("JPEG cut in half", "cut.jpg", truncated_jpeg, "image/jpeg"),
    ]  # fmt: skip


def corpus_scan(count: int) -> bytes:
    """`count` printed pages of the quality corpus's Markdown and text, scanned."""
    sys.path.insert(0, str(HERE / "quality"))
    from scanned import printed_pages, scan_of

    corpus = HERE / "quality" / "corpus"
    paragraphs = [
        " ".join(paragraph.replace("#", "").split())
        for path in sorted(corpus.glob("*.md")) + sorted(corpus.glob("*.txt"))
        for paragraph in path.read_text().split("\n\n")
    ]
    pages = printed_pages(["\n\n".join(paragraphs)])
    return scan_of((pages * (count // len(pages) + 1))[:count])


async def through_service(deployed, pages: int, bound: float) -> None:
    """The scanned PDF, then each hostile image, uploaded to `strongroom dev`: a row each."""
    import httpx
    from stack import create_project, credentials, processes, row, rss_mib, tree_cpu, until_settled
    from stack import upload as send

    (credential,) = await credentials(deployed, "scans")
    key = credential.key
    async with (
        processes(deployed, settle=bound, STRONGROOM_EMBEDDINGS_PROVIDER="minilm") as running,
        httpx.AsyncClient(base_url=running.base, timeout=bound) as client,
    ):
        project = await create_project(client, key)
        scan = ("scan.pdf", corpus_scan(pages), "application/pdf")
        for label, name, make, mime in [(f"{pages}-page scanned PDF", *scan), *hostile()]:
            data = make() if callable(make) else make
            cpu, start, before = tree_cpu(running.roots), time.monotonic(), rss_mib(running.jobs)
            sent = await send(client, key, project, name, data, mime)
            document = await until_settled(client, key, sent["id"], bound)
            elapsed, used = time.monotonic() - start, tree_cpu(running.roots) - cpu
            error = (document["error"] or {}).get("code", "-")
            read = document["ocr_page_count"] or 0
            print(row(f"{label} ({len(data) / 1024:,.0f} KiB)",
                      f"{document['status']}, `{error}`, {read} pages by OCR",
                      f"{elapsed:.1f} s", f"{used:.1f} CPU s",
                      f"{before:.0f} -> {rss_mib(running.jobs):.0f} MiB"), flush=True)  # fmt: skip


def service(args: argparse.Namespace) -> None:
    import asyncio

    from stack import deployment, print_footer, print_header

    started_at = print_header(
        "| document | outcome | to ready or failed | CPU (server and children) | server RSS |"
    )
    with deployment("sqlite", "scans") as deployed:
        asyncio.run(through_service(deployed, args.pages or 50, args.bound))
    print_footer(started_at)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, help="pages per variant (20); --service: 50")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write every measurement here")
    parser.add_argument("--service", action="store_true", help="through `strongroom dev`")
    parser.add_argument("--bound", type=float, default=900.0, help="--service: s a document")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # its manifest
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child.read_text()))))
        return 0
    sys.path.insert(0, str(HERE))
    (service if args.service else reading)(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
