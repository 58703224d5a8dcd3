"""MCP tools generated from the capability declarations (strongroom/api/capability.py).

Every capability whose input and answer are JSON becomes a tool: its arguments are the
capability's path parameters, query and body fields (one flat object, so a model fills them
in one go), plus `idempotency_key` for a write that honours one (spec 4.1). The input and
output JSON Schemas come from the same pydantic models as the HTTP API's OpenAPI document.
Uploads, downloads and streams have no tool: MCP carries neither files nor Server-Sent Events
of ours, and each has a JSON sibling (list and status of documents, `chat.ask`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel

from strongroom.api.capability import Capability, Routes
from strongroom.problems import Problem

IDEMPOTENCY_ARGUMENT = "idempotency_key"
_PATH_PARAMETER = re.compile(r"<(?:(\w+):)?(\w+)>")
_CONVERTER_SCHEMAS = {
    "uuid": {"type": "string", "format": "uuid"},
    "int": {"type": "integer"},
    None: {"type": "string"},
    "string": {"type": "string"},
}


# What each path parameter is, by the path segment before it (issue 52: `project_id` and
# the other ids had no description; the OpenAPI document's path parameters have none).
_PATH_ARGUMENTS = {
    ("projects", "project_id"): "The project's `id` (vault_list_projects, vault_create_project).",
    ("documents", "document_id"): "The document's `id` (vault_list_documents, or its upload).",
    ("ingestion-jobs", "job_id"): "The ingestion job's id: the document's `ingestion_job_id` "
    "(vault_get_document, or its upload or reprocess).",
    ("conversations", "conversation_id"): "The conversation's `id` (chat_list_conversations, "
    "or `conversation_id` of a chat_ask answer).",
    ("fill", "job_id"): "The template fill's `job_id`, as templates_fill_stored answered it.",
    ("workflows", "workflow_id"): "The workflow's id, `wf_...` (workflows_list).",
    ("runs", "run_id"): "The workflow run's `run_id`, `run_...` (workflows_start_run).",
    ("endpoints", "endpoint_id"): "The webhook endpoint's `id` (webhooks_list_endpoints, "
    "webhooks_create_endpoint).",
    ("deliveries", "delivery_id"): "The delivery's `id` (webhooks_list_deliveries).",
    ("routines", "routine_id"): "The routine's `id` (routines_list, routines_create).",
    ("routine-runs", "run_id"): "The routine run's `id` (routines_list_runs, routines_start_run).",
}


@dataclass(frozen=True)
class ToolSpec:
    """One tool: the capability it calls and how its arguments become an HTTP request."""

    name: str
    capability: Capability
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    path_parameters: tuple[str, ...]
    query_fields: tuple[str, ...]

    @property
    def read_only(self) -> bool:
        """Reads, and POSTs that only read (search: its body is too big for a query)."""
        scopes = self.capability.scopes
        return not self.capability.is_write or bool(
            scopes and all(scope.endswith(":read") for scope in scopes)
        )

    def request(self, arguments: dict[str, Any]) -> tuple[str, dict[str, str], Any, str | None]:
        """(path, query, JSON body or None, Idempotency-Key or None) for `arguments`;
        unknown arguments go into the body, where the capability's validation names them."""
        arguments = dict(arguments)
        key = arguments.pop(IDEMPOTENCY_ARGUMENT, None) if self.capability.idempotent else None
        path = self.capability.path
        missing = [name for name in self.path_parameters if arguments.get(name) is None]
        if missing:
            raise Problem(
                "validation_error",
                "The tool's arguments are invalid.",
                errors=[{"field": name, "message": "Field required"} for name in missing],
            )
        for name in self.path_parameters:
            value = arguments.pop(name)
            path = _PATH_PARAMETER.sub(
                lambda match, name=name, value=value: (
                    _path_segment(value) if match.group(2) == name else match.group(0)
                ),
                path,
            )
        query = {
            name: _query_value(arguments.pop(name))
            for name in self.query_fields
            if arguments.get(name) is not None
        }
        for name in self.query_fields:
            arguments.pop(name, None)
        body = arguments if self.capability.body is not None else None
        return path, query, body, None if key is None else str(key)


def tool_name(capability: Capability) -> str:
    """`vault.list_projects` -> `vault_list_projects`: letters, digits and `_` only, which
    every assistant accepts."""
    return capability.name.replace(".", "_")


