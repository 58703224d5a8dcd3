"""strongroom/templates/limits.py (issue 18): a template's archive is checked while it is
streamed, before python-docx loads it, against each of TemplateLimits' bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from strongroom.templates.limits import (
    TemplateError,
    TemplateLimits,
    TemplateTooLarge,
    check_template,
)
from tests.documents import make_docx_template, make_zip_bomb_docx
from tests.templates.hostile import MiB, PeakRss, paragraph_bomb

ROOMY = TemplateLimits(max_unzipped_bytes=1 << 30, max_xml_bytes=1 << 30, max_xml_elements=1 << 30)


@pytest.fixture
def write(tmp_path: Path):
    def run(data: bytes) -> Path:
        path = tmp_path / "template.docx"
        path.write_bytes(data)
        return path

    return run


def test_a_plain_template_passes(write) -> None:
    check_template(write(make_docx_template(["{{ a }}"])), TemplateLimits())


def test_declared_size_past_max_unzipped_bytes_is_refused(write) -> None:
    path = write(paragraph_bomb(8 * MiB))
    with pytest.raises(TemplateTooLarge, match=r"expands to \d+ bytes"):
        check_template(path, TemplateLimits(max_unzipped_bytes=4 * MiB))


def test_a_member_inflating_past_its_declared_size_is_refused(write) -> None:
    path = write(make_zip_bomb_docx(8 * MiB, lie_about_size=True))
    with pytest.raises(TemplateTooLarge, match=r"more than the \d+ bytes it declares"):
        check_template(path, ROOMY)


def test_xml_past_max_xml_bytes_is_refused(write) -> None:
    limits = TemplateLimits(max_unzipped_bytes=1 << 30, max_xml_bytes=2 * MiB)
    with pytest.raises(TemplateTooLarge, match="XML expands to more than"):
        check_template(write(paragraph_bomb(4 * MiB)), limits)


def test_elements_past_max_xml_elements_are_refused_in_bounded_memory(write) -> None:
    path = write(paragraph_bomb(48 * MiB))  # 8 million elements
    limits = TemplateLimits(max_unzipped_bytes=1 << 30, max_xml_bytes=1 << 30)
    with PeakRss() as memory:
        with pytest.raises(TemplateTooLarge, match="500000 XML elements"):
            check_template(path, limits)
    assert memory.growth_mib < 64  # a tree of 8 million elements would be GBs


def test_the_counter_builds_no_tree_even_within_the_limits(write) -> None:
    path = write(paragraph_bomb(48 * MiB))
    with PeakRss() as memory:
        check_template(path, ROOMY)
    assert memory.growth_mib < 64


def test_a_file_that_is_not_a_zip_is_a_template_error(write) -> None:
    with pytest.raises(TemplateError):
        check_template(write(b"{{ not a zip }}"), TemplateLimits())
