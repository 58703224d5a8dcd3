"""Configuration from `STRONGROOM_*` environment variables (documented in docs/configuration.md,
whose table `python -m strongroom.settings.docs` writes from these declarations).

The settings are declared by area, one module each (jobs.py, webhooks.py, ...), as plain pydantic
models; `Settings` inherits them all and reads them from the environment. The attribute names
and variables stay flat (`settings.worker_concurrency`, `STRONGROOM_WORKER_CONCURRENCY`).

Secrets (`key_pepper`, `secret_key`) have no default. Where they are unset and the database is
the embedded SQLite file, they are generated once and kept in `<data_dir>/secrets.json`, so the
embedded default works out of the box and its keys survive restarts. A server on a shared
database refuses to start without them: replicas that each invented a pepper could not verify
each other's keys.
"""

from __future__ import annotations

import json
import os
import secrets
from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from strongroom.settings.answers import AnswerSettings
from strongroom.settings.base import DEFAULT_DATA_DIR
from strongroom.settings.database import DatabaseSettings
from strongroom.settings.embeddings import EmbeddingSettings
from strongroom.settings.idempotency import IdempotencySettings
from strongroom.settings.ingestion import IngestionSettings
from strongroom.settings.jobs import JobSettings
from strongroom.settings.keys import KeySettings
from strongroom.settings.limits import LimitSettings
from strongroom.settings.oauth import OAuthSettings
from strongroom.settings.ocr import OcrSettings
from strongroom.settings.operator import OperatorSettings
from strongroom.settings.redis import RedisSettings
from strongroom.settings.search import SearchSettings
from strongroom.settings.server import ServerSettings
from strongroom.settings.storage import StorageSettings
from strongroom.settings.templates import TemplateSettings
from strongroom.settings.tenants import TenantSettings
from strongroom.settings.webhooks import WebhookSettings

__all__ = ["AREAS", "DEFAULT_DATA_DIR", "MissingSecretError", "Settings"]

# The areas in the order `strongroom config` and docs/configuration.md show them.
AREAS: dict[str, type[BaseModel]] = {
    "Server": ServerSettings,
    "Database": DatabaseSettings,
    "Redis": RedisSettings,
    "Keys and secrets": KeySettings,
    "Limits": LimitSettings,
    "Idempotency": IdempotencySettings,
    "OAuth": OAuthSettings,
    "Storage": StorageSettings,
    "Jobs": JobSettings,
    "Ingestion": IngestionSettings,
    "OCR": OcrSettings,
    "Templates": TemplateSettings,
    "Search": SearchSettings,
    "Embeddings": EmbeddingSettings,
    "Answers": AnswerSettings,
    "Webhooks": WebhookSettings,
    "Tenants": TenantSettings,
    "Operator": OperatorSettings,
}


class MissingSecretError(RuntimeError):
    """A required secret is not configured and may not be generated."""


class Settings(
    ServerSettings,
    DatabaseSettings,
    RedisSettings,
    KeySettings,
    LimitSettings,
    IdempotencySettings,
    OAuthSettings,
    StorageSettings,
    JobSettings,
    IngestionSettings,
    OcrSettings,
    TemplateSettings,
    SearchSettings,
    EmbeddingSettings,
    AnswerSettings,
    WebhookSettings,
    TenantSettings,
    OperatorSettings,
    BaseSettings,
):
    """Every setting, read from the environment: the fields of the areas (plain pydantic
    models) composed by inheritance, so each keeps its attribute name and its
    `STRONGROOM_<NAME>` variable, and their validators run here."""

    model_config = SettingsConfigDict(env_prefix="STRONGROOM_", extra="ignore")

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{self.data_dir / 'strongroom.db'}"

    @property
    def is_embedded(self) -> bool:
        """True when state lives in a local SQLite file (one process owns it)."""
        return self.resolved_database_url.startswith("sqlite")

    @property
    def blob_location(self) -> str:
        """`storage_url`, or the embedded default's blob directory."""
        return self.storage_url or str(self.data_dir / "blobs")

    @property
    def postgres_conninfo(self) -> str:
        """The database URL as libpq conninfo (for the job queue's own pool)."""
        return "postgresql://" + self.resolved_database_url.split("://", 1)[1]

    @property
    def api_audience(self) -> str:
        """The resource the API's access tokens are for (D29, D30)."""
        return f"{self.base_url}/api/v2"

    @property
    def signing_keys_path(self) -> Path:
        """Where the OAuth signing keys are read: the configured file, or, in the embedded
        default only, a file generated under the data directory.

        Raises MissingSecretError on a shared database without a configured file."""
        if self.oauth_signing_keys_file is not None:
            return self.oauth_signing_keys_file
        if not self.is_embedded:
            raise MissingSecretError(
                "STRONGROOM_OAUTH_SIGNING_KEYS_FILE must be set when the database is shared"
            )
        return self.data_dir / "oauth-signing-keys.json"

    @cached_property
    def _secrets(self) -> dict[str, str]:
        return _load_or_create_secrets(self.data_dir / "secrets.json")

    def secret(self, name: str) -> bytes:
        """Return the secret `name` (`key_pepper` or `secret_key`) as bytes.

        Raises MissingSecretError when it is unset on a shared (non-SQLite) database.
        """
        configured: SecretStr | None = getattr(self, name)
        if configured is not None:
            return configured.get_secret_value().encode()
        if not self.is_embedded:
            raise MissingSecretError(
                f"STRONGROOM_{name.upper()} must be set when the database is shared "
                f"({self.resolved_database_url.split(':', 1)[0]})"
            )
        return self._secrets[name].encode()


def _load_or_create_secrets(path: Path) -> dict[str, str]:
    if path.exists():
        return json.loads(path.read_text())
    path.parent.mkdir(parents=True, exist_ok=True)
    values = {name: secrets.token_urlsafe(32) for name in ("key_pepper", "secret_key")}
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process won the race; use its secrets
        return json.loads(path.read_text())
    with os.fdopen(fd, "w") as handle:
        json.dump(values, handle)
    return values
