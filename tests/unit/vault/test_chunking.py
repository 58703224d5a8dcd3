"""Pages into search chunks (D43): within one page, about the target size, never empty."""

from __future__ import annotations

import random

import pytest

from strongroom.vault.chunking import TARGET_CHARS, Chunk, chunk_pages

SENTENCE = "The contractor poured the slab on level three."  # 46 characters


def _words(text: str) -> list[str]:
    return text.split()


def test_chunks_never_cross_pages() -> None:
    pages = [" ".join(f"alpha{i}" for i in range(300)), " ".join(f"beta{i}" for i in range(300))]
    chunks = chunk_pages(pages, target=200)
    assert {chunk.page_number for chunk in chunks} == {1, 2}
    for chunk in chunks:
        prefix = "alpha" if chunk.page_number == 1 else "beta"
        assert all(word.startswith(prefix) for word in _words(chunk.content))


def test_chunks_carry_the_number_of_their_page_counting_from_one() -> None:
    chunks = chunk_pages(["First page", "", "Third page"])
    assert chunks == [Chunk(1, "First page"), Chunk(3, "Third page")]


def test_chunks_respect_the_target_size() -> None:
    page = "\n\n".join(" ".join([SENTENCE] * random.Random(n).randint(1, 12)) for n in range(40))
    chunks = chunk_pages([page], target=300)
    assert len(chunks) > 10
    assert all(len(chunk.content) <= 300 for chunk in chunks)


def test_the_default_target_is_target_chars() -> None:
    chunks = chunk_pages([" ".join([SENTENCE] * 200)])
    assert len(chunks) > 1
    assert all(len(chunk.content) <= TARGET_CHARS for chunk in chunks)
    assert max(len(chunk.content) for chunk in chunks) > TARGET_CHARS // 2


def test_short_paragraphs_are_packed_into_one_chunk() -> None:
    chunks = chunk_pages(["Roof.\n\nWalls.\n\n\n\nFloor."], target=100)
    assert chunks == [Chunk(1, "Roof.\n\nWalls.\n\nFloor.")]


def test_a_paragraph_that_does_not_fit_is_not_glued_to_the_previous_chunk() -> None:
    chunks = chunk_pages(["a" * 60 + "\n\n" + "b" * 60], target=100)
    assert [chunk.content for chunk in chunks] == ["a" * 60, "b" * 60]


def test_long_paragraphs_are_cut_between_sentences() -> None:
    chunks = chunk_pages([" ".join([SENTENCE] * 20)], target=200)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.content.startswith("The contractor")
        assert chunk.content.endswith("level three.")


def test_long_sentences_are_cut_between_words() -> None:
    sentence = " ".join(f"word{i}" for i in range(400))  # no sentence end at all
    chunks = chunk_pages([sentence], target=150)
    assert all(len(chunk.content) <= 150 for chunk in chunks)
    assert [w for chunk in chunks for w in _words(chunk.content)] == _words(sentence)


def test_very_long_words_are_split_at_the_target() -> None:
    word = "".join(chr(ord("a") + i % 26) for i in range(5000))
    chunks = chunk_pages([f"Before {word} after"], target=1200)
    assert all(len(chunk.content) <= 1200 for chunk in chunks)
    assert "".join("".join(_words(chunk.content)) for chunk in chunks) == f"Before{word}after"


@pytest.mark.parametrize("page", ["", "   ", "\n\n\n", "\t \n \f", "\x00\x00", " \x00 \n\x00"])
def test_pages_without_text_give_no_chunks(page: str) -> None:
    assert chunk_pages([page, page]) == []


def test_nul_characters_are_removed() -> None:
    [chunk] = chunk_pages(["con\x00crete\x00 slab"])
    assert chunk.content == "concrete slab"


def test_runs_of_spaces_and_tabs_become_one_space() -> None:
    [chunk] = chunk_pages(["  steel \t\t beams  \n   in   place  "])
    assert chunk.content == "steel beams\nin place"


def test_a_target_below_one_character_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        chunk_pages(["text"], target=0)


def test_no_text_is_lost_reordered_or_oversized() -> None:
    """Seeded random pages of words, sentence ends, blank lines, tabs, NULs and odd spaces:
    every chunk fits its target and is not blank, and each page's chunks hold exactly its
    words (NULs aside), in order."""
    rng = random.Random(20240301)
    vocabulary = ["slab", "rebar", "formwork", "inspection", "x" * 90, ".", "!", "?"]
    separators = [" ", "  ", "\n", "\n\n", "\t", "\x00", "\r\n", "\u00a0", ". "]
    for _ in range(300):
        target = rng.randint(1, 250)
        pages = [
            "".join(
                rng.choice(vocabulary) + rng.choice(separators) for _ in range(rng.randint(0, 80))
            )
            for _ in range(rng.randint(0, 4))
        ]
        chunks = chunk_pages(pages, target=target)
        for chunk in chunks:
            assert 0 < len(chunk.content) <= target
            assert chunk.content.strip()
            assert "\x00" not in chunk.content
        for number, page in enumerate(pages, start=1):
            expected = "".join(page.replace("\x00", "").split())
            got = "".join(
                "".join(chunk.content.split()) for chunk in chunks if chunk.page_number == number
            )
            assert got == expected
