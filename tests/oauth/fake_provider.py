"""A stand-in OpenID Connect provider, served over real HTTP on a free port. The upstream
provider of production cannot run here (the issue allows a mock for it); this one is small
but speaks the protocol Strongroom relies on: discovery, the authorization endpoint, the
token endpoint with client_secret_basic and PKCE, and JWKS. Its authorization endpoint signs
the configured user in at once, as a provider would after the user typed a password."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode

from hypercorn.asyncio import serve
from hypercorn.config import Config
from joserfc import jwt
from joserfc.jwk import ECKey
from quart import Quart, jsonify, redirect, request

from tests.processes import free_port

CLIENT_ID, CLIENT_SECRET = "strongroom", "provider-secret-" + "s" * 16


@dataclass
class Behaviour:
    email: str = "someone@example.com"
    email_verified: bool = True
    wrong_key: bool = False
    wrong_nonce: bool = False
    codes: dict[str, dict] = field(default_factory=dict)


class FakeProvider:
    def __init__(self) -> None:
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.key = ECKey.generate_key("P-256", parameters={"kid": "p1", "alg": "ES256"})
        self.behaviour = Behaviour()
        self.app = self._app()

    def _app(self) -> Quart:
        app = Quart("fake-provider")

        @app.get("/.well-known/openid-configuration")
        async def discovery():
            return jsonify({
                "issuer": self.issuer, "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token", "jwks_uri": f"{self.issuer}/jwks",
            })  # fmt: skip

        @app.get("/jwks")
        async def jwks():
            return jsonify({"keys": [self.key.as_dict(private=False)]})

        @app.get("/authorize")
        async def authorize():
            args = request.args
            assert args["client_id"] == CLIENT_ID and args["code_challenge_method"] == "S256"
            code = secrets.token_urlsafe(16)
            self.behaviour.codes[code] = dict(args)
            return redirect(
                f"{args['redirect_uri']}?{urlencode({'code': code, 'state': args['state']})}"
            )

        @app.post("/token")
        async def token():
            form = await request.form
            expected = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
            if request.headers.get("Authorization") != f"Basic {expected}":
                return jsonify({"error": "invalid_client"}), 401
            issued = self.behaviour.codes.pop(form["code"], None)
            verifier_hash = (
                base64.urlsafe_b64encode(hashlib.sha256(form["code_verifier"].encode()).digest())
                .decode()
                .rstrip("=")
            )
            if issued is None or verifier_hash != issued["code_challenge"]:
                return jsonify({"error": "invalid_grant"}), 400
            now = int(time.time())
            claims = {
                "iss": self.issuer, "aud": CLIENT_ID, "sub": "upstream-user", "iat": now,
                "exp": now + 300, "email": self.behaviour.email,
                "email_verified": self.behaviour.email_verified,
                "nonce": "other" if self.behaviour.wrong_nonce else issued["nonce"],
            }  # fmt: skip
            key = self.key
            if self.behaviour.wrong_key:
                key = ECKey.generate_key("P-256", parameters={"kid": "p1"})
            id_token = jwt.encode({"alg": "ES256", "kid": "p1"}, claims, key)
            return jsonify({"access_token": "at", "token_type": "Bearer", "id_token": id_token})

        return app

    async def __aenter__(self) -> FakeProvider:
        config = Config()
        config.bind = [f"127.0.0.1:{self.port}"]
        config.accesslog = None
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(serve(self.app, config, shutdown_trigger=self._stop.wait))
        await asyncio.sleep(0.2)
        return self

    async def __aexit__(self, *exc) -> None:
        self._stop.set()
        await self._task
