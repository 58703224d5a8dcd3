"""Scanned pages made from text (issue 51) for bench/ocr_bench.py, with their truth: text laid
out on A4 (DejaVu Serif 11 pt, 25 mm margins, Pillow), then `clean`, `skewed` (1-3 degrees),
`noisy` (grey uneven paper, blur, noise, speckles), `skewed-noisy`, or `rotated` (90/180/270).
Every random choice comes from the seed and the page's index. The text is the quality
corpora's (no USACE EM 385-1-1 or UFGS text is let in); the tests' scans are tests/scans.py.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

HERE = Path(__file__).resolve().parent
QUALITY = HERE / "quality"
VARIANTS = ("clean", "skewed", "noisy", "skewed-noisy", "rotated")
ROTATIONS = (90, 180, 270)
DPI = 200
A4_MM = (210.0, 297.0)
FONT_DIRS = [Path(p) for p in ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu",
                                "/usr/local/share/fonts")]  # fmt: skip
# Kept out of every bench (bench/quality/SOURCES.md): never turned into pages.
FORBIDDEN = re.compile(r"EM[\s-]*385-1-1|\bUFGS\b|Unified Facilities Guide Spec", re.I)


@dataclass(frozen=True)
class Page:
    """A laid-out page before any degradation, and the text drawn on it (its truth)."""

    image: Image.Image
    text: str


# --- source texts ---------------------------------------------------------------------------
def plain_text(markdown: str) -> str:
    """The text a reader sees on paper: Markdown's heading marks and emphasis taken off."""
    out = []
    for line in markdown.splitlines():
        line = re.sub(r"^\s{0,3}#{1,6}\s+", "", line)
        line = re.sub(r"(\*\*|__)(.+?)\1", r"\2", line)
        line = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"\1", line)
        out.append(line)
    return "\n".join(out)


def source_texts() -> dict[str, str]:
    """The quality corpora's .txt and .md files by ``<corpus>/<stem>`` (bench/quality/corpus as
    ``far``), Markdown made plain."""
    files = sorted(QUALITY.glob("corpora/*/text/*"))
    files += sorted(QUALITY.glob("corpus/*"))
    texts = {}
    for path in files:
        if path.suffix not in (".txt", ".md"):
            continue
        corpus = path.parent.parent.name if path.parent.name == "text" else "far"
        text = path.read_text(encoding="utf-8")
        if FORBIDDEN.search(text) or FORBIDDEN.search(path.name):
            continue
        texts[f"{corpus}/{path.stem}"] = plain_text(text) if path.suffix == ".md" else text
    return texts


# --- layout ---------------------------------------------------------------------------------
def find_font(name: str = "DejaVuSerif.ttf") -> Path | None:
    """A TrueType font on this machine (DejaVu), or None."""
    for folder in FONT_DIRS:
        hits = sorted(folder.rglob(name)) if folder.is_dir() else []
        if hits:
            return hits[0]
    try:  # matplotlib carries DejaVu when the system has none
        import matplotlib

        hits = sorted(Path(matplotlib.__file__).parent.rglob(name))
        return hits[0] if hits else None
    except ImportError:
        return None


def load_font(size_px: int, name: str = "DejaVuSerif.ttf") -> ImageFont.FreeTypeFont:
    path = find_font(name)
    if path is not None:
        return ImageFont.truetype(str(path), size_px)
    return ImageFont.load_default(size=size_px)  # Pillow >= 10.1: scalable


def _wrap(paragraph: str, font: ImageFont.FreeTypeFont, width: int) -> list[str]:
    lines: list[str] = []
    line = ""
    for word in paragraph.split():
        candidate = f"{line} {word}" if line else word
        if font.getlength(candidate) <= width:
            line = candidate
            continue
        if line:
            lines.append(line)
        while font.getlength(word) > width:  # a word wider than the line: cut it
            cut = len(word)
            while cut > 1 and font.getlength(word[:cut]) > width:
                cut -= 1
            lines.append(word[:cut])
            word = word[cut:]
        line = word
    if line:
        lines.append(line)
    return lines


