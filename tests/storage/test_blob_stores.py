"""The blob stores behind `BlobStore`: one set of contract tests runs over both the local
directory and S3 (the parametrised `store` fixture), then what is particular to each.

S3BlobStore is tested against moto running in *server mode* (`ThreadedMotoServer` on a free
port of 127.0.0.1): a real S3-compatible HTTP server, reached through aiobotocore over HTTP
exactly as AWS, MinIO or Ceph would be, not a mock object patched into the client. Every test
creates its own bucket; the failure tests make one upload call fail (or hang and be
cancelled) and then ask the server itself what is left.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiobotocore.session import get_session
from botocore.exceptions import ClientError
from moto.server import ThreadedMotoServer

from strongroom.settings import Settings
from strongroom.storage import create_blob_store
from strongroom.storage.base import CHUNK_BYTES, BlobStore, spool_file
from strongroom.storage.local import LocalBlobStore
from strongroom.storage.s3 import PART_BYTES, S3BlobStore

PREFIX = "tenant-blobs"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def _options(endpoint: str) -> dict[str, Any]:
    return {
        "endpoint_url": endpoint,
        "region_name": "us-east-1",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }


@pytest.fixture
async def s3(s3_endpoint: str) -> AsyncIterator[Any]:
    """A client of the test's own, to look at the server behind the store's back."""
    async with get_session().create_client("s3", **_options(s3_endpoint)) as client:
        yield client


@pytest.fixture
async def bucket(s3: Any) -> str:
    name = f"blobs-{uuid.uuid4().hex[:12]}"
    await s3.create_bucket(Bucket=name)
    return name


@pytest.fixture
async def s3_store(s3_endpoint: str, bucket: str, tmp_path: Path) -> AsyncIterator[S3BlobStore]:
    store = S3BlobStore(bucket, PREFIX, _options(s3_endpoint), tmp_path / "s3-spool")
    yield store
    await store.close()


@pytest.fixture
async def local_store(tmp_path: Path) -> AsyncIterator[LocalBlobStore]:
    store = LocalBlobStore(tmp_path / "blobs")
    yield store
    await store.close()


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest) -> BlobStore:
    return request.getfixturevalue(f"{request.param}_store")


def spooled(store: BlobStore, data: bytes) -> Path:
    """A spool file holding `data`, made where uploads are spooled for this store."""
    fd, path = spool_file(store.spool_dir)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return path


async def read(store: BlobStore, key: str) -> bytes:
    return b"".join([chunk async for chunk in store.stream(key)])


# The contract, over both stores


async def test_put_file_consumes_the_source(store: BlobStore) -> None:
    source = spooled(store, b"drawing")
    await store.put_file("t1/doc", source)
    assert not source.exists()


async def test_stream_returns_the_stored_bytes_in_chunks(store: BlobStore) -> None:
    data = os.urandom(3 * CHUNK_BYTES + 17)
    await store.put_file("t1/doc", spooled(store, data))
    chunks = [chunk async for chunk in store.stream("t1/doc")]
    assert b"".join(chunks) == data
    assert len(chunks) > 1
    assert max(len(chunk) for chunk in chunks) <= CHUNK_BYTES


async def test_an_empty_blob_round_trips(store: BlobStore) -> None:
    await store.put_file("t1/empty", spooled(store, b""))
    assert await read(store, "t1/empty") == b""


async def test_a_file_larger_than_a_multipart_part_round_trips(store: BlobStore) -> None:
    data = os.urandom(2 * PART_BYTES + 1234)
    await store.put_file("t1/large", spooled(store, data))
    assert await read(store, "t1/large") == data


async def test_put_file_replaces_the_blob_under_the_same_key(store: BlobStore) -> None:
    await store.put_file("t1/doc", spooled(store, b"first version"))
    await store.put_file("t1/doc", spooled(store, b"second"))
    assert await read(store, "t1/doc") == b"second"


async def test_blobs_under_different_keys_are_apart(store: BlobStore) -> None:
    await store.put_file("t1/a", spooled(store, b"A"))
    await store.put_file("t2/a", spooled(store, b"B"))
    assert (await read(store, "t1/a"), await read(store, "t2/a")) == (b"A", b"B")


async def test_stream_of_a_missing_blob_raises_file_not_found(store: BlobStore) -> None:
    with pytest.raises(FileNotFoundError):
        await read(store, "t1/missing")


async def test_local_copy_is_a_file_holding_the_blob(store: BlobStore) -> None:
    data = os.urandom(CHUNK_BYTES + 5)
    await store.put_file("t1/doc", spooled(store, data))
    async with store.local_copy("t1/doc") as path:
        assert path.read_bytes() == data


async def test_local_copy_of_a_missing_blob_raises_file_not_found(store: BlobStore) -> None:
    with pytest.raises(FileNotFoundError):
        async with store.local_copy("t1/missing"):
            pass


async def test_delete_removes_the_blob(store: BlobStore) -> None:
    await store.put_file("t1/doc", spooled(store, b"gone soon"))
    await store.delete("t1/doc")
    with pytest.raises(FileNotFoundError):
        await read(store, "t1/doc")


async def test_delete_of_a_missing_blob_is_fine(store: BlobStore) -> None:
    await store.put_file("t1/kept", spooled(store, b"kept"))
    await store.delete("t1/missing")
    assert await read(store, "t1/kept") == b"kept"


async def test_delete_many_removes_every_blob_named_a_page_at_a_time_and_no_other(
    store: BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42: a project's or a tenant's files go in a few requests, not one each."""
    monkeypatch.setattr(f"{type(store).__module__}.DELETE_PAGE", 2)
    for name in ("a", "b", "c", "kept"):
        await store.put_file(f"t1/{name}", spooled(store, name.encode()))
    await store.delete_many(["t1/a", "t1/b", "t1/c", "t1/missing"])
    assert sorted([key async for key, _ in store.listed()]) == ["t1/kept"]


