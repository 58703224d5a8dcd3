"""Blobs in an S3-compatible object store (AWS S3, MinIO, Ceph, moto in the tests), through
aiobotocore. Large files go up as multipart uploads read from the spool file part by part, so
no upload is ever held whole in memory; a failed multipart upload is aborted."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aiobotocore.session import get_session
from botocore.exceptions import ClientError

from strongroom.settings import Settings
from strongroom.storage.base import CHUNK_BYTES, DELETE_PAGE, LIST_PAGE, remove_quietly, spool_file

PART_BYTES = 8 * 1024 * 1024  # S3's minimum part is 5 MiB


class S3BlobStore:
    def __init__(
        self,
        bucket: str,
        prefix: str,
        client_options: dict[str, Any],
        spool_dir: Path,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.spool_dir = spool_dir
        self._client_options = client_options
        self._client: Any = None
        self._exit = contextlib.AsyncExitStack()
        self._lock = asyncio.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> S3BlobStore:
        bucket, _, prefix = settings.blob_location.removeprefix("s3://").partition("/")
        options: dict[str, Any] = {"region_name": settings.s3_region}
        if settings.s3_endpoint_url:
            options["endpoint_url"] = settings.s3_endpoint_url
        if settings.s3_access_key_id and settings.s3_secret_access_key:
            options["aws_access_key_id"] = settings.s3_access_key_id
            options["aws_secret_access_key"] = settings.s3_secret_access_key.get_secret_value()
        spool = Path(tempfile.gettempdir()) / "strongroom-spool"
        return cls(bucket, prefix, options, spool)

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    async def client(self) -> Any:
        async with self._lock:
            if self._client is None:
                session = get_session()
                self._client = await self._exit.enter_async_context(
                    session.create_client("s3", **self._client_options)
                )
        return self._client

    async def put_file(self, key: str, source: Path) -> None:
        s3 = await self.client()
        try:
            size = await asyncio.to_thread(os.path.getsize, source)
            if size <= PART_BYTES:
                body = await asyncio.to_thread(source.read_bytes)
                await s3.put_object(Bucket=self.bucket, Key=self._key(key), Body=body)
            else:
                await self._multipart(s3, self._key(key), source)
        finally:
            await asyncio.to_thread(remove_quietly, source)

    async def _multipart(self, s3: Any, key: str, source: Path) -> None:
        upload = await s3.create_multipart_upload(Bucket=self.bucket, Key=key)
        upload_id = upload["UploadId"]
        parts = []
        try:
            with open(source, "rb") as handle:  # noqa: ASYNC230 reads go through to_thread
                number = 1
                while chunk := await asyncio.to_thread(handle.read, PART_BYTES):
                    answer = await s3.upload_part(
                        Bucket=self.bucket,
                        Key=key,
                        UploadId=upload_id,
                        PartNumber=number,
                        Body=chunk,
                    )
                    parts.append({"ETag": answer["ETag"], "PartNumber": number})
                    number += 1
            await s3.complete_multipart_upload(
                Bucket=self.bucket,
                Key=key,
                UploadId=upload_id,
                MultipartUpload={"Parts": parts},
            )
        except BaseException:
            # Best effort: the upload's own error (or cancellation) is what propagates.
            with contextlib.suppress(Exception):
                await s3.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
            raise

    async def stream(self, key: str) -> AsyncIterator[bytes]:
        s3 = await self.client()
        try:
            answer = await s3.get_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in {"NoSuchKey", "404"}:
                raise FileNotFoundError(key) from error
            raise
        async with answer["Body"] as body:
            while chunk := await body.read(CHUNK_BYTES):
                yield chunk

    @contextlib.asynccontextmanager
    async def local_copy(self, key: str) -> AsyncIterator[Path]:
        fd, path = spool_file(self.spool_dir)
        try:
            with os.fdopen(fd, "wb") as handle:
                async for chunk in self.stream(key):
                    await asyncio.to_thread(handle.write, chunk)
            yield path
        finally:
            await asyncio.to_thread(remove_quietly, path)

    async def delete(self, key: str) -> None:
        s3 = await self.client()
        await s3.delete_object(Bucket=self.bucket, Key=self._key(key))

    async def delete_many(self, keys: list[str]) -> None:
        s3 = await self.client()
        for start in range(0, len(keys), DELETE_PAGE):
            page = [{"Key": self._key(key)} for key in keys[start : start + DELETE_PAGE]]
            answer = await s3.delete_objects(
                Bucket=self.bucket, Delete={"Objects": page, "Quiet": True}
            )
            if errors := answer.get("Errors"):
                raise OSError(f"S3 refused to delete {len(errors)} objects: {errors[0]}")

    async def listed(self, prefix: str = "") -> AsyncIterator[tuple[str, float]]:
        s3 = await self.client()
        start = f"{self.prefix}/" if self.prefix else ""
        pages = s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=start + prefix, PaginationConfig={"PageSize": LIST_PAGE}
        )
        async for page in pages:
            for item in page.get("Contents", []):
                yield item["Key"].removeprefix(start), item["LastModified"].timestamp()

    async def close(self) -> None:
        await self._exit.aclose()
        self._client = None
