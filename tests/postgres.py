"""A PostgreSQL server for the FAISS + PostgreSQL tests, on loopback, started on first use.

Production Haystack 1.x runs ``FAISSDocumentStore`` on PostgreSQL, whose collations, types and
transactions differ from SQLite's. ``DCSR_POSTGRES_URL`` (``postgresql://user@host:port``) points
the tests at a running server; otherwise Debian's ``postgresql`` binaries (``make test`` installs
the package when it runs as root) start a throwaway cluster in a temporary folder, listening on
127.0.0.1 only, with an ICU (linguistic) collation as production databases usually have. Where
neither works the tests skip with the reason.
"""

import atexit
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from typing import Optional

import pytest

_server: dict = {}


def _binary(name: str) -> Optional[str]:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_postgres(command):
    """Commands run as the ``postgres`` user when this process is root (PostgreSQL refuses root)."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


def _start() -> str:
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if not initdb or not pg_ctl:
        raise RuntimeError("PostgreSQL's initdb/pg_ctl are not installed (Debian: apt-get install postgresql)")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        raise RuntimeError("running as root without runuser: cannot start PostgreSQL as its own user")
    folder = tempfile.mkdtemp(prefix="dcsr-pg-")
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data = os.path.join(folder, "data")
    port = _free_port()
    icu = ["--locale-provider=icu", "--icu-locale=en-US", "--locale=C.UTF-8"]
    init = subprocess.run(
        _as_postgres([initdb, "-D", data, "-U", "postgres", "--auth=trust", *icu]), capture_output=True, text=True
    )
    if init.returncode != 0:  # a build without ICU: the default collation
        shutil.rmtree(data, ignore_errors=True)
        init = subprocess.run(
            _as_postgres([initdb, "-D", data, "-U", "postgres", "--auth=trust"]), capture_output=True, text=True
        )
    if init.returncode != 0:
        raise RuntimeError(f"initdb failed: {init.stderr.strip()[-300:]}")
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    start = subprocess.run(
        _as_postgres([pg_ctl, "-D", data, "-o", options, "-l", os.path.join(folder, "log"), "-w", "start"]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if start.returncode != 0:
        raise RuntimeError(f"pg_ctl start failed: {start.stderr.strip()[-300:]}")
    atexit.register(
        lambda: subprocess.run(_as_postgres([pg_ctl, "-D", data, "-m", "immediate", "stop"]), capture_output=True)
    )
    return f"postgresql://postgres@127.0.0.1:{port}"


def server_url() -> str:
    """The server's URL (no database), or a skip saying why there is none."""
    if "url" not in _server and "error" not in _server:
        try:
            _server["url"] = os.environ.get("DCSR_POSTGRES_URL") or _start()
        except (RuntimeError, OSError, subprocess.SubprocessError) as error:
            _server["error"] = str(error)
    if "error" in _server:
        pytest.skip(f"no PostgreSQL server: {_server['error']}")
    pytest.importorskip("psycopg2", reason="psycopg2 is not installed (make installs psycopg2-binary)")
    return _server["url"]


def new_database_url(name: str) -> str:
    """A new, empty database on the server; its SQLAlchemy URL."""
    import psycopg2

    url = server_url()
    database = f"dcsr_{name}_{uuid.uuid4().hex[:8]}".lower()
    connection = psycopg2.connect(f"{url}/postgres")
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{database}"')
    connection.close()
    return f"{url}/{database}"
