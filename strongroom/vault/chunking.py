"""Pages into chunks for search (D43): passages of about `TARGET_CHARS`, cut at paragraph,
then sentence, then word boundaries, never across pages, so every chunk has one page number."""

from __future__ import annotations

import re
from dataclasses import dataclass

TARGET_CHARS = 1200
_PARAGRAPHS = re.compile(r"\n\s*\n")
_SENTENCES = re.compile(r"(?<=[.!?])\s+")
_SPACES = re.compile(r"[ \t]+")
# Control characters other than tab and line breaks: never text, and search marks matches
# with two of them (strongroom.vault.search).
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class Chunk:
    page_number: int
    content: str


def chunk_pages(pages: list[str], target: int = TARGET_CHARS) -> list[Chunk]:
    """The pages' text in chunks of at most `target` characters, numbered from page 1; pages
    with no text give none."""
    if target < 1:
        raise ValueError("the chunk target must be at least one character")
    chunks: list[Chunk] = []
    for number, page in enumerate(pages, start=1):
        for content in _pack(_pieces(page, target), target):
            chunks.append(Chunk(number, content))
    return chunks


def _pieces(text: str, target: int) -> list[str]:
    """Paragraphs, with any longer than `target` split into sentences, then words."""
    pieces: list[str] = []
    for paragraph in _PARAGRAPHS.split(_CONTROLS.sub("", text)):
        paragraph = "\n".join(_SPACES.sub(" ", line).strip() for line in paragraph.splitlines())
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if len(paragraph) <= target:
            pieces.append(paragraph)
            continue
        for sentence in _SENTENCES.split(paragraph):
            while len(sentence) > target:
                cut = sentence.rfind(" ", 0, target)
                cut = cut if cut > target // 2 else target
                pieces.append(sentence[:cut].strip())
                sentence = sentence[cut:].strip()
            if sentence:
                pieces.append(sentence)
    return pieces


def _pack(pieces: list[str], target: int) -> list[str]:
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        if current and size + len(piece) + 2 > target:
            chunks.append("\n\n".join(current))
            current, size = [], 0
        current.append(piece)
        size += len(piece) + 2
    if current:
        chunks.append("\n\n".join(current))
    return chunks
