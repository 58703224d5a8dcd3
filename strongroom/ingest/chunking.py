"""Pages into passages for search (D43, issue 15 and 18): passages of at most `target`
characters, never across pages, so every passage has one page number, in time linear in the
text.

A page is text (blocks apart by blank lines) or a sequence of blocks: text blocks (a
paragraph, a heading, a list item) and table rows (`Row`). Blocks are packed into a passage
apart by a blank line; a block longer than `target` is cut between sentences, the sentences
kept apart by the white space they had (a space, or a line break), and a sentence longer than
`target` between words. A table's rows are lines under its header row: a passage that
continues a table repeats the header, and a row is never cut across passages (unless it is
longer than a passage on its own). A clause's number or label alone (`8.`, `Clause 12`,
`(b)`) never ends a passage: it goes on to the next passage, with the text it numbers
(issue 27: passages ended `...not a penalty.\n8.`, and the clause after lost its number)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from strongroom.ingest.limits import Budget, DocumentTooLarge

TARGET_CHARS = 1200
CELL_SEPARATOR = " | "
_PARAGRAPHS = re.compile(r"\n\s*\n")
# Where a long paragraph may be cut: after a sentence end, not before a word in lower case
# (`4,000 P.S.I. after 28 days`: an abbreviation's full stop, the sentence going on).
_SENTENCE_BREAKS = re.compile(r"(?<=[.!?])\s+(?![a-z])")
# Runs of spaces and tabs, but not a lone space: text already normalised is not copied.
_SPACES = re.compile(r"\t[ \t]*| [ \t]+")
_LINE_BREAK = re.compile("[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")  # str.splitlines' own
# Control characters other than tab and line breaks: never text, and search marks matches
# with two of them (strongroom.retrieval.search).
_WHITE_SPACE = re.compile(r"\s+")  # what str.split() splits at
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_BLOCKS, _LINE = "\n\n", "\n"
# A clause's number or label standing alone: `8.`, `12.3`, `Clause 4`, `(b)`, `(iv)`.
_LABEL = re.compile(
    r"(?:(?:Clause|Section|Article|Part|Schedule|CLAUSE|SECTION|ARTICLE|PART|SCHEDULE)\s+)?"
    r"(?:\d{1,3}(?:\.\d{1,3}){0,4}[.):]?|[A-Z][.)]|\(\w{1,4}\))"
)


@dataclass(frozen=True)
class Chunk:
    page_number: int
    content: str


@dataclass(frozen=True, slots=True)
class Row:
    """A table row on one line, its cells joined by `CELL_SEPARATOR`. `header`: the first
    row of a table, repeated in every passage that holds the table's rows (a row that comes
    when no table is open starts one, as its header). A text block ends the table."""

    text: str
    header: bool = False


Block = str | Row
Page = str | Iterable[Block]


def table_row(cells: list[str], *, header: bool) -> Row | None:
    """A table's row of cells (each one line of text) as a `Row`, its empty trailing cells
    dropped (the empty ones before a cell with text keep their column); None when none has
    text. What DOCX, PPTX and the spreadsheets' tables share."""
    while cells and not cells[-1]:
        cells.pop()
    return Row(CELL_SEPARATOR.join(cells), header=header) if cells else None


def chunk_pages(
    pages: Iterable[Page],
    target: int = TARGET_CHARS,
    *,
    max_passages: int | None = None,
    max_text_chars: int | None = None,
) -> list[Chunk]:
    """The pages' text in passages of at most `target` characters, numbered from page 1;
    pages with no text give none. Raises DocumentTooLarge past `max_passages` passages or
    `max_text_chars` characters of text, as soon as it is passed."""
    if target < 1:
        raise ValueError("the chunk target must be at least one character")
    chunks: list[Chunk] = []
    text = Budget(max_text_chars, "characters of text") if max_text_chars else None
    for number, page in enumerate(carry_sentence_ends(pages), start=1):
        packer = _Packer(target, number, chunks, max_passages)
        for block in [page] if isinstance(page, str) else page:
            if type(block) is Row:
                if text is not None:
                    text.spend(len(block.text))
                packer.row(block)
            else:
                if text is not None:
                    text.spend(len(block))
                packer.text(block)
        packer.finish()
    return chunks


