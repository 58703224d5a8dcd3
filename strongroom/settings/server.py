"""Where the API is reached, where the embedded default keeps its state, and what is logged."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, field_validator

from strongroom.settings.base import DEFAULT_DATA_DIR


class ServerSettings(BaseModel):
    """Where the API is reached, where the embedded default keeps its state, and what is logged."""

    base_url: str = Field(
        default="http://127.0.0.1:8080",
        description=(
            "Public origin of the API (D1): problem `type` URLs, the OAuth issuer. A "
            "trailing `/` is dropped. `strongroom dev` follows `--host`/`--port` when this is "
            "unset."
        ),
    )
    data_dir: Path = Field(
        default=DEFAULT_DATA_DIR,
        description="Where the embedded default keeps its SQLite file and generated secrets.",
    )
    log_level: str = Field(
        default="INFO",
        description="Level of the JSON logs on stderr.",
    )
    log_client_request_id_max_chars: int = Field(
        default=64,
        ge=1,
        description=(
            "A client's own `X-Request-Id` is logged (as `client_request_id`) only if it is at "
            "most this many characters of `A-Z a-z 0-9 . _ : -` and looks like no credential (an "
            "API key's prefix, a JWT, a run of 32 or more letters and digits); otherwise the log "
            "line has the server's `request_id` alone (issue 28)."
        ),
    )

    @field_validator("base_url")
    @classmethod
    def _bare_origin(cls, value: str) -> str:
        return value.rstrip("/")
