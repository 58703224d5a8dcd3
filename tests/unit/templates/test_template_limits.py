"""A template's bounds (issue 18): before python-docx loads a template, its archive is checked
while streaming by the Office guard ingestion uses too (strongroom/ingest/office_limits.py),
against each of TemplateLimits' bounds; past one, reading fails with TemplateTooLarge."""

from __future__ import annotations

from pathlib import Path

import pytest

from strongroom.ingest.office_limits import check_docx
from strongroom.templates.docx_fill import (
    TemplateError,
    TemplateLimits,
    TemplateTooLarge,
    find_placeholders,
)
from tests.documents import make_docx_template, make_zip_bomb_docx
from tests.templates.hostile import MiB, PeakRss, paragraph_bomb

ROOMY = TemplateLimits(max_unzipped_bytes=1 << 30, max_xml_bytes=1 << 30, max_xml_tags=1 << 30)


@pytest.fixture
def write(tmp_path: Path):
    def run(data: bytes) -> Path:
        path = tmp_path / "template.docx"
        path.write_bytes(data)
        return path

    return run


def test_a_plain_template_passes(write) -> None:
    path = write(make_docx_template(["{{ a }}"]))
    assert [p.name for p in find_placeholders(path, limits=TemplateLimits())] == ["a"]


def test_declared_size_past_max_unzipped_bytes_is_too_large(write) -> None:
    path = write(paragraph_bomb(8 * MiB))
    with pytest.raises(TemplateTooLarge, match=r"expands to \d+ bytes, more than the limit"):
        find_placeholders(path, limits=TemplateLimits(max_unzipped_bytes=4 * MiB))


def test_a_member_inflating_past_its_declared_size_is_too_large(write) -> None:
    path = write(make_zip_bomb_docx(8 * MiB, lie_about_size=True))
    with pytest.raises(TemplateTooLarge, match=r"more than the \d+ bytes its header declares"):
        find_placeholders(path, limits=ROOMY)


def test_xml_past_max_xml_bytes_is_too_large(write) -> None:
    limits = TemplateLimits(max_unzipped_bytes=1 << 30, max_xml_bytes=2 * MiB)
    with pytest.raises(TemplateTooLarge, match=r"more than 2,097,152 bytes of XML"):
        find_placeholders(write(paragraph_bomb(4 * MiB)), limits=limits)


def test_tags_past_max_xml_tags_are_too_large_in_bounded_memory(write) -> None:
    path = write(paragraph_bomb(48 * MiB))  # 8 million elements
    limits = TemplateLimits(max_unzipped_bytes=1 << 30, max_xml_bytes=1 << 30)
    with PeakRss() as memory:
        with pytest.raises(TemplateTooLarge, match="500,000 XML tags"):
            find_placeholders(path, limits=limits)
    assert memory.growth_mib < 64  # a tree of 8 million elements would be GBs


def test_the_guard_builds_no_tree_even_within_the_limits(write) -> None:
    path = write(paragraph_bomb(48 * MiB))
    with PeakRss() as memory:
        check_docx(
            path,
            max_unzipped=ROOMY.max_unzipped_bytes,
            max_xml_tags=ROOMY.max_xml_tags,
            max_xml_bytes=ROOMY.max_xml_bytes,
        )
    assert memory.growth_mib < 64


def test_a_file_that_is_not_a_zip_is_a_template_error_not_too_large(write) -> None:
    with pytest.raises(TemplateError) as raised:
        find_placeholders(write(b"{{ not a zip }}"), limits=TemplateLimits())
    assert not isinstance(raised.value, TemplateTooLarge)
