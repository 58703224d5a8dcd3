"""The visible text of an HTML page as blocks, read as a stream (issue 18): lxml's parser
calls back per tag and no tree is built, so memory grows with the text kept, not with the
markup (10 MB of `<b>a</b>` made BeautifulSoup's tree 1.5 GB).

Block elements (paragraphs, headings, list items, ...) are blocks of their own; inline markup
(`<b>`, `<a>`) never splits a line or a word; `<br>` is a line break; runs of white space are
one space except inside `<pre>`. Table rows are `Row`s, cells apart by ` | `, the first row of
a table its header. Scripts, styles and the `<title>` are not text of the page: the title is
what a browser shows in its tab, and quoting it as a sentence of the body misled answers
(issue 15)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from lxml import etree

from strongroom.ingest.chunking import CELL_SEPARATOR, Block, Row

_READ_CHARS = 64 * 1024
_HIDDEN = frozenset({"script", "style", "noscript", "template", "title", "head"})
_BLOCKS = frozenset(
    "address article aside blockquote caption dd div dl dt fieldset figcaption figure footer "
    "form h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section ul".split()
)
_CELLS = frozenset({"td", "th"})


def html_blocks(path: Path, charset: str) -> Iterator[Block]:
    """The blocks of the HTML file at `path`, in `charset`, as they are parsed."""
    encoding = "utf-8-sig" if charset == "utf-8" else charset
    with open(path, encoding=encoding) as handle:
        yield from _parsed(iter(lambda: handle.read(_READ_CHARS), ""))


def html_text_blocks(html: str) -> Iterator[Block]:
    """The blocks of an HTML document already in memory (an email's HTML body), read as
    `html_blocks` reads a file; none for a document of white space alone, which lxml's
    parser refuses."""
    if not html.strip():
        return
    yield from _parsed(
        html[start : start + _READ_CHARS] for start in range(0, len(html), _READ_CHARS)
    )


def _parsed(pieces: Iterable[str]) -> Iterator[Block]:
    """The blocks of the HTML fed in `pieces`, each drained as soon as its piece is parsed."""
    collector = _Collector()
    parser = etree.HTMLParser(target=collector, no_network=True)
    for piece in pieces:
        parser.feed(piece)
        yield from collector.drain()
    parser.close()
    collector.flush()
    yield from collector.drain()


class _Collector:
    """lxml parser target: turns tag and text events into blocks, kept until drained."""

    def __init__(self) -> None:
        self.ready: list[Block] = []
        self.lines: list[list[str]] = [[]]  # the current block's lines, as text pieces
        self.hidden = 0  # depth inside elements whose text is not shown
        self.pre = 0
        self.tables = 0  # depth of nested tables
        self.cells: list[str] | None = None  # the current row's cells
        self.in_cell = False
        self.first_row = True

    def drain(self) -> list[Block]:
        ready, self.ready = self.ready, []
        return ready

    def start(self, tag: str, attrib: dict) -> None:
        if tag in _HIDDEN:
            self.hidden += 1
        elif tag == "pre":
            self.pre += 1
        if tag == "table":
            if self.tables == 0:
                self.flush()
                self.first_row = True
            self.tables += 1
        elif self.tables == 1 and tag == "tr":
            self.end_row()
            self.cells = []
        elif self.tables == 1 and tag in _CELLS:
            self.end_cell()
            if self.cells is None:
                self.cells = []
            self.in_cell = True
        elif tag == "br":
            self.line_break()
        elif tag in _BLOCKS and not self.in_cell:
            self.flush()

    def end(self, tag: str) -> None:
        if tag in _HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag == "table" and self.tables:
            self.tables -= 1
            if self.tables == 0:
                self.end_row()
        elif self.tables == 1 and tag in _CELLS:
            self.end_cell()
        elif self.tables == 1 and tag == "tr":
            self.end_row()
        elif tag in _BLOCKS and not self.in_cell:
            self.flush()

    def data(self, text: str) -> None:
        if self.hidden:
            return
        if self.pre and not self.in_cell:
            first, *rest = text.split("\n")
            self.lines[-1].append(first)
            for line in rest:
                self.lines.append([line])
        else:
            self.lines[-1].append(text)

    def comment(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass

    def line_break(self) -> None:
        if self.in_cell:
            self.lines[-1].append(" ")
        else:
            self.lines.append([])

    def text(self) -> str:
        lines = (" ".join("".join(line).split()) for line in self.lines)
        self.lines = [[]]
        return "\n".join(line for line in lines if line)

    def flush(self) -> None:
        """End the current text block (text outside cells: a caption, text around rows)."""
        text = self.text()
        if text:
            self.ready.append(text)
            self.first_row = True  # rows after text start a table of their own

    def end_cell(self) -> None:
        if self.in_cell and self.cells is not None:
            self.cells.append(" ".join(self.text().split()))
        self.in_cell = False

    def end_row(self) -> None:
        self.end_cell()
        if self.cells is None:
            return
        cells, self.cells = self.cells, None
        while cells and not cells[-1]:
            cells.pop()
        if any(cells):
            self.flush()
            self.ready.append(Row(CELL_SEPARATOR.join(cells), header=self.first_row))
            self.first_row = False
