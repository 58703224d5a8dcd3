"""Standard Webhooks signatures, checked by the reference verifier (`standardwebhooks`), and
secrets sealed at rest."""

from __future__ import annotations

import base64
import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from strongroom.outbox.signing import SecretBox, headers, new_secret

BODY = b'{"type":"document.ready","data":{"id":"d"}}'


def test_a_secret_is_whsec_and_base64_of_32_random_bytes():
    secret = new_secret()
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 32
    assert new_secret() != secret


def test_a_signature_verifies_with_the_reference_verifier():
    secret = new_secret()
    signed = headers([secret], "msg_1", int(time.time()), BODY)
    assert Webhook(secret).verify(BODY, signed)["type"] == "document.ready"
    assert signed["webhook-signature"].startswith("v1,")


def test_a_tampered_body_or_another_secret_fails():
    secret = new_secret()
    signed = headers([secret], "msg_1", int(time.time()), BODY)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(BODY.replace(b"ready", b"faile"), signed)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(BODY, signed)


def test_after_a_rotation_both_secrets_sign_and_either_verifies():
    new, old = new_secret(), new_secret()
    signed = headers([new, old], "msg_2", int(time.time()), BODY)
    assert len(signed["webhook-signature"].split(" ")) == 2
    for secret in (new, old):
        assert Webhook(secret).verify(BODY, signed)["data"] == {"id": "d"}


def test_secrets_are_sealed_and_only_the_same_key_unseals_them():
    secret = new_secret()
    box = SecretBox(b"server secret key")
    sealed = box.seal(secret)
    assert secret not in sealed
    assert box.unseal(sealed) == secret
    assert SecretBox(b"server secret key").unseal(sealed) == secret
    with pytest.raises(ValueError, match="another key"):
        SecretBox(b"another server key").unseal(sealed)
    with pytest.raises(ValueError):
        box.unseal("not a token")
