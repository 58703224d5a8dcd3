"""Issue 18: the embedded default's data directory is 0700 and its SQLite file 0600, for a
new data directory and for one an older version left readable to everyone."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from strongroom.embedded import prepare
from strongroom.settings import Settings


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def embedded_settings(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, database_url=None, key_pepper="p" * 32, secret_key="s" * 32)


@pytest.mark.parametrize("existing", [False, True], ids=["new", "world-readable before"])
async def test_the_sqlite_file_is_0600_and_its_directory_0700(tmp_path, existing):
    data_dir = tmp_path / "data"
    if existing:
        data_dir.mkdir(mode=0o755)
        data_dir.chmod(0o755)
        (data_dir / "strongroom.db").touch()
        (data_dir / "strongroom.db").chmod(0o644)
    await prepare(embedded_settings(data_dir))
    assert mode(data_dir) == 0o700
    database = data_dir / "strongroom.db"
    assert database.stat().st_size > 0  # migrated: SQLite wrote into the file made here
    assert mode(database) == 0o600
    for journal in data_dir.glob("strongroom.db-*"):
        assert mode(journal) & 0o077 == 0, journal
