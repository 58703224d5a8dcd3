"""The MCP server: tools/list and tools/call over the generated tools (strongroom/mcp/tools.py),
each call sent through the request path (strongroom/mcp/forward.py).

A capability's problem becomes a tool error (`isError`) whose text starts with the problem's
code and detail, followed by the whole problem document, so an assistant can act on it (retry
after `retry_after_seconds`, fix the named field). Citations of an answer are also given as
`resource_link`s to the cited passages.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from strongroom import __version__
from strongroom.mcp.forward import Answer, Forwarder
from strongroom.mcp.tools import ToolSpec
from strongroom.metrics import MCP_TOOL_CALLS
from strongroom.problems import Problem

INSTRUCTIONS = (
    "Strongroom holds a tenant's documents in projects. Search them (vault_search), ask "
    "questions answered with citations (chat_ask), fill DOCX templates and run workflows. "
    "Tools that start work answer at once with a job or run id: poll the matching get tool "
    "until its status is succeeded or failed. Write tools need an API key; with an OAuth "
    "sign-in they answer oauth_not_supported."
)


def create_server(tools: dict[str, ToolSpec], forwarder: Forwarder) -> Server:
    listed = [_tool(spec) for spec in tools.values()]

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = tools.get(params.name)
        if spec is None:
            MCP_TOOL_CALLS.labels("unknown", "not_found").inc()
            problem = Problem("not_found", f"No tool named {params.name!r}.")
            return _result(Answer(False, problem.body(forwarder.base_url, None)))
        authorization = ctx.request.headers.get("authorization", "") if ctx.request else ""
        answer = await forwarder.call(spec, params.arguments or {}, authorization)
        MCP_TOOL_CALLS.labels(spec.name, answer.problem_code or "ok").inc()
        return _result(answer)

    return Server(
        "strongroom",
        version=__version__,
        title="Strongroom",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _tool(spec: ToolSpec) -> types.Tool:
    capability = spec.capability
    return types.Tool(
        name=spec.name,
        title=capability.summary,
        description=spec.description,
        input_schema=spec.input_schema,
        output_schema=spec.output_schema,
        annotations=types.ToolAnnotations(
            title=capability.summary,
            read_only_hint=spec.read_only,
            destructive_hint=False,  # no capability deletes or overwrites
            idempotent_hint=spec.read_only,
            open_world_hint=False,
        ),
    )


def _result(answer: Answer) -> types.CallToolResult:
    if not answer.ok:
        body = answer.body if isinstance(answer.body, dict) else {}
        return _error(
            answer.problem_code or "internal_error", body.get("detail", "The call failed."), body
        )
    text = json.dumps(answer.body, ensure_ascii=False)
    content: list[Any] = [types.TextContent(text=text)]
    content += _citation_links(answer.body)
    structured = answer.body if isinstance(answer.body, dict) else {"result": answer.body}
    return types.CallToolResult(content=content, structured_content=structured)


def _error(code: str, detail: str, problem: dict) -> types.CallToolResult:
    content = [
        types.TextContent(text=f"{code}: {detail}"),
        types.TextContent(text=json.dumps(problem, ensure_ascii=False)),
    ]
    return types.CallToolResult(content=content, is_error=True)


def passage_uri(document_id: str, chunk_id: str) -> str:
    return f"strongroom://documents/{document_id}/passages/{chunk_id}"


def _citation_links(body: Any) -> list[types.ResourceLink]:
    """A `resource_link` per cited passage of an answer (chat_ask), with its text (for a
    `not_found` answer: the closest passages, for a person to read)."""
    if not isinstance(body, dict) or not isinstance(body.get("citations"), list):
        return []
    links = []
    for citation in body["citations"]:
        links.append(
            types.ResourceLink(
                uri=passage_uri(citation["document_id"], citation["chunk_id"]),
                name=f"{citation['document_name']}, page {citation['page_number']}",
                description=citation["content"],
                mime_type="text/plain",
            )
        )
    return links
