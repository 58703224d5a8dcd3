"""The docs stay true: generated pages are current, every setting is documented."""

from __future__ import annotations

import re
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


def _outside_code_blocks(markdown: str) -> str:
    return re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)


def _any_parameter(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


def test_every_operation_of_the_served_openapi_has_an_entry_in_the_api_reference():
    """Issue 44 point 16: each `METHOD /path` of /api/v2/openapi.json is named in
    docs/api.md's prose or tables (not only inside a curl example), whatever its path
    parameters are called there."""
    from strongroom.app import create_app

    app = create_app(Settings())
    spec = app.extensions["QUART_SCHEMA"].openapi_provider.schema()
    entries = {
        f"{method.upper()} {_any_parameter(path)}"
        for method, path in re.findall(
            r"`(GET|POST|PUT|PATCH|DELETE) (/[^`\s?]*)",
            _outside_code_blocks((DOCS / "api.md").read_text()),
        )
    }
    missing = [
        f"{method.upper()} {path}"
        for path, item in spec["paths"].items()
        for method in item
        if f"{method.upper()} {_any_parameter(path)}" not in entries
    ]
    assert not missing, f"not in docs/api.md: {missing}"


def test_the_docs_index_lists_every_page():
    index = (DOCS / "README.md").read_text()
    for page in sorted(DOCS.glob("*.md")):
        if page.name != "README.md":
            assert f"]({page.name})" in index, page.name
