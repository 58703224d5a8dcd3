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


async def test_the_client_code_in_docs_mcp_runs_against_the_server(served_embedded):
    """Issue 44.14: docs/mcp.md had no client code. Its Python example is run as written
    (only its `__main__` part, which needs a live server's address and key, is not)."""
    from strongroom.tenants.models import RateLimitTier
    from tests.conftest import issue_credential

    text = (DOCS / "mcp.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {"__name__": "docs_mcp_example"}
    exec(compile(code, "docs/mcp.md", "exec"), namespace)  # noqa: S102 (our own docs)
    credential = await issue_credential(served_embedded.runtime, tier=RateLimitTier.ENTERPRISE)
    hits = await namespace["search"](served_embedded.mcp_url, credential.key, "retention")
    assert hits["data"] == []  # a new tenant: nothing to find, and no error
    bad = await issue_credential(served_embedded.runtime, scopes=["meta:read"])
    try:
        await namespace["search"](served_embedded.mcp_url, bad.key, "retention")
    except RuntimeError as error:
        assert str(error).startswith("insufficient_scope")
    else:
        raise AssertionError("a key without vault:read searched")
