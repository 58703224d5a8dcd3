"""Blob storage for document bytes: a local directory or an S3-compatible object store,
behind one interface (`BlobStore`)."""

from __future__ import annotations

from strongroom.settings import Settings
from strongroom.storage.base import BlobStore
from strongroom.storage.local import LocalBlobStore


def create_blob_store(settings: Settings) -> BlobStore:
    """`s3://bucket/prefix` gives the S3 store; anything else is a local directory. The S3
    client (aiobotocore, a second or more to import) is imported only for the S3 store."""
    location = settings.blob_location
    if location.startswith("s3://"):
        from strongroom.storage.s3 import S3BlobStore

        return S3BlobStore.from_settings(settings)
    return LocalBlobStore(location)


__all__ = ["BlobStore", "create_blob_store"]