# LocalBlobStore


@pytest.mark.parametrize(
    "key",
    ["../outside", "t1/../../outside", "/etc/outside", "", ".", "t1/..", ".spool", ".spool/x"],
)
async def test_local_keys_cannot_escape_the_root(local_store: LocalBlobStore, key: str) -> None:
    source = spooled(local_store, b"payload")
    with pytest.raises(ValueError, match="escapes the store"):
        await local_store.put_file(key, source)
    assert not source.exists()  # consumed all the same
    with pytest.raises(ValueError):
        await read(local_store, key)
    with pytest.raises(ValueError):
        async with local_store.local_copy(key):
            pass
    with pytest.raises(ValueError):
        await local_store.delete(key)
    assert not (local_store.root.parent / "outside").exists()


async def test_a_symlink_out_of_the_root_is_no_way_out(
    local_store: LocalBlobStore, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    local_store.root.mkdir(parents=True)
    (local_store.root / "link").symlink_to(elsewhere)
    with pytest.raises(ValueError, match="escapes the store"):
        await local_store.put_file("link/doc", spooled(local_store, b"payload"))
    assert list(elsewhere.iterdir()) == []


async def test_local_put_file_is_a_rename_not_a_copy(local_store: LocalBlobStore) -> None:
    """A reader never sees half a blob: the spool file becomes the blob in one rename."""
    source = spooled(local_store, b"whole or nothing")
    inode = source.stat().st_ino
    await local_store.put_file("t1/doc", source)
    async with local_store.local_copy("t1/doc") as path:
        assert path.stat().st_ino == inode


async def test_a_failed_local_put_leaves_nothing(local_store: LocalBlobStore) -> None:
    await local_store.put_file("t1/dir/doc", spooled(local_store, b"existing"))
    source = spooled(local_store, b"cannot replace a directory")
    with pytest.raises(OSError):
        await local_store.put_file("t1/dir", source)  # a directory of blobs is in the way
    assert not source.exists()
    assert list(local_store.spool_dir.iterdir()) == []
    assert await read(local_store, "t1/dir/doc") == b"existing"


# S3BlobStore


async def test_s3_blobs_are_objects_under_the_prefix_on_the_server(
    s3_store: S3BlobStore, s3: Any, bucket: str, s3_endpoint: str
) -> None:
    await s3_store.put_file("t1/doc", spooled(s3_store, b"on the server"))
    listing = await s3.list_objects_v2(Bucket=bucket)
    assert [item["Key"] for item in listing["Contents"]] == [f"{PREFIX}/t1/doc"]
    url = await s3.generate_presigned_url(
        "get_object", Params={"Bucket": bucket, "Key": f"{PREFIX}/t1/doc"}
    )
    assert url.startswith(f"{s3_endpoint}/{bucket}/{PREFIX}/t1/doc?")
    async with httpx.AsyncClient() as http:  # plain HTTP from here on
        answer = await http.get(url)
    assert answer.content == b"on the server"


async def test_s3_files_over_a_part_go_up_as_multipart_uploads(
    s3_store: S3BlobStore, s3: Any, bucket: str
) -> None:
    data = os.urandom(2 * PART_BYTES + 1)
    await s3_store.put_file("t1/large", spooled(s3_store, data))
    head = await s3.head_object(Bucket=bucket, Key=f"{PREFIX}/t1/large")
    assert head["ContentLength"] == len(data)
    assert head["ETag"].endswith('-3"')  # S3 marks multipart objects with their part count


async def test_s3_files_up_to_a_part_go_up_in_one_request(
    s3_store: S3BlobStore, s3: Any, bucket: str
) -> None:
    await s3_store.put_file("t1/small", spooled(s3_store, os.urandom(PART_BYTES)))
    head = await s3.head_object(Bucket=bucket, Key=f"{PREFIX}/t1/small")
    assert "-" not in head["ETag"]


async def _nothing_left(s3: Any, bucket: str) -> None:
    listing = await s3.list_objects_v2(Bucket=bucket)
    assert listing.get("Contents", []) == []
    uploads = await s3.list_multipart_uploads(Bucket=bucket)
    assert uploads.get("Uploads", []) == []


async def test_a_failed_multipart_upload_leaves_nothing(
    s3_store: S3BlobStore, s3: Any, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await s3_store.client()
    real_upload_part = client.upload_part
    calls = 0

    async def dropping_connection(**kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:  # the first part is on the server already
            raise ConnectionResetError("the network went away")
        return await real_upload_part(**kwargs)

    monkeypatch.setattr(client, "upload_part", dropping_connection)
    source = spooled(s3_store, os.urandom(2 * PART_BYTES + 1))
    with pytest.raises(ConnectionResetError):
        await s3_store.put_file("t1/large", source)
    assert calls == 2
    assert not source.exists()
    await _nothing_left(s3, bucket)


async def test_a_cancelled_multipart_upload_leaves_nothing(
    s3_store: S3BlobStore, s3: Any, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await s3_store.client()
    real_upload_part = client.upload_part
    stalled = asyncio.Event()

    async def stalling(**kwargs: Any) -> Any:
        if kwargs["PartNumber"] == 2:
            stalled.set()
            await asyncio.sleep(3600)
        return await real_upload_part(**kwargs)

    monkeypatch.setattr(client, "upload_part", stalling)
    source = spooled(s3_store, os.urandom(2 * PART_BYTES + 1))
    upload = asyncio.create_task(s3_store.put_file("t1/large", source))
    await asyncio.wait_for(stalled.wait(), timeout=30)
    pending = await s3.list_multipart_uploads(Bucket=bucket)
    assert len(pending["Uploads"]) == 1  # the upload really is under way on the server
    upload.cancel()
    with pytest.raises(asyncio.CancelledError):
        await upload
    assert not source.exists()
    await _nothing_left(s3, bucket)


async def test_an_upload_the_server_refuses_fails_and_consumes_the_source(
    s3_endpoint: str, tmp_path: Path
) -> None:
    store = S3BlobStore("no-such-bucket", "", _options(s3_endpoint), tmp_path / "spool")
    try:
        source = spooled(store, b"nowhere to go")
        with pytest.raises(ClientError, match="NoSuchBucket"):
            await store.put_file("t1/doc", source)
        assert not source.exists()
    finally:
        await store.close()


async def test_the_s3_local_copy_is_removed_after_use(s3_store: S3BlobStore) -> None:
    await s3_store.put_file("t1/doc", spooled(s3_store, b"temporary copy"))
    async with s3_store.local_copy("t1/doc") as path:
        assert path.is_relative_to(s3_store.spool_dir)
    assert not path.exists()


async def test_create_blob_store_gives_s3_for_an_s3_url(
    s3_endpoint: str, s3: Any, bucket: str, tmp_path: Path
) -> None:
    settings = Settings(
        data_dir=tmp_path,
        storage_url=f"s3://{bucket}/vault/blobs",
        s3_endpoint_url=s3_endpoint,
        s3_access_key_id="testing",
        s3_secret_access_key="testing",
    )
    store = create_blob_store(settings)
    assert isinstance(store, S3BlobStore)
    try:
        await store.put_file("t1/doc", spooled(store, b"configured"))
    finally:
        await store.close()
    answer = await s3.get_object(Bucket=bucket, Key="vault/blobs/t1/doc")
    async with answer["Body"] as body:
        assert await body.read() == b"configured"


def test_create_blob_store_gives_a_directory_otherwise(tmp_path: Path) -> None:
    default = create_blob_store(Settings(data_dir=tmp_path))
    assert isinstance(default, LocalBlobStore)
    assert default.root == tmp_path / "blobs"
    chosen = create_blob_store(Settings(data_dir=tmp_path, storage_url=str(tmp_path / "b")))
    assert isinstance(chosen, LocalBlobStore)
    assert chosen.root == tmp_path / "b"


async def test_listed_names_every_blob_with_when_it_was_written(store: BlobStore) -> None:
    """Issue 42: the sweep of orphaned blobs lists a store a page at a time."""
    keys = {f"t/test/{uuid.uuid4()}" for _ in range(3)} | {f"t/test/{uuid.uuid4()}/template.docx"}
    for key in keys:
        await store.put_file(key, spooled(store, key.encode()))
    listed = {key: written async for key, written in store.listed()}
    assert set(listed) == keys  # nothing of the spool's
    assert all(written > 0 for written in listed.values())


async def test_listed_with_a_prefix_names_only_the_blobs_under_it(store: BlobStore) -> None:
    """Issue 42, item 5: a tenant's erasure lists what is left under its directory."""
    mine, theirs = f"{uuid.uuid4()}/", f"{uuid.uuid4()}/"
    keys = {f"{mine}live/{uuid.uuid4()}", f"{mine}test/templates/{uuid.uuid4()}/result.docx"}
    for key in keys | {f"{theirs}live/{uuid.uuid4()}"}:
        await store.put_file(key, spooled(store, key.encode()))
    assert {key async for key, _ in store.listed(mine)} == keys
    assert [key async for key, _ in store.listed(f"{uuid.uuid4()}/")] == []
