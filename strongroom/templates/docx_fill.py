"""`{{ field }}` placeholders in DOCX templates: finding them and filling them in without
losing the template's formatting. Every function here blocks: the template-fill job runs
them in a child process with the job's memory and CPU limits
(strongroom/jobs/bounded.py), after strongroom/ingest/office_limits.py (the guard ingestion
uses too) has checked the archive against the template's own bounds (TemplateLimits).

Syntax: `{{ name }}` or `{{ name | instruction }}`. A name is letters, digits, underscores,
spaces, dots and hyphens; it is trimmed and its inner white space collapsed to one space
(`{{ Client   name }}` is `Client name`), then compared case-sensitively. The instruction is
free text telling how to find the value (trimmed, white space collapsed; None when absent or
empty). Anything else between double braces (`{{ a/b }}`, `{{}}`, `{{ | x }}`) is literal
text: never reported, never touched.

Where: every paragraph of the body (tables and tables nested in them, content controls, text
boxes), then of each section's headers and footers (default, first page, even pages), in
that order. Footnotes, endnotes and comments are not searched.

How: Word splits text into runs wherever formatting, spell checking or editing history
changes, so a placeholder is looked for in a paragraph's text as a whole (its `w:t` nodes
joined), not run by run. Tabs, breaks, drawings, fields and other non-text run content end
a placeholder: one never spans them. A filled placeholder's value goes into the `w:t` where
the placeholder's first brace is (so it takes that run's formatting); the placeholder's
remaining characters are cut from the runs they were in, and runs left empty are removed.
Everything else in the paragraph keeps its runs, and the paragraph's properties are never
touched. In a value, a newline becomes a line break (`w:br`) and a tab a `w:tab` in that
run; the value is set as text (lxml escapes it), never parsed as markup.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from docx import Document as open_docx
from docx.document import Document
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from lxml import etree

from strongroom.ingest.limits import DocumentTooLarge, UnreadableDocument
from strongroom.ingest.office_limits import ArchiveTooLarge, check_docx
from strongroom.templates.fill_types import (
    MAX_INSTRUCTION_CHARS,
    FillReport,
    InstructionTooLong,
    Placeholder,
    TemplateError,
    TemplateLimits,
    TemplateTooLarge,
)

_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_W_P, _W_R, _W_T, _W_RPR = qn("w:p"), qn("w:r"), qn("w:t"), qn("w:rPr")
_DELETED = {qn("w:del"), qn("w:moveFrom")}
# Run children that are neither text nor a boundary: a placeholder may run across them.
_TRANSPARENT = {_W_RPR, qn("w:lastRenderedPageBreak")}
_BOUNDARY = "\x00"  # stands for non-text run content; XML text can never hold it
_PLACEHOLDER = re.compile(r"\{\{([^{}\x00]*)\}\}")
_NAME = re.compile(r"[\w.\- ]+")
_REFERENCE_ORDER = {"default": 0, "first": 1, "even": 2}
_LINE_ENDINGS = re.compile(r"\r\n|[\r\v\f]")
_NOT_XML = re.compile("[^\t\n\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def find_placeholders(path: Path, *, limits: TemplateLimits) -> list[Placeholder]:
    """Every distinct placeholder of the DOCX at `path`, in document order. A name's
    instruction is that of its first occurrence that has one. Raises TemplateError
    (TemplateTooLarge past `limits`; FileNotFoundError for no file at all)."""
    document = _open(path, limits)
    found: dict[str, Placeholder] = {}
    for root in _stories(document):
        for paragraph in root.iter(_W_P):
            text, _ = _paragraph_text(paragraph)
            for _start, _end, placeholder in _matches(text):
                known = found.get(placeholder.name)
                if known is None or (known.instruction is None and placeholder.instruction):
                    found[placeholder.name] = placeholder  # an update keeps the first position
    return list(found.values())


def fill_docx(
    source: Path, values: Mapping[str, str | None], target: Path, *, limits: TemplateLimits
) -> FillReport:
    """Write to `target` the DOCX at `source` with each placeholder whose name has a value
    replaced by it. Keys of `values` are compared like names (trimmed, inner white space
    collapsed); a None value counts as no value. Placeholders without one stay as they are
    and are reported as missing. Characters XML cannot hold are dropped from values; carriage
    returns, form feeds and vertical tabs count as newlines. Raises TemplateError (and
    FileNotFoundError for no file at all); errors writing `target` propagate as they are."""
    document = _open(source, limits)
    wanted = {
        _collapse(name): _clean(value)
        for name, value in values.items()
        if isinstance(name, str) and value is not None
    }
    replaced: dict[str, int] = {}
    missing: dict[str, None] = {}
    for root in _stories(document):
        for paragraph in list(root.iter(_W_P)):
            text, texts = _paragraph_text(paragraph)
            chosen: list[tuple[int, int, str]] = []
            for start, end, placeholder in _matches(text):
                name = placeholder.name
                if name not in wanted:
                    missing.setdefault(name, None)
                    continue
                chosen.append((start, end, wanted[name]))
                # A text box is written twice, for Word 2010+ and as a VML fallback: fill
                # both, count one.
                if not _in_fallback(paragraph):
                    replaced[name] = replaced.get(name, 0) + 1
            if chosen:
                _replace(texts, chosen)
    document.save(str(target))
    return FillReport(replaced=replaced, missing=list(missing))


def _open(path: Path, limits: TemplateLimits) -> Document:
    if not path.exists():
        raise FileNotFoundError(path)
    try:
        check_docx(
            path,
            max_unzipped=limits.max_unzipped_bytes,
            max_xml_tags=limits.max_xml_tags,
            max_xml_bytes=limits.max_xml_bytes,
        )
        return open_docx(str(path))
    except (ArchiveTooLarge, DocumentTooLarge) as error:
        raise TemplateTooLarge(str(error)) from error
    except UnreadableDocument as error:
        raise TemplateError(str(error)) from error
    except Exception as error:  # zipfile, lxml and python-docx fail in many ways
        raise TemplateError(
            f"The file could not be read as a DOCX ({type(error).__name__})."
        ) from error


def _stories(document: Document) -> Iterator[etree._Element]:
    """The XML roots to search: the document, then its headers and footers, section by
    section (then any the sections do not name)."""
    yield document.element
    part = document.part
    seen: set[int] = set()
    references = []
    for section in document.element.body.iter(qn("w:sectPr")):
        for tag in ("w:headerReference", "w:footerReference"):
            found = section.findall(qn(tag))
            found.sort(key=lambda ref: _REFERENCE_ORDER.get(ref.get(qn("w:type")), 0))
            references += [ref.get(qn("r:id")) for ref in found]
    rels = part.rels
    targets = [rels[rid].target_part for rid in references if rid in rels]
    targets += [
        rel.target_part
        for rel in rels.values()
        if rel.reltype in (RT.HEADER, RT.FOOTER) and not rel.is_external
    ]
    for target in targets:
        element = getattr(target, "element", None)
        if element is not None and id(target) not in seen:
            seen.add(id(target))
            yield element


def _paragraph_text(paragraph: etree._Element) -> tuple[str, list[tuple[etree._Element, int]]]:
    """The paragraph's text (its own `w:t` nodes joined, `_BOUNDARY` for other run content)
    and each `w:t` with its offset in that text. Runs of paragraphs nested in this one (text
    boxes) and deleted runs are left out."""
    parts: list[str] = []
    texts: list[tuple[etree._Element, int]] = []
    offset = 0
    for run in paragraph.iter(_W_R):
        if not _belongs_to(run, paragraph):
            continue
        for child in run:
            if not isinstance(child.tag, str) or child.tag in _TRANSPARENT:
                continue  # comments and processing instructions, formatting
            if child.tag == _W_T:
                text = child.text or ""
                texts.append((child, offset))
            else:
                text = _BOUNDARY
            parts.append(text)
            offset += len(text)
    return "".join(parts), texts


def _belongs_to(run: etree._Element, paragraph: etree._Element) -> bool:
    parent = run.getparent()
    while parent is not None and parent.tag != _W_P:
        if parent.tag in _DELETED:
            return False
        parent = parent.getparent()
    return parent is paragraph


def _in_fallback(paragraph: etree._Element) -> bool:
    return any(ancestor.tag == _MC_FALLBACK for ancestor in paragraph.iterancestors())


def _matches(text: str) -> Iterator[tuple[int, int, Placeholder]]:
    for match in _PLACEHOLDER.finditer(text):
        placeholder = _parse(match.group(1))
        if placeholder is not None:
            yield match.start(), match.end(), placeholder


def _parse(inner: str) -> Placeholder | None:
    name, _, instruction = inner.partition("|")
    name = _collapse(name)
    if not name or not _NAME.fullmatch(name):
        return None
    limit = MAX_INSTRUCTION_CHARS
    if len(instruction) > limit and len(_collapse(instruction)) > limit:
        raise InstructionTooLong(
            f"The instruction of field {name[:100]!r} is longer than "
            f"{MAX_INSTRUCTION_CHARS:,} characters."
        )
    return Placeholder(name=name, instruction=_collapse(instruction) or None)


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _clean(value: str) -> str:
    return _NOT_XML.sub("", _LINE_ENDINGS.sub("\n", str(value)))


def _replace(texts: list[tuple[etree._Element, int]], chosen: list[tuple[int, int, str]]) -> None:
    """Put each value (start, end, value: offsets in the paragraph's text) in place of the
    characters start..end: the value in the `w:t` holding `start`, the other characters cut
    from theirs."""
    for node, node_start in texts:
        text = node.text or ""
        node_end = node_start + len(text)
        overlapping = [c for c in chosen if c[0] < node_end and c[1] > node_start]
        if not overlapping:
            continue
        pieces: list[tuple[str, bool]] = []  # (text, is a value)
        position = node_start
        for start, end, value in overlapping:
            if start > position:
                pieces.append((text[position - node_start : start - node_start], False))
            if start >= node_start:
                pieces.append((value, True))
            position = max(position, end)
        if position < node_end:
            pieces.append((text[position - node_start :], False))
        _rewrite(node, pieces)


def _rewrite(node: etree._Element, pieces: list[tuple[str, bool]]) -> None:
    """Replace the `w:t` `node` by the pieces: kept text as it is, values with newlines and
    tabs as `w:br` and `w:tab`. The node itself carries the first text; a run left with no
    content is removed."""
    items: list[tuple[str, str]] = []  # ("t", text) | ("br", "") | ("tab", "")
    buffer: list[str] = []

    def flush() -> None:
        if "".join(buffer):
            items.append(("t", "".join(buffer)))
        buffer.clear()

    for text, is_value in pieces:
        if not is_value:
            buffer.append(text)
            continue
        for line_number, line in enumerate(text.split("\n")):
            if line_number:
                flush()
                items.append(("br", ""))
            for cell_number, cell in enumerate(line.split("\t")):
                if cell_number:
                    flush()
                    items.append(("tab", ""))
                buffer.append(cell)
    flush()

    run = node.getparent()
    index = run.index(node)
    run.remove(node)
    reused = False
    for kind, text in items:
        if kind == "t":
            element = node if not reused else OxmlElement("w:t")
            reused = True
            element.text = text
            element.set(qn("xml:space"), "preserve")
        else:
            element = OxmlElement(f"w:{kind}")
        run.insert(index, element)
        index += 1
    if all(isinstance(child.tag, str) and child.tag == _W_RPR for child in run):
        parent = run.getparent()
        if parent is not None:
            parent.remove(run)
