"""docs/mcp.md is the tool list the code generates (issue 20)."""

from pathlib import Path

from strongroom.app import AREAS
from strongroom.mcp.reference import tool_reference
from strongroom.mcp.tools import build_tools

DOCS = Path(__file__).parents[2] / "docs"


def test_docs_mcp_is_the_generated_tool_list():
    assert (DOCS / "mcp.md").read_text() == tool_reference(build_tools(AREAS)), (
        "regenerate with: .venv/bin/strongroom mcp-tools > docs/mcp.md"
    )
