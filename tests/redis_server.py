"""Real ``redis-server`` processes for tests: one server or a small cluster, on free ports."""

from __future__ import annotations

import contextlib
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REDIS_SERVER = shutil.which("redis-server")
REDIS_CLI = shutil.which("redis-cli")


def require_redis() -> str:
    """The redis-server binary, or skip the calling test."""
    if REDIS_SERVER is None:
        pytest.skip("redis-server binary not found on PATH (apt-get install redis-server)")
    return REDIS_SERVER


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


_taken: set[int] = set()


def free_cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free too (below 55536)."""
    rng = random.Random()
    while True:
        port = rng.randrange(20000, 45000)
        if port not in _taken and _bindable(port) and _bindable(port + 10000):
            _taken.add(port)
            return port


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith((b"+PONG", b"-NOAUTH"))
    except OSError:
        return False


class RedisServer:
    """One redis-server on 127.0.0.1, its data (AOF, fsync always) in ``directory``."""

    def __init__(
        self, directory: Path, port: int | None = None, *, extra: tuple[str, ...] = ()
    ) -> None:
        self.binary = require_redis()
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.extra = extra
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:port/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> RedisServer:
        """Start the server and wait until it answers PING."""
        args = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.directory),
            "--appendonly", "yes",
            "--appendfsync", "always",
            "--save", "",
            "--protected-mode", "no",
            "--daemonize", "no",
            "--logfile", "redis.log",
            *self.extra,
        ]  # fmt: skip
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while not _ping(self.port):
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode() if self.process.stderr else ""
                log = self.directory / "redis.log"
                err += log.read_text()[-2000:] if log.exists() else ""
                raise RuntimeError(f"redis-server exited with {self.process.returncode}: {err}")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"redis-server on port {self.port} did not answer PING")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Shut down cleanly (SIGTERM: Redis flushes its AOF)."""
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        """Kill without warning (SIGKILL)."""
        self._signal(signal.SIGKILL)

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): connections stay open but nothing answers."""
        if self.process is not None:
            self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Undo :meth:`pause`."""
        if self.process is not None:
            self.process.send_signal(signal.SIGCONT)

    def restart(self) -> RedisServer:
        """Stop (if running) and start again on the same port and directory."""
        self.stop()
        return self.start()

    def _signal(self, sig: signal.Signals) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(sig)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stderr:
            self.process.stderr.close()
        self.process = None

    def __enter__(self) -> RedisServer:
        return self.start() if self.process is None else self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@contextlib.contextmanager
def redis_server(directory: Path, **options: object) -> Iterator[RedisServer]:
    """A started :class:`RedisServer`, stopped on exit."""
    with RedisServer(directory, **options) as server:  # type: ignore[arg-type]
        yield server


class RedisCluster:
    """``n`` cluster-enabled redis-servers joined with ``redis-cli --cluster create``."""

    def __init__(self, directory: Path, n: int = 3) -> None:
        require_redis()
        if REDIS_CLI is None:
            pytest.skip("redis-cli binary not found on PATH")
        self.nodes = [
            RedisServer(
                Path(directory) / f"node{i}",
                free_cluster_port(),
                extra=("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"),
            )
            for i in range(n)
        ]

    @property
    def url(self) -> str:
        """A URL of one node (redis-py discovers the others)."""
        return f"redis://127.0.0.1:{self.nodes[0].port}"

    def start(self, timeout: float = 20.0) -> RedisCluster:
        """Start the nodes, assign the slots and wait for ``cluster_state:ok``."""
        for node in self.nodes:
            node.start()
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        subprocess.run(
            [
                REDIS_CLI,
                "--cluster",
                "create",
                *addresses,
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=timeout,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = [
                subprocess.run(
                    [REDIS_CLI, "-p", str(node.port), "cluster", "info"],
                    capture_output=True,
                    text=True,
                    timeout=5,
                ).stdout
                for node in self.nodes
            ]
            if all("cluster_state:ok" in s for s in states):
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("Redis cluster did not reach cluster_state:ok")

    def stop(self) -> None:
        """Stop every node."""
        for node in self.nodes:
            node.stop()

    def move_slot(self, slot: int, to: int) -> None:
        """Move ``slot`` with its keys to node ``to`` (resharding, as ``redis-cli --cluster
        reshard`` does it), telling every node; clients learn it from MOVED replies."""
        import redis

        clients = [redis.Redis(port=node.port) for node in self.nodes]
        ids = [c.execute_command("CLUSTER", "MYID").decode() for c in clients]
        ports = [node.port for node in self.nodes]
        owner = next(
            ports.index(primary[1])
            for lo, hi, primary, *_ in clients[0].execute_command("CLUSTER", "SLOTS")
            if lo <= slot <= hi
        )
        if owner == to:
            return
        clients[to].execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[owner])
        clients[owner].execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[to])
        source, port = clients[owner], self.nodes[to].port
        while keys := source.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):
            source.execute_command("MIGRATE", "127.0.0.1", port, "", 0, 5000, "KEYS", *keys)
        for c in clients:
            c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[to])
            c.close()

    def __enter__(self) -> RedisCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
