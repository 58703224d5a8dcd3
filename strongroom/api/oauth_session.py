"""The OAuth sign-in session's cookie (D39), opened at no cost on requests that carry none.

Quart opens the session on every request: its cookie interface builds a signing serializer
(key derivation included) before it looks for the cookie, though the cookie is scoped to
/api/v2/oauth and no other request carries it. Here the serializer is built once per secret
key, and only when a cookie is there to read (issue 29: a tenth of `/healthz`'s time).
"""

from __future__ import annotations

from quart import Quart
from quart.sessions import SecureCookieSession, SecureCookieSessionInterface
from quart.wrappers import BaseRequestWebsocket


class OAuthSessions(SecureCookieSessionInterface):
    def __init__(self) -> None:
        self._serializers: dict[tuple, object] = {}

    def get_signing_serializer(self, app: Quart):
        keys = (app.secret_key, *(app.config["SECRET_KEY_FALLBACKS"] or ()))
        serializer = self._serializers.get(keys)
        if serializer is None:
            serializer = super().get_signing_serializer(app)
            self._serializers = {keys: serializer}  # one secret at a time: never grows
        return serializer

    async def open_session(
        self, app: Quart, request: BaseRequestWebsocket
    ) -> SecureCookieSession | None:
        if self.get_cookie_name(app) not in request.cookies and app.secret_key:
            return self.session_class()  # what the parent answers without a cookie
        return await super().open_session(app, request)
