"""Where document bytes live, and the sweep of files left by deleted documents."""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, Field, SecretStr, model_validator

from strongroom.settings.base import shown_default


class StorageSettings(BaseModel):
    """Where document bytes live, and the sweep of files left by deleted documents."""

    storage_url: str | None = Field(
        default=None,
        json_schema_extra=shown_default("`<data_dir>/blobs`"),
        description=(
            "Where document bytes live: `s3://bucket/prefix` (prefix optional) for an "
            "S3-compatible object store, anything else a directory. A directory must be shared by "
            "every API and worker process (docs/operations.md). Uploads are spooled in "
            "`<directory>/.spool`, or with S3 in `<temp dir>/strongroom-spool`."
        ),
    )
    s3_endpoint_url: str | None = Field(
        default=None,
        json_schema_extra=shown_default("unset (AWS)"),
        description=(
            "Endpoint of another S3-compatible store (MinIO, Ceph, R2), e.g. "
            "`https://minio.example.internal:9000`."
        ),
    )
    s3_region: str = Field(
        default="us-east-1",
        description="Region of the bucket.",
    )
    s3_access_key_id: str | None = Field(
        default=None,
        description=(
            "Access key for the store. Set it together with the secret below (one without the "
            "other stops every command at start); both unset, the AWS SDK's usual chain applies "
            "(`AWS_*` variables, shared config, IRSA or an instance role)."
        ),
    )
    s3_secret_access_key: SecretStr | None = Field(
        default=None,
        description="Its secret.",
    )
    blob_sweep_seconds: float = Field(
        default=3600.0,
        gt=0,
        description=(
            "Issue 42: how often a process that runs jobs (`strongroom worker`, the embedded "
            "default), and once at its start, removes the stored files of documents that no longer"
            " exist and that were written more than `STRONGROOM_UPLOAD_TIMEOUT_SECONDS` + 300 s "
            "ago: a document's file is removed after its deletion commits, so a process killed in "
            "between leaves it. The store is listed a page (1,000) at a time; template files are "
            "never touched."
        ),
    )

    @model_validator(mode="after")
    def _s3_credentials_complete(self) -> Self:
        if (self.s3_access_key_id is None) != (self.s3_secret_access_key is None):
            raise ValueError(
                "set STRONGROOM_S3_ACCESS_KEY_ID and _SECRET_ACCESS_KEY together "
                "(or neither, for the default AWS credential chain)"
            )
        return self