def is_tool(capability: Capability) -> bool:
    return not (capability.upload or capability.raw_response or capability.streams)


def build_tools(areas: Iterable[Routes]) -> dict[str, ToolSpec]:
    tools: dict[str, ToolSpec] = {}
    for routes in areas:
        for capability, _ in routes.entries:
            if is_tool(capability):
                spec = _tool(capability)
                tools[spec.name] = spec
    return tools


def _tool(capability: Capability) -> ToolSpec:
    schema: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
    definitions: dict[str, Any] = {}
    path_parameters = []
    for converter, name in _PATH_PARAMETER.findall(capability.path):
        schema["properties"][name] = dict(_CONVERTER_SCHEMAS.get(converter or None, {}))
        schema["properties"][name]["description"] = _path_argument(capability.path, name)
        schema["required"].append(name)
        path_parameters.append(name)
    query_fields = _merge(schema, definitions, capability.query, capability)
    _merge(schema, definitions, capability.body, capability)  # the rest is the body
    if capability.idempotent:
        schema["properties"][IDEMPOTENCY_ARGUMENT] = {
            "type": "string",
            "minLength": 1,
            "maxLength": 255,
            "description": "Idempotency key: send the same value to retry this call "
            "safely; a retry answers the first call's result and is not billed again.",
        }
    if definitions:
        schema["$defs"] = definitions
    if not schema["required"]:
        del schema["required"]
    return ToolSpec(
        name=tool_name(capability),
        capability=capability,
        description=_description(capability),
        input_schema=schema,
        output_schema=_output_schema(capability.response),
        path_parameters=tuple(path_parameters),
        query_fields=query_fields,
    )


def _merge(
    schema: dict[str, Any],
    definitions: dict[str, Any],
    model: type[BaseModel] | None,
    capability: Capability,
) -> tuple[str, ...]:
    """Add `model`'s fields to the tool's flat input schema; returns their names."""
    if model is None:
        return ()
    part = copy.deepcopy(model.model_json_schema(mode="validation"))
    for name, definition in part.pop("$defs", {}).items():
        if definitions.setdefault(name, definition) != definition:
            raise ValueError(f"{capability.name}: two different schemas named {name}")
    properties = part.get("properties", {})
    clash = set(properties) & (set(schema["properties"]) | {IDEMPOTENCY_ARGUMENT})
    if clash:
        raise ValueError(f"{capability.name}: argument names used twice: {sorted(clash)}")
    schema["properties"].update(properties)
    schema["required"] += part.get("required", [])
    if part.get("additionalProperties") is False:
        schema["additionalProperties"] = False
    return tuple(properties)


def _path_argument(path: str, name: str) -> str:
    """The path parameter's description: by the segment before it, else by its name."""
    segments = path.split("/")
    at = next(
        i
        for i, segment in enumerate(segments)
        if (match := _PATH_PARAMETER.fullmatch(segment)) and match.group(2) == name
    )
    known = _PATH_ARGUMENTS.get((segments[at - 1], name))
    return known or f"The {name.removesuffix('_id').replace('_', ' ')}'s id (in the path)."


def _output_schema(model: type[BaseModel] | None) -> dict[str, Any] | None:
    if model is None:
        return None
    schema = model.model_json_schema(mode="serialization")
    if "type" not in schema and "anyOf" in schema:  # a union of object models (meta.me)
        schema = {"type": "object", **schema}
    return schema if schema.get("type") == "object" else None


def _description(capability: Capability) -> str:
    """What a model needs to choose and call the tool: the capability's summary and
    description, what it costs, and whether OAuth tokens may call it (D15)."""
    parts = [capability.summary.rstrip(".") + "."]
    if capability.description:
        parts.append(capability.description)
    cost = f"Costs {capability.cost} credit{'s' if capability.cost != 1 else ''}"
    if capability.scopes:
        cost += f"; needs the scopes {', '.join(sorted(capability.scopes))}"
    parts.append(cost + ".")
    if not capability.oauth:
        parts.append("Needs an API key: OAuth sign-ins get oauth_not_supported.")
    if capability.idempotent:
        parts.append(f"Pass `{IDEMPOTENCY_ARGUMENT}` to make a retry safe.")
    return " ".join(parts)


def _path_segment(value: Any) -> str:
    return quote(str(value), safe="")


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
