"""A real Milvus standalone server for the tests: the ``milvus`` wheel's ``milvus-server`` on loopback, with a
throwaway data folder. ``MILVUS_URI`` points the tests at an existing server instead.

One server per test process is started on first use and stopped at exit (``shared_uri``); the fault tests start
their own (``MilvusServer``) so that they can kill it with SIGKILL and restart it on the same data folder.
"""

import atexit
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import pytest

START_TIMEOUT = 180
# Milvus's background loops, shortened for tests: a new collection is loaded (and a Strong read answered) after
# these ticks, so at their defaults (1,000 / 500 / 200 ms) each test collection costs seconds; a restarted server
# waits for the killed one's sessions to expire (30 s by default); the query node serves a flush's sealed segments
# once its coordinator next updates the collection's target (every 10 s by default: a wait after a load took
# 13-17 s, 1-2 s at 1 s). Nothing else changes.
TEST_CONFIG = {
    "queryCoord.checkInterval": 100,
    "queryCoord.distPullInterval": 100,
    "queryCoord.UpdateNextTargetInterval": 1,
    "proxy.timeTickInterval": 50,
    "common.session.ttl": 10,
}


def environment_settings(config: dict) -> dict:
    """``config`` as the environment variables Milvus also reads its settings from (``proxy.timeTickInterval``:
    ``PROXY_TIMETICKINTERVAL``). The wrapper's ``--extra-config`` rewrites only the keys its template lists, and
    silently drops the others (``queryCoord.UpdateNextTargetInterval`` among them)."""
    return {key.replace(".", "_").upper(): str(value) for key, value in config.items()}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_command() -> Optional[Path]:
    found = Path(sys.executable).parent / "milvus-server"
    return found if found.is_file() else None


# The wheel's ``milvus-server``, run with its port probe binding as Milvus itself does (``SO_REUSEADDR``, which Go's
# listeners set): after a kill, the killed server's connections hold its port in TIME_WAIT for up to a minute, which
# the probe's plain bind takes for a port in use, though Milvus would bind it. A restart then waits for nothing.
LAUNCH = """
import socket, sys
import milvus

def try_bind_port(self, port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        return sock
    except OSError:
        sock.close()
        return None

milvus.MilvusServerConfig.try_bind_port = try_bind_port
sys.argv[0] = "milvus-server"
sys.exit(milvus.main())
"""


class MilvusServer:
    """``milvus-server --data DIR --proxy-port PORT`` in its own process group; ``kill`` is a SIGKILL of the
    server process itself (by its pid), ``start`` again reopens the same data folder on the same ports.

    The wrapper picks free ports for Milvus's components, but its embedded etcd listens on etcd's fixed ports
    (2379, 2380) unless told otherwise: each server gets its own etcd configuration (``ETCD_CONFIG_PATH``), so
    that several servers (test workers, a fault test's own) run side by side."""

    def __init__(self, data_dir: Path, port: Optional[int] = None, config: Optional[dict] = None):
        self.data_dir = Path(data_dir)
        self.config = TEST_CONFIG if config is None else config  # {}: Milvus's own defaults
        self.port = port or free_port()
        self.etcd_client, self.etcd_peer = free_port(), free_port()
        self.process: Optional[subprocess.Popen] = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "MilvusServer":
        """Start the server and wait until it answers. Starts are serialised across processes (a lock file): the
        wrapper probes free ports for Milvus's components and releases them just before the server binds them,
        so two servers starting at once (test workers) could pick the same port."""
        if server_command() is None:
            pytest.skip("the milvus wheel's milvus-server is not installed in this environment (make installs it)")
        with open(Path(tempfile.gettempdir()) / "dcsr-milvus-start.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                return self._start()
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _start(self) -> "MilvusServer":
        self._wait_until_port_is_free()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        etcd = self.data_dir / "embedded-etcd.yaml"
        client, peer = f"http://127.0.0.1:{self.etcd_client}", f"http://127.0.0.1:{self.etcd_peer}"
        etcd.write_text(
            f"listen-client-urls: {client}\nadvertise-client-urls: {client}\n"
            f"listen-peer-urls: {peer}\ninitial-advertise-peer-urls: {peer}\ninitial-cluster: default={peer}\n"
        )
        log = open(self.data_dir / "server.log", "ab")
        command = [sys.executable, "-c", LAUNCH, "--data", str(self.data_dir), "--proxy-port", str(self.port)]
        self.process = subprocess.Popen(
            command
            + ["--etcd-port", str(self.etcd_client)]
            + [f"--extra-config={k}={v}" for k, v in self.config.items()],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **environment_settings(self.config), "ETCD_CONFIG_PATH": str(etcd)},
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"milvus-server exited with {self.process.returncode}: see {log.name}")
            if self._answers():
                return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(
            f"milvus-server did not answer on {self.uri} within {START_TIMEOUT} s; the end of {log.name}:\n"
            + log_tail(Path(log.name))
        )

    def _wait_until_port_is_free(self, timeout: float = 120.0) -> None:
        """Wait until the proxy port can be bound as the server binds it (``SO_REUSEADDR``: connections left in
        TIME_WAIT by a killed server do not count, a process still listening does), so that a restart listens
        where its clients look."""
        deadline = time.monotonic() + timeout
        while True:
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind(("127.0.0.1", self.port))
                    return
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"port {self.port} stayed busy for {timeout:.0f} s") from None
            time.sleep(1.0)

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                pass
            from pymilvus import MilvusClient

            client = MilvusClient(uri=self.uri, timeout=5, dedicated=True)  # not a shared channel in backoff
            try:
                client.list_collections()
            finally:
                client.close()
            return True
        except Exception:
            return False

    def server_pid(self) -> int:
        """The pid of the ``milvus run standalone`` process (a child of the ``milvus-server`` wrapper)."""
        assert self.process is not None
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            if parent == self.process.pid and b"run" in cmdline and b"standalone" in cmdline:
                return int(entry.name)
        raise RuntimeError("the Milvus server process was not found")

    def kill(self) -> None:
        """SIGKILL the server process, then the rest of its group (nothing is flushed or closed)."""
        os.kill(self.server_pid(), signal.SIGKILL)
        self._end_group(signal.SIGKILL)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self._end_group(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._end_group(signal.SIGKILL)
        self._end_group(signal.SIGKILL)

    def _end_group(self, sig) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass
        if sig == signal.SIGKILL:
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass


_shared: Optional[MilvusServer] = None


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as error:
        return f"(unreadable: {error})"


def shared_uri() -> str:
    """``MILVUS_URI``, or this process's own server (started on first use, stopped at exit)."""
    global _shared
    if os.environ.get("MILVUS_URI"):
        return os.environ["MILVUS_URI"]
    if _shared is None:
        for attempt in (1, 2):  # a start that hangs is tried once more, on fresh ports and a fresh folder
            folder = Path(tempfile.mkdtemp(prefix="dcsr-milvus-"))
            server = MilvusServer(folder)
            atexit.register(lambda server=server, folder=folder: (server.stop(), shutil.rmtree(folder, True)))
            try:
                _shared = server.start()
                break
            except RuntimeError as error:
                if attempt == 2:
                    raise
                print(f"the shared Milvus server did not start; starting another: {error}", file=sys.stderr)
    return _shared.uri