def layout_pages(texts: Iterable[str]) -> list[Page]:
    """Each text from the top of a new page onto as many A4 pages as it needs (paragraphs on
    blank lines, a short one not ending in a stop in bold, as a heading), greyscale."""
    width, height = (round(mm / 25.4 * DPI) for mm in A4_MM)
    margin = round(25.0 / 25.4 * DPI)
    size = round(11.0 / 72 * DPI)
    regular = load_font(size)
    bold = load_font(size, "DejaVuSerif-Bold.ttf")
    leading = round(size * 1.3)
    pages: list[Page] = []
    for text in texts:
        paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]
        image: Image.Image | None = None
        draw, y, drawn = None, 0, []
        for paragraph in paragraphs:
            heading = len(paragraph) < 120 and not paragraph.endswith((",", ";", "."))
            font = bold if heading else regular
            for line in _wrap(paragraph, font, width - 2 * margin):
                if image is None or y + leading > height - margin:
                    if image is not None:
                        pages.append(Page(image, "\n".join(drawn).strip()))
                    image = Image.new("L", (width, height), 255)
                    draw = ImageDraw.Draw(image)
                    y, drawn = margin, []
                draw.text((margin, y), line, font=font, fill=0)
                drawn.append(line)
                y += leading
            drawn.append("")
            y += leading // 2
        if image is not None:
            pages.append(Page(image, "\n".join(drawn).strip()))
    return pages


# --- degradation ----------------------------------------------------------------------------
def _skew(image: Image.Image, rng: np.random.Generator) -> tuple[Image.Image, float]:
    angle = float(rng.uniform(1.0, 3.0) * rng.choice([-1.0, 1.0]))
    return image.rotate(angle, resample=Image.Resampling.BICUBIC, fillcolor=255), angle


def _noise(image: Image.Image, rng: np.random.Generator) -> Image.Image:
    """Grey, uneven paper; ink a little faded and blurred; gaussian noise; dark speckles."""
    blurred = image.filter(ImageFilter.GaussianBlur(radius=0.5 * DPI / 200))
    ink = 1.0 - np.asarray(blurred, dtype=np.float32) / 255.0  # 1 where black
    h, w = ink.shape
    paper_level = rng.uniform(205, 230)
    # a slow gradient across the sheet, as from a lid not quite shut
    gy, gx = np.mgrid[0:h, 0:w].astype(np.float32)
    slope = rng.uniform(-18, 18, size=2)
    paper = paper_level + slope[0] * gy / h + slope[1] * gx / w
    ink_level = rng.uniform(25, 60)
    page = paper - (paper - ink_level) * ink
    page += rng.normal(0.0, 12.0, size=page.shape).astype(np.float32)
    # speckles: dust and toner, one to three pixels across
    count = int(rng.integers(600, 1200) * (DPI / 200) ** 2)
    ys = rng.integers(0, h, size=count)
    xs = rng.integers(0, w, size=count)
    radii = rng.integers(0, 2, size=count)
    levels = rng.uniform(20, 110, size=count)
    for y, x, r, level in zip(ys, xs, radii, levels, strict=True):
        page[max(0, y - r) : y + r + 1, max(0, x - r) : x + r + 1] = level
    return Image.fromarray(np.clip(page, 0, 255).astype(np.uint8), "L")


def degrade(
    page: Image.Image, variant: str, *, seed: int, index: int
) -> tuple[Image.Image, int, float]:
    """``page`` as the variant's scan: (image, quarter turn, skew); consecutive ``rotated``
    pages show all three turns."""
    rng = np.random.default_rng([seed, index])
    image, quarter, skew = page.convert("L"), 0, 0.0
    if variant in ("skewed", "skewed-noisy"):
        image, skew = _skew(image, rng)
    if variant in ("noisy", "skewed-noisy"):
        image = _noise(image, rng)
    if variant == "rotated":
        quarter = ROTATIONS[(seed + index) % 3]
        image = image.rotate(quarter, expand=True)  # exact for quarter turns
    return image, quarter, skew


# --- files ----------------------------------------------------------------------------------
def image_pdf(images: Sequence[Image.Image]) -> bytes:
    """An image-only PDF, a page an image, sized so that DPI gives A4."""
    buffer = io.BytesIO()
    first, *rest = images
    first.save(buffer, "PDF", save_all=True, append_images=rest, resolution=float(DPI))
    return buffer.getvalue()
