"""The server's own secrets and how long an API key lookup is reused."""

from __future__ import annotations

from pydantic import BaseModel, Field, SecretStr

from strongroom.settings.base import shown_default


class KeySettings(BaseModel):
    """The server's own secrets and how long an API key lookup is reused."""

    key_pepper: SecretStr | None = Field(
        default=None,
        json_schema_extra=shown_default("generated (SQLite only)"),
        description=(
            "Secret HMAC key under which API keys are hashed (D9). Changing it invalidates every "
            "key."
        ),
    )
    secret_key: SecretStr | None = Field(
        default=None,
        json_schema_extra=shown_default("generated (SQLite only)"),
        description=(
            "Signs pagination cursors (D5). Changing it invalidates outstanding cursors only."
        ),
    )
    key_cache_seconds: float = Field(
        default=2.0,
        ge=0,
        le=2.0,
        description=(
            "How long a process may reuse an API key lookup (0 to 2, D16). Events drop entries "
            "sooner."
        ),
    )
