"""The docs stay true: generated pages are current, every setting is documented."""

from __future__ import annotations

from pathlib import Path

from strongroom.api.error_pages import errors_markdown
from strongroom.api.matrix import capability_matrix
from strongroom.app import AREAS
from strongroom.settings import Settings

DOCS = Path(__file__).parents[1] / "docs"


def test_capability_matrix_is_current():
    assert (DOCS / "capabilities.md").read_text() == capability_matrix(*AREAS), (
        "regenerate with: .venv/bin/strongroom capabilities > docs/capabilities.md"
    )


def test_problem_code_pages_are_current_and_linked_from_the_api_reference():
    assert (DOCS / "errors.md").read_text() == errors_markdown(), (
        "regenerate with: .venv/bin/strongroom docs-errors > docs/errors.md"
    )
    assert "(errors.md)" in (DOCS / "api.md").read_text()


def test_every_setting_is_documented():
    text = (DOCS / "configuration.md").read_text()
    for name in Settings.model_fields:
        assert f"STRONGROOM_{name.upper()}" in text, name
