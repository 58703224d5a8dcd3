"""OAuth endpoint errors (D32): RFC 6749 `error` and `error_description`, plus the problem
members, with `Cache-Control: no-store`."""

from __future__ import annotations

import json

from quart import Response

# error -> HTTP status (RFC 6749 5.2, RFC 7591 3.2.2, RFC 7009 2.2.1)
STATUS = {
    "invalid_request": 400,
    "invalid_client": 401,
    "invalid_grant": 400,
    "unauthorized_client": 400,
    "unsupported_grant_type": 400,
    "invalid_scope": 400,
    "unsupported_token_type": 400,
    "invalid_redirect_uri": 400,
    "invalid_client_metadata": 400,
    "invalid_target": 400,  # RFC 8707 2
}
TITLES = {
    "invalid_request": "Invalid OAuth request",
    "invalid_client": "Client authentication failed",
    "invalid_grant": "Invalid grant",
    "unauthorized_client": "Client not allowed this grant",
    "unsupported_grant_type": "Unsupported grant type",
    "invalid_scope": "Invalid scope",
    "unsupported_token_type": "Unsupported token type",
    "invalid_redirect_uri": "Invalid redirect URI",
    "invalid_client_metadata": "Invalid client metadata",
    "invalid_target": "Invalid resource",
}


class OAuthError(Exception):
    def __init__(self, error: str, description: str, *, basic_tried: bool = False) -> None:
        super().__init__(f"{error}: {description}")
        self.error = error
        self.description = description
        self.basic_tried = basic_tried

    def to_response(self, base_url: str, request_id: str | None) -> Response:
        status = STATUS[self.error]
        body = {
            "error": self.error,
            "error_description": self.description,
            "type": f"{base_url}/errors/{self.error}",
            "title": TITLES[self.error],
            "status": status,
            "detail": self.description,
            "code": self.error,
            "request_id": request_id,
        }
        response = Response(json.dumps(body), status=status, content_type="application/json")
        response.headers["Cache-Control"] = "no-store"
        if self.error == "invalid_client" and self.basic_tried:
            response.headers["WWW-Authenticate"] = 'Basic realm="strongroom"'
        return response
