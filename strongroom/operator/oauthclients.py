"""OAuthClient resources -> OAuth client rows (console clients: spec 5.3 rule 4). The client
id and a confidential client's secret are written to the Secret first, then the row (with
only the secret's digest), so a crash between the steps loses nothing."""

from __future__ import annotations

import secrets as random

from pydantic import ValidationError
from sqlmodel import delete

from strongroom.oauth.clients import RegistrationRequest, digest
from strongroom.oauth.models import OAuthClient
from strongroom.operator.conditions import ready
from strongroom.operator.outcome import NotReady, Outcome
from strongroom.operator.parts import OperatorParts
from strongroom.operator.secrets import SecretStore, read_owned

DEFAULT_SCOPES = ["vault:read", "chat:read", "templates:read", "workflows:read", "meta:read"]


def secret_name_of(body: dict) -> str:
    return body["spec"].get("secretName") or f"{body['metadata']['name']}-oauth-client"


async def reconcile_oauth_client(parts: OperatorParts, secrets: SecretStore, body: dict) -> Outcome:
    spec, meta = body["spec"], body["metadata"]
    namespace, secret_name = meta.get("namespace", "default"), secret_name_of(body)
    method = spec.get("tokenEndpointAuthMethod", "client_secret_basic")
    try:
        request = RegistrationRequest(
            client_name=spec["clientName"],
            redirect_uris=list(spec["redirectUris"]),
            grant_types=list(spec.get("grantTypes", ["authorization_code", "refresh_token"])),
            token_endpoint_auth_method=method,
        )
    except ValidationError as error:
        raise NotReady("Invalid", error.errors(include_url=False)[0]["msg"], retry=False) from error
    events: list[str] = []
    data = await read_owned(secrets, namespace, secret_name, body)
    if not data or "client-id" not in data:
        data = {"client-id": f"client_{random.token_urlsafe(16)}"}
        if method != "none":
            data["client-secret"] = random.token_urlsafe(32)
        await secrets.write(namespace, secret_name, data, body)  # the Secret first
        events.append(f"wrote client {data['client-id']} into Secret {secret_name}")
    async with parts.sessions() as session:
        client = await session.get(OAuthClient, data["client-id"])
        if client is None:
            client = OAuthClient(id=data["client-id"], dynamic=False, client_name="",
                                 redirect_uris=[], grant_types=[], response_types=["code"],
                                 token_endpoint_auth_method=method, scope="")  # fmt: skip
            events.append(f"registered client {client.id}")
        client.client_name = request.client_name
        client.redirect_uris = request.redirect_uris
        client.grant_types = sorted(set(request.grant_types))
        client.token_endpoint_auth_method = method
        client.scope = " ".join(spec.get("scopes", DEFAULT_SCOPES))
        client.secret_hash = digest(data["client-secret"]) if "client-secret" in data else None
        session.add(client)
        await session.commit()
    status = {"clientId": client.id, "secretName": secret_name, "conditions": [ready()]}
    return Outcome(status=status, events=events)


async def release_oauth_client(parts: OperatorParts, body: dict) -> None:
    """On deletion: the client goes, and with it its codes, chains and tokens."""
    client_id = (body.get("status") or {}).get("clientId")
    if client_id:
        async with parts.sessions() as session:
            await session.exec(delete(OAuthClient).where(OAuthClient.id == client_id))
            await session.commit()