# A sentence cut by a page break (issue 51: a scan's pages, a PDF's) is finished on the page
# where it starts: the passage cites that page and holds the whole sentence. A page's text
# ends a sentence when its last block ends with one of these (a closing quote or bracket
# after it allowed); the next page goes on with it when its first block starts in lower
# case, with a number or a bracket, and is no list item or numbered clause.
_SENTENCE_END = re.compile(r"[.!?:;][\"'\u2019\u201d)\]]*\s*$")
_CARRIED_MAX_CHARS = 400  # more than this before the next sentence end: left where it is
# What a sentence goes on with: a word in lower case, a number, a bracket (`(92%) will
# pass`); a capital starts a sentence, a heading or a caption.
_GOES_ON = re.compile(r"[a-z0-9(]")
# What starts a list's item or a numbered clause: `(a)`, `a.`, `1.`, `12.3`, `iv)`, a bullet.
ITEM_START = re.compile(r"(?:\(?[a-zA-Z0-9]{1,4}[.)]|\d{1,3}(?:\.\d{1,3})+|[•·\-\u2013*])\s")


def carry_sentence_ends(pages: Iterable[Page]) -> Iterator[Page]:
    """The pages, each page's unfinished last sentence finished with the start of the next
    page's first block (up to its first sentence end, within its first paragraph), which
    that page then no longer holds. Pages read lazily (a spreadsheet's sheet, a generator of
    rows) are passed on as they are: only pages already in memory are looked into."""
    held: list[Block] | None = None
    for page in pages:
        if not isinstance(page, str | list):
            if held is not None:
                yield held
                held = None
            yield page
            continue
        blocks: list[Block] = [page] if isinstance(page, str) else list(page)
        if held is not None:
            _carry(held, blocks)
            yield held
        held = blocks
    if held is not None:
        yield held


def goes_on(text: str, following: str) -> bool:
    """Whether `following` is the rest of `text`'s last sentence: `text` ends without a
    sentence end, and `following` starts as a sentence goes on (not a capital, not a list
    item's label or a numbered clause: `a. The Contractor shall...`, `2.3 Scope`)."""
    if not text or _SENTENCE_END.search(text) or not _GOES_ON.match(following):
        return False
    return not ITEM_START.match(following)


def _carry(page: list[Block], following: list[Block]) -> None:
    if not page or not following or type(page[-1]) is not str or type(following[0]) is not str:
        return
    last, first = page[-1].rstrip(), following[0].lstrip()
    if not goes_on(last, first):
        return
    paragraph_end = first.find("\n\n")
    paragraph = first if paragraph_end < 0 else first[:paragraph_end]
    cut = _SENTENCE_BREAKS.search(paragraph)
    end, resume = (cut.start(), cut.end()) if cut else (len(paragraph), len(paragraph))
    if end > _CARRIED_MAX_CHARS:
        return
    joiner = "" if last.endswith("-") else " "
    page[-1] = f"{last}{joiner}{' '.join(first[:end].split())}"
    rest = first[resume:].lstrip()
    following[0:1] = [rest] if rest else []


def _paragraphs(text: str) -> Iterator[str]:
    """`text` split at blank lines, one paragraph at a time (a text of one paragraph is
    not copied)."""
    start = 0
    for match in _PARAGRAPHS.finditer(text):
        yield text[start : match.start()]
        start = match.end()
    yield text[start:]


