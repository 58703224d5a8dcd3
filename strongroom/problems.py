"""Errors are data (spec 2.7 and 7, D4): one exception type, raised anywhere, rendered in one
place as an RFC 7807 problem whose `code` clients branch on."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field
from quart import Response

PROBLEM_CONTENT_TYPE = "application/problem+json"

# code -> (status, title). The one list of codes the API can answer with.
CATALOGUE: dict[str, tuple[int, str]] = {
    "bad_request": (400, "Bad request"),
    "credentials_in_request": (400, "Credentials outside the Authorization header"),
    "unsupported_file_type": (400, "Unsupported file type"),
    "missing_api_key": (401, "Missing credentials"),
    "invalid_api_key": (401, "Invalid API key"),
    "api_key_revoked": (401, "API key revoked"),
    "api_key_expired": (401, "API key expired"),
    "tenant_disabled": (401, "Tenant disabled"),
    "user_inactive": (401, "User inactive"),
    "payment_required": (401, "Payment required"),
    "invalid_token": (401, "Invalid access token"),
    "insufficient_scope": (403, "Insufficient scope"),
    "permission_denied": (403, "Permission denied"),
    "oauth_not_supported": (403, "OAuth tokens not supported here"),
    "not_found": (404, "Not found"),
    "method_not_allowed": (405, "Method not allowed"),
    "request_timeout": (408, "Request timeout"),
    "idempotency_in_progress": (409, "Request with this Idempotency-Key in progress"),
    "payload_too_large": (413, "Payload too large"),
    "file_too_large": (413, "File too large"),
    "unsupported_media_type": (415, "Unsupported media type"),
    "validation_error": (422, "Validation error"),
    "template_too_large": (422, "Template too large"),
    "job_resource_limit": (422, "Job resource limit exceeded"),
    "invalid_cursor": (422, "Invalid cursor"),
    "idempotency_key_reused": (422, "Idempotency-Key reused with a different body"),
    "invalid_idempotency_key": (422, "Invalid Idempotency-Key"),
    "unreadable_document": (422, "Unreadable document"),
    "document_too_large": (422, "Document too large"),
    "rate_limited": (429, "Rate limited"),
    "internal_error": (500, "Internal error"),
    "not_implemented": (501, "Not implemented"),
    "upstream_error": (502, "Answer engine failed"),
    "service_unavailable": (503, "Service unavailable"),
    "upstream_timeout": (504, "Answer engine timed out"),
}


class Problem(Exception):
    """Raise to answer with a problem; `extensions` become extra body members."""

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        headers: dict[str, str] | None = None,
        **extensions: Any,
    ) -> None:
        super().__init__(f"{code}: {detail}")
        self.status, self.title = CATALOGUE[code]
        self.code = code
        self.detail = detail
        self.headers = headers or {}
        self.extensions = extensions

    def body(self, base_url: str, request_id: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": f"{base_url}/errors/{self.code}",
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
            "request_id": request_id,
        }
        body.update(self.extensions)
        return body

    def to_response(self, base_url: str, request_id: str | None) -> Response:
        response = Response(
            json.dumps(self.body(base_url, request_id)),
            status=self.status,
            content_type=PROBLEM_CONTENT_TYPE,
        )
        response.headers.update(self.headers)
        return response


class FieldError(BaseModel):
    field: str = Field(description="Dotted path of the offending field, or `body`.")
    message: str


class ProblemDocument(BaseModel):
    """An RFC 7807 problem (spec 2.7)."""

    type: str = Field(description="`{base_url}/errors/<code>`")
    title: str
    status: int
    detail: str
    code: str = Field(description="Machine-readable; clients branch on this.")
    request_id: str | None = Field(description="The `X-Request-Id` of the response (D2).")
    missing_scopes: list[str] | None = Field(
        default=None, description="Present for `insufficient_scope`."
    )
    errors: list[FieldError] | None = Field(
        default=None, description="Present for `validation_error` (D4)."
    )
