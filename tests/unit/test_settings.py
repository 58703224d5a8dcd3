"""Settings that only make sense together are refused apart, at start-up."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from strongroom.settings import Settings


@pytest.mark.parametrize("half", [{"s3_access_key_id": "AKIA"}, {"s3_secret_access_key": "secret"}])
def test_half_an_s3_credential_is_refused(half):
    with pytest.raises(ValidationError, match="together"):
        Settings(**half)


def test_the_openai_engine_needs_its_url_and_model():
    with pytest.raises(ValidationError, match="BASE_URL"):
        Settings(chat_engine="openai", chat_openai_model="m")
    configured = Settings(
        chat_engine="openai", chat_openai_base_url="http://127.0.0.1:1/v1", chat_openai_model="m"
    )
    assert configured.chat_engine == "openai"