class _Packer:
    """Pieces of one page into passages: `parts` hold the current passage's pieces, each
    with the white space that joins it to the one before."""

    def __init__(self, target: int, page: int, out: list[Chunk], limit: int | None) -> None:
        self.target, self.page, self.out, self.limit = target, page, out, limit
        self.parts: list[str] = []
        self.size = 0
        self.header: str | None = None  # of the table being packed
        self.header_alone = False  # no row of that table packed yet

    def text(self, block: str) -> None:
        self.end_table()
        for paragraph in _paragraphs(_CONTROLS.sub("", block)):
            if _LINE_BREAK.search(paragraph):
                lines = (_SPACES.sub(" ", line).strip() for line in paragraph.splitlines())
                paragraph = "\n".join(line for line in lines if line)
            else:
                paragraph = _SPACES.sub(" ", paragraph).strip()
            if len(paragraph) <= self.target:
                if paragraph:
                    self.add(paragraph, _BLOCKS)
                continue
            joiner, start = _BLOCKS, 0
            for match in _SENTENCE_BREAKS.finditer(paragraph):
                self.sentence(paragraph, start, match.start(), joiner)
                joiner = _LINE if "\n" in match.group() else " "
                start = match.end()
            self.sentence(paragraph, start, len(paragraph), joiner)

    def sentence(self, text: str, start: int, end: int, joiner: str) -> None:
        """text[start:end] as one piece, or cut between words into pieces of at most
        `target` (by positions, never by slicing what is left: linear)."""
        target = self.target
        while end - start > target:
            window = start + target
            cut = max(text.rfind(" ", start, window + 1), text.rfind("\n", start, window + 1))
            if cut > start + target // 2:
                following = cut + 1
            else:
                cut = following = window
            piece = text[start:cut].rstrip()
            if piece:
                self.add(piece, joiner)
            joiner = _LINE if cut < following and text[cut] == "\n" else " "
            start = following
            while start < end and text[start].isspace():
                start += 1
        piece = text[start:end].rstrip()
        if piece:
            self.add(piece, joiner)

    def row(self, row: Row) -> None:
        # One copy of the row, not a list of its words (a row of one 8 MB cell, issue 28).
        line = _WHITE_SPACE.sub(" ", _CONTROLS.sub("", row.text)).strip()
        if row.header or self.header is None:
            self.end_table()
            self.header, self.header_alone = line, True
            return
        if not line:
            return
        if self.header_alone:
            self.header_alone = False
            with_header = f"{self.header}{_LINE}{line}"
            if len(with_header) <= self.target:
                self.add(with_header, _BLOCKS)
                return
            self.add_line(self.header, _BLOCKS)
        size = self.size + 1 + len(line)
        if self.parts and size <= self.target:
            self.parts.append(_LINE + line)
            self.size = size
            return
        self.flush()
        header = self.header or ""
        if header and len(header) + 1 + len(line) <= self.target:
            self.add(f"{header}{_LINE}{line}", _BLOCKS)
        else:
            self.add_line(line, _BLOCKS)

    def add_line(self, line: str, joiner: str) -> None:
        if len(line) <= self.target:
            self.add(line, joiner)
        else:
            self.sentence(line, 0, len(line), joiner)

    def end_table(self) -> None:
        if self.header is not None and self.header_alone and self.header:
            self.add_line(self.header, _BLOCKS)
        self.header, self.header_alone = None, False

    def add(self, piece: str, joiner: str) -> None:
        if self.parts and self.size + len(joiner) + len(piece) > self.target:
            label = self.parts[-1].lstrip()
            if _LABEL.fullmatch(label) and len(label) + len(joiner) + len(piece) <= self.target:
                self.size -= len(self.parts.pop())  # a clause's number goes on with its text
                self.flush()
                self.parts, self.size = [label], len(label)
            else:
                self.flush()
        if not self.parts:
            joiner = ""
        self.parts.append(joiner + piece)
        self.size += len(joiner) + len(piece)

    def flush(self) -> None:
        if not self.parts:
            return
        self.out.append(Chunk(self.page, "".join(self.parts)))
        self.parts, self.size = [], 0
        if self.limit is not None and len(self.out) > self.limit:
            raise DocumentTooLarge(f"The document gives more than {self.limit:,} passages.")

    def finish(self) -> None:
        self.end_table()
        self.flush()


def page_texts(pages: Iterable[Page]) -> Iterator[str]:
    """Each page as plain text: blocks apart by blank lines, a table's rows line by line."""
    for page in pages:
        if isinstance(page, str):
            yield page
            continue
        parts: list[str] = []
        for block in page:
            if isinstance(block, Row):
                parts.append((_BLOCKS if block.header and parts else _LINE) + block.text)
            else:
                parts.append((_BLOCKS if parts else "") + block)
        yield "".join(parts).lstrip("\n")
