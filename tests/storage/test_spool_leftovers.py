"""Issue 28: kill -9 during an upload left its spool file (`blobs/.spool/upload-*`), and a
restart kept it. A process removes leftover spool files when it starts: every one in the
embedded default (the only process that spools), else those past the upload deadline."""

from __future__ import annotations

import os
import time

from strongroom.runtime import Runtime
from strongroom.storage.base import remove_leftover_spool_files, spool_file


def test_leftovers_past_the_age_go_and_files_being_written_stay(tmp_path):
    old_fd, old = spool_file(tmp_path)
    new_fd, new = spool_file(tmp_path)
    os.close(old_fd)
    os.close(new_fd)
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    other = tmp_path / "not-a-spool-file"
    other.write_text("kept")
    assert remove_leftover_spool_files(tmp_path, older_than_seconds=900) == 1
    assert not old.exists() and new.exists() and other.exists()
    assert remove_leftover_spool_files(tmp_path, older_than_seconds=0) == 1
    assert not new.exists() and other.exists()
    assert remove_leftover_spool_files(tmp_path / "missing", older_than_seconds=0) == 0


async def test_a_starting_process_removes_what_an_interrupted_upload_left(settings):
    runtime = Runtime.create(settings)
    fd, left = spool_file(runtime.blobs.spool_dir)
    os.close(fd)
    an_hour_ago = time.time() - 3600
    os.utime(left, (an_hour_ago, an_hour_ago))  # past the upload deadline on either setup
    try:
        await runtime.start()
        assert not left.exists()
    finally:
        await runtime.close()
