"""Analysis workers end with the process that owns their pool, however it ends."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="reads /proc to tell live processes"
)


def _pid_of_worker(pause: float) -> int:
    """In a worker: its pid, after ``pause`` s (so that concurrent calls reach every worker)."""
    time.sleep(pause)
    return os.getpid()


def own_a_pool(how: str) -> None:
    """The owner process: a pool of 2 workers; prints their pids, then waits to be killed.

    ``how``: ``starting`` prints them as soon as they are spawned (before they run any code
    of ours); ``ignoring`` once each has answered, the owner ignoring SIGTERM as it starts
    them (as Scrapy does after a second Ctrl-C or SIGTERM); ``holder`` once each has
    answered, then the worker holding the lock of the pool's queue, which it kills before
    it closes the pool at once and prints ``closed``."""
    from nearDupe.features import FeatureSettings
    from nearDupe.workers import WorkerPool

    if how == "ignoring":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pool = WorkerPool(2, FeatureSettings())
    executor = pool._executor
    while len(executor._processes) < 2:  # type: ignore[attr-defined]
        time.sleep(0.001)
    pids = set(executor._processes)  # type: ignore[attr-defined]
    if how != "starting":
        answered: set[int] = set()
        while answered != pids:
            futures = [executor.submit(_pid_of_worker, 0.2) for _ in pids]
            answered |= {f.result(timeout=120) for f in futures}
    if how == "holder":
        # The idle worker that holds the queue's lock reads the queue's pipe (read(2) is
        # syscall 0 on x86-64); the other waits for the lock. Killed, it never lets go.
        deadline = time.monotonic() + 30
        while not (holders := [p for p in pids if _syscall(p) == "0"]):
            assert time.monotonic() < deadline, "no worker reads the queue"
            time.sleep(0.01)
        print(" ".join(map(str, sorted(pids))), flush=True)
        print(holders[0], flush=True)
        os.kill(holders[0], signal.SIGKILL)
        pool.close()
        print("closed", flush=True)
        time.sleep(600)
    print(" ".join(map(str, sorted(pids))), flush=True)
    time.sleep(600)


def _syscall(pid: int) -> str:
    """The number of the system call the main thread of ``pid`` is blocked in."""
    return Path(f"/proc/{pid}/syscall").read_text().split()[0]


def _alive(pid: int) -> bool:
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return False


def _gone_within(pids: set[int], seconds: float) -> set[int]:
    """The ``pids`` still alive after up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while (alive := {p for p in pids if _alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


@contextlib.contextmanager
def _owner(how: str):  # type: ignore[no-untyped-def]
    """(owner process, its workers' pids); both killed at the end whatever happened."""
    owner = subprocess.Popen(
        [sys.executable, "-c", f"from tests.test_workers import own_a_pool; own_a_pool({how!r})"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    pids: set[int] = set()
    try:
        assert owner.stdout is not None
        pids = {int(p) for p in owner.stdout.readline().split()}
        assert pids, "the owner printed no workers"
        yield owner, pids
    finally:
        owner.kill()
        owner.wait()
        for pid in pids:  # ours, if they outlived it
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_workers_end_when_their_owner_is_killed_while_they_start() -> None:
    """kill -9 of the owner before its workers ran any code: they end once they can (before,
    they took the process that adopted them for their owner and outlived it)."""
    with _owner("starting") as (owner, workers):
        owner.kill()
        owner.wait()
        assert not _gone_within(workers, 20), "workers outlived their owner"


def test_sigterm_ends_the_workers_of_an_owner_ignoring_it() -> None:
    """Workers get the SIGTERM their owner ignored when it started them, and end at once."""
    with _owner("ignoring") as (owner, workers):
        for pid in workers:
            os.kill(pid, signal.SIGTERM)
        assert not _gone_within(workers, 2), "SIGTERM was ignored"
        assert owner.poll() is None


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="reads x86-64 syscall numbers")
def test_closing_the_pool_after_a_worker_died_holding_its_lock_ends_the_others() -> None:
    """A worker killed while it held the lock of the pool's queue, just before the pool
    closes: the close returns and the other worker ends (the pool's own shutdown waited for
    it forever)."""
    with _owner("holder") as (owner, workers):
        assert owner.stdout is not None
        killed = int(owner.stdout.readline())
        finished: list[str] = []
        reader = threading.Thread(target=lambda: finished.append(owner.stdout.readline()))
        reader.start()
        reader.join(10)
        assert finished == ["closed\n"], "the pool's close hangs"
        assert not _gone_within(workers - {killed}, 3)
