"""Errors are data (spec 2.7 and 7, D4): one exception type, raised anywhere, rendered in one
place as an RFC 7807 problem whose `code` clients branch on."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field
from quart import Response
from ulid import ULID

PROBLEM_CONTENT_TYPE = "application/problem+json"


@dataclass(frozen=True)
class ProblemType:
    """One code the API can answer with, and what its page at `/errors/<code>` says
    (strongroom/api/error_pages.py, docs/errors.md)."""

    status: int
    title: str
    when: str  # when it happens
    action: str  # what the client should do


# The one registry of the codes the API can answer with.
PROBLEM_TYPES: dict[str, ProblemType] = {
    "bad_request": ProblemType(
        400,
        "Bad request",
        "The request could not be read: a malformed multipart body, more form parts than "
        "allowed, or a request the server cannot parse.",
        "Check the request's encoding against docs/api.md and send it again; retrying the "
        "same bytes gives the same answer.",
    ),
    "credentials_in_request": ProblemType(
        400,
        "Credentials outside the Authorization header",
        "An API key was found in the query string, a cookie, a JSON body field or a "
        "multipart form field (its name or value), or an upload's file name. The "
        "request is refused even when the Authorization header is valid.",
        "Send the key only as `Authorization: Bearer <key>`. Revoke the key that was "
        "sent elsewhere and create a new one: it may now sit in logs or proxies.",
    ),
    "unsupported_file_type": ProblemType(
        400,
        "Unsupported file type",
        "The uploaded file's content is none of the types Strongroom reads (the upload's "
        "`detail` lists them; docs/api.md, Documents), or a template is not a readable DOCX; "
        "the type is read from the content, not the file name.",
        "Convert the file to a supported type and upload it again.",
    ),
    "missing_api_key": ProblemType(
        401,
        "Missing credentials",
        "The request has no `Authorization` header (or not a `Bearer` one).",
        "Send `Authorization: Bearer <key>` with an API key (or an OAuth access token "
        "where the capability accepts one).",
    ),
    "invalid_api_key": ProblemType(
        401,
        "Invalid API key",
        "The bearer credential is not a key this server issued: misspelt, truncated, or "
        "from another deployment.",
        "Copy the key again from where it was created; keys are shown once, so create a "
        "new one if it is lost.",
    ),
    "api_key_revoked": ProblemType(
        401,
        "API key revoked",
        "The key was revoked; it stopped working at once, on every replica.",
        "Use another key of the tenant, or have an administrator create a new one.",
    ),
    "api_key_expired": ProblemType(
        401,
        "API key expired",
        "The key's expiry time has passed.",
        "Create a new key (optionally with a later `--expires-at`) and use it instead.",
    ),
    "tenant_disabled": ProblemType(
        401,
        "Tenant disabled",
        "The key's tenant has been disabled by an administrator.",
        "Contact the deployment's administrator; no key of the tenant works until it is "
        "enabled again.",
    ),
    "user_inactive": ProblemType(
        401,
        "User inactive",
        "The user the key belongs to has been deactivated.",
        "Use a key of an active user of the tenant, or ask an administrator to reactivate "
        "the user.",
    ),
    "payment_required": ProblemType(
        401,
        "Payment required",
        "A `live` key's tenant has no credits left (test keys are free). The status is 401, "
        "not 402, as the API's contract has it.",
        "Have an administrator grant credits (`strongroom tenants grant-credits`), or use a "
        "`test` key while developing.",
    ),
    "invalid_token": ProblemType(
        401,
        "Invalid access token",
        "An OAuth access token was sent that is expired, revoked, malformed, not issued for "
        "this API, or not accepted by this deployment.",
        "Refresh the token (or run the authorization flow again) and retry with the new one.",
    ),
    "insufficient_scope": ProblemType(
        403,
        "Insufficient scope",
        "The credential lacks a scope the capability needs; `missing_scopes` lists them.",
        "Use a key (or request a token) with the scopes in `missing_scopes`; "
        "docs/capabilities.md lists each capability's scopes.",
    ),
    "permission_denied": ProblemType(
        403,
        "Permission denied",
        "The credential is valid but may not do this.",
        "Use a credential allowed to do it, or ask the tenant's administrator.",
    ),
    "oauth_not_supported": ProblemType(
        403,
        "OAuth tokens not supported here",
        "An OAuth access token was sent to a capability that only API keys may call.",
        "Call this capability with an API key.",
    ),
    "not_found": ProblemType(
        404,
        "Not found",
        "Nothing is at this path, or the resource belongs to another tenant or environment "
        "(those answer 404 too, so their existence is not revealed).",
        "Check the path and the id, and that the key's tenant and environment (`live` or "
        "`test`) are the ones that created the resource.",
    ),
    "method_not_allowed": ProblemType(
        405,
        "Method not allowed",
        "The path exists but does not accept this HTTP method.",
        "Use one of the methods in the `Allow` header.",
    ),
    "request_timeout": ProblemType(
        408,
        "Request timeout",
        "The request body arrived too slowly: no data for "
        "`STRONGROOM_UPLOAD_IDLE_TIMEOUT_SECONDS`, or not all of it within "
        "`STRONGROOM_UPLOAD_TIMEOUT_SECONDS`.",
        "Send the body again over a faster or steadier connection; retry with the same "
        "`Idempotency-Key` for writes.",
    ),
    "idempotency_in_progress": ProblemType(
        409,
        "Request with this Idempotency-Key in progress",
        "A request with the same `Idempotency-Key` is still running.",
        "Wait the `Retry-After` seconds (5) and retry with the same key and body: you then "
        "get the first request's response.",
    ),
    "payload_too_large": ProblemType(
        413,
        "Payload too large",
        "The request body is over the limit for JSON bodies.",
        "Send a smaller body; large content goes in as an uploaded document.",
    ),
    "file_too_large": ProblemType(
        413,
        "File too large",
        "The uploaded file is over the upload limit; `max_bytes` gives it.",
        "Upload a smaller file, or split it into several documents.",
    ),
    "unsupported_media_type": ProblemType(
        415,
        "Unsupported media type",
        "The body's `Content-Type` is not what the capability reads: `application/json` for "
        "JSON capabilities, `multipart/form-data` for uploads.",
        "Send the body with the `Content-Type` docs/api.md gives for the capability.",
    ),
    "validation_error": ProblemType(
        422,
        "Validation error",
        "The body or the query is invalid: a missing or unknown field, a value of the wrong "
        "type or out of range, or a body that is not a JSON object. `errors` lists each "
        "`field` with a `message`.",
        "Fix the fields named in `errors` and send the request again.",
    ),
    "template_too_large": ProblemType(
        422,
        "Template too large",
        "A template-fill job's DOCX expands past the template bounds (its inflated size, the "
        "size of its XML or its number of XML tags: docs/configuration.md).",
        "Simplify the template (fewer pages, tables or embedded parts) and start the fill "
        "again; the job's `error.detail` names the bound.",
    ),
    "job_resource_limit": ProblemType(
        422,
        "Job resource limit exceeded",
        "A job needed more memory or CPU time than one job may use "
        "(`STRONGROOM_JOB_MEMORY_LIMIT_BYTES`, `STRONGROOM_JOB_CPU_LIMIT_SECONDS`).",
        "Split the work (a smaller template or document) and start it again; retrying the "
        "same input fails the same way.",
    ),
    "invalid_cursor": ProblemType(
        422,
        "Invalid cursor",
        "The `cursor` query parameter is not one this list returned, or it was made for "
        "another list or other filters.",
        "Start again from the first page (no `cursor`) and follow `next_cursor` as given.",
    ),
    "idempotency_key_reused": ProblemType(
        422,
        "Idempotency-Key reused with a different body",
        "The `Idempotency-Key` was used within 24 hours for a request with another body.",
        "Use a new key for a new request; reuse a key only to retry the very same request.",
    ),
    "invalid_idempotency_key": ProblemType(
        422,
        "Invalid Idempotency-Key",
        "The `Idempotency-Key` header is empty, longer than 255 characters, or holds "
        "characters outside the visible ASCII range.",
        "Send a key of 1 to 255 visible ASCII characters, a UUID for example.",
    ),
    "unreadable_document": ProblemType(
        422,
        "Unreadable document",
        "The document could not be read: corrupt, encrypted, or expanding past the limits "
        "(a zip bomb). It appears as the failed ingestion job's `error`.",
        "Upload a readable copy of the document (not password protected).",
    ),
    "document_too_large": ProblemType(
        422,
        "Document too large",
        "An ingestion job's document would produce more text, passages, XML tags, PDF page "
        "text or spreadsheet cells than one document may (docs/configuration.md); nothing of "
        "it was stored.",
        "Split the document into smaller files and upload those; the job's `error.detail` "
        "names the bound.",
    ),
    "no_text": ProblemType(
        422,
        "No text in the document",
        "An ingestion job read the document and no text came from it: a scan or image in "
        "which OCR found no text, or with OCR off (`STRONGROOM_OCR=off`), or a file with "
        "nothing but blank pages. The `error.detail` says what was tried.",
        "Upload a clearer scan (200 dpi or more, upright, in focus) or a copy with a text "
        'layer; see docs/troubleshooting.md, "My scan says no_text".',
    ),
    "rate_limited": ProblemType(
        429,
        "Rate limited",
        "The key's rate-limit bucket has too few tokens for the call's cost; "
        "`X-RateLimit-*` headers show the bucket.",
        "Wait the `Retry-After` seconds and retry, or ask for a key on a larger tier.",
    ),
    "headers_too_large": ProblemType(
        431,
        "Request headers too large",
        "The request's header section is larger than the HTTP server reads (about 64 KiB in "
        "all, less when it arrives slowly; a multipart boundary in `Content-Type` counts); "
        "the request was not read.",
        "Send fewer or shorter headers: credentials go in `Authorization` only, a multipart "
        "boundary needs at most 70 characters (RFC 2046).",
    ),
    "internal_error": ProblemType(
        500,
        "Internal error",
        "The server met an unexpected error; nothing about it is in the answer, the server "
        "log has it under the `request_id`.",
        "Retry with backoff (with the same `Idempotency-Key` for writes). If it persists, "
        "report the `request_id`.",
    ),
    "not_implemented": ProblemType(
        501,
        "Not implemented",
        "The capability is switched off in this deployment (OAuth, when no signing keys are "
        "configured).",
        "Call it with an API key instead, or ask the deployment's operator to enable it.",
    ),
    "upstream_error": ProblemType(
        502,
        "Answer engine failed",
        "The chat answer engine (a language model's endpoint) refused the request, failed, "
        "or gave no usable answer.",
        "Retry with backoff; if it persists, the deployment's answer engine needs attention.",
    ),
    "service_unavailable": ProblemType(
        503,
        "Service unavailable",
        "A store the request needs (the database, or Redis for `Idempotency-Key` requests) "
        "is unreachable for the moment.",
        "Wait the `Retry-After` seconds and retry, with the same `Idempotency-Key` for writes.",
    ),
    "upstream_timeout": ProblemType(
        504,
        "Answer engine timed out",
        "The chat answer engine did not answer in time.",
        "Retry, perhaps with a narrower question or fewer passages (`k`).",
    ),
}

# code -> (status, title), read from the registry.
CATALOGUE: dict[str, tuple[int, str]] = {
    code: (problem.status, problem.title) for code, problem in PROBLEM_TYPES.items()
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

    def closing_answer(self, base_url: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
        """This problem as answered below the app, where no Quart response exists (a body
        that never arrived, a request Hypercorn refused): its headers, with a new request id
        in `X-Request-Id` and closing the connection, and its encoded body."""
        request_id = f"req_{ULID()}"
        payload = json.dumps(self.body(base_url, request_id)).encode()
        headers = [
            (b"content-type", PROBLEM_CONTENT_TYPE.encode()),
            (b"content-length", str(len(payload)).encode()),
            (b"x-request-id", request_id.encode()),
            (b"connection", b"close"),
        ]
        return headers, payload

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

    type: str = Field(
        description="`{base_url}/errors/<code>`: a page saying when the code happens and what "
        "to do."
    )
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
