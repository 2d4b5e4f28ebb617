"""Runs CPU-heavy analysis off the reactor thread: a process pool, or one thread when workers=0."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from nearDupe.analysis import warm_up
from nearDupe.features import FeatureSettings, has_chinese, load_chinese

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Seconds a closing pool gives its workers to end before it kills them.
_CLOSE_WAIT = 5.0
#: Longest page analysed in the crawl's thread while the workers start: no time limit applies
#: there, and an article page is a few hundred kB (a 3 MB page of 400,000 <p> takes seconds).
_BRIDGE_CHARS = 500_000
#: prctl(2)'s option that names the signal a process gets when its parent ends (Linux).
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In a worker, on Linux: have the kernel SIGKILL it when the thread that started it ends
    (a worker stuck in C code holding the GIL, which no thread of its own can end, ends too)."""
    if not sys.platform.startswith("linux"):  # the lifeline alone
        return
    with contextlib.suppress(OSError, AttributeError):  # a libc without prctl
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _exit_at_eof(fd: int) -> None:
    """In a worker's thread: end the process once the pipe's other end is closed, which the
    kernel does when the process holding it ends, however it ends (``kill -9`` included)."""
    while True:
        try:
            if not os.read(fd, 1):
                break
        except OSError:
            break
    os._exit(0)


def _exit_with_parent(parent: int, lifeline: Connection) -> None:
    """In a worker: end the process with the crawl that started it. The crawl holds the
    writing end of ``lifeline``; only it does (the pipe is not inheritable, and spawned
    processes get the descriptors they are passed), so its end is read as EOF here once the
    crawl is gone, even if it was gone before this worker got this far (its parent is then
    already another process: a parent's pid read here could not tell)."""
    _die_with_parent()
    if os.getppid() != parent:  # gone before the kernel was told
        os._exit(0)
    threading.Thread(
        target=_exit_at_eof, args=(lifeline.fileno(),), name="neardupe-lifeline", daemon=True
    ).start()


class AnalysisTimeout(BaseException):
    """A page took longer than NEARDUPE_ANALYSIS_TIMEOUT in a worker process (a
    BaseException, so that no ``except Exception`` of the extraction code swallows it)."""


def within(seconds: float, func: Callable[..., T], *args: Any) -> T:
    """In a worker process: ``func(*args)``, interrupted by :class:`AnalysisTimeout` after
    ``seconds`` (0: no limit). The work is Python code (readability's scoring), so a timer
    signal stops it; a thread (``NEARDUPE_WORKERS=0``) cannot be stopped and runs unbounded."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        return func(*args)

    def expire(signum: int, frame: object) -> None:
        raise AnalysisTimeout(f"analysis took over {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return func(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def analyze_within(seconds: float, func: Callable[..., T], text: str, *args: Any) -> T:
    """In a worker process: ``func(text, *args)`` within ``seconds`` (see :func:`within`).

    jieba's dictionary and HMM, needed only for Chinese, are loaded before the timer starts,
    on the first text with Chinese (a third of a second and 32 MB, once per process)."""
    if has_chinese(text):
        load_chinese()
    return within(seconds, func, text, *args)


def start_worker(features: FeatureSettings, parent: int, lifeline: Connection) -> None:
    """Worker initializer: end with the crawl (``parent``), let SIGTERM end the worker (a
    crawl ignoring it, as Scrapy does after a second Ctrl-C or SIGTERM, passes that on to the
    workers it spawns), then load the dictionaries before pages come."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _exit_with_parent(parent, lifeline)
    warm_up(features)


class WorkerPool:
    """Processes (the GIL would serialise threads) that answer awaitably on any reactor."""

    def __init__(self, workers: int, features: FeatureSettings) -> None:
        self.workers = workers
        self.features = features
        context = multiprocessing.get_context("spawn")
        #: The workers' lifeline: they end when its writing end, held by this process, closes.
        self._lifeline, self._lifeline_end = context.Pipe(duplex=False)
        #: Set when the executor is let go: its starting thread may then end.
        self._released = threading.Event()
        #: Set once a worker process answers; until then pages go to :attr:`_bridge`.
        self._ready = threading.Event()
        #: A thread that analyses a crawl's first pages while the workers start (a worker
        #: takes seconds to import the extractor): the first page is decided at once.
        self._bridge = ThreadPoolExecutor(1, thread_name_prefix="neardupe-bridge")
        self._closed = False
        self._executor = self._start()
        # The bridge loads what every page needs before the first one comes; jieba's tables
        # wait for its first Chinese page (analyze_within), as in a worker: loaded first, they
        # kept an English first page waiting.
        if workers > 0:
            self._bridge.submit(warm_up, features)

    def _start(self) -> Executor:
        if self.workers <= 0:
            self._ready.set()
            return ThreadPoolExecutor(1, thread_name_prefix="neardupe")
        # spawn: forking a process that runs a reactor and threads is unsafe.
        executor = ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=start_worker,
            initargs=(self.features, os.getpid(), self._lifeline),
        )
        released = self._released = threading.Event()

        # The pool starts its processes on the first submits; starting one takes tens of ms,
        # so make those submits from a helper thread rather than on the reactor's first pages.
        # The kernel signals a worker when the *thread* that started it ends (prctl's parent
        # death signal), so that thread lives as long as the executor.
        def start() -> None:
            for _ in range(self.workers):
                executor.submit(int).add_done_callback(lambda _: self._ready.set())
            released.wait()

        threading.Thread(target=start, name="neardupe-pool-start", daemon=True).start()
        return executor

    @property
    def started(self) -> bool:
        """Whether a worker answers (before that, pages are analysed in a thread)."""
        return self._ready.is_set()

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """func(*args) in the pool; a broken pool (a worker died) is restarted and retried once.

        While no worker has started yet, a page's analysis runs in a thread of the crawl
        instead, unbounded by the time limit."""
        if not self._ready.is_set() and _bridgeable(func, args):
            return await self._await(self._bridge.submit(func, *args))
        try:
            return await self._await(self._executor.submit(func, *args))
        except BrokenProcessPool:
            if self._closed:
                raise
            logger.warning("nearDupe worker pool broke (a worker died); restarting it")
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._released.set()
            self._executor = self._start()
            return await self._await(self._executor.submit(func, *args))

    @staticmethod
    async def _await(future: Future[T]) -> T:
        # Imported here: a worker process imports this module, and needs neither.
        from scrapy.utils.defer import maybe_deferred_to_future
        from twisted.internet import reactor
        from twisted.internet.defer import Deferred

        deferred: Deferred[T] = Deferred()

        def settle(done: Future[T]) -> None:
            exc = done.exception()
            if exc is None:
                deferred.callback(done.result())
            else:
                deferred.errback(exc)

        future.add_done_callback(lambda done: reactor.callFromThread(settle, done))
        return await maybe_deferred_to_future(deferred)

    def close(self) -> None:
        """Stop the workers, at once: pending work is cancelled, and work under way is left
        unfinished (the crawl is over). They end by their lifeline rather than the pool's
        shutdown, which waits forever when a worker was killed while it held the queue's lock
        that the others wait behind (the pool did not see it die first)."""
        self._closed = True
        self._bridge.shutdown(wait=False, cancel_futures=True)
        executor = self._executor
        if isinstance(executor, ThreadPoolExecutor):
            executor.shutdown(wait=True, cancel_futures=True)
            return
        processes = list((getattr(executor, "_processes", None) or {}).values())
        executor.shutdown(wait=False, cancel_futures=True)
        self._released.set()
        self._lifeline_end.close()  # every worker reads EOF and ends
        self._lifeline.close()
        deadline = time.monotonic() + _CLOSE_WAIT
        waiting = {process.sentinel: process for process in processes}
        while waiting and (left := deadline - time.monotonic()) > 0:
            for ended in multiprocessing.connection.wait(list(waiting), left):
                del waiting[ended]  # type: ignore[arg-type]
        for process in waiting.values():  # stuck where no thread of its own can run
            with contextlib.suppress(OSError):
                os.kill(process.pid, signal.SIGKILL)


def _bridgeable(func: Callable[..., Any], args: tuple[Any, ...]) -> bool:
    """Whether a call may run in the crawl's own thread: a page analysis of a text of at most
    _BRIDGE_CHARS."""
    return (
        func is analyze_within
        and len(args) > 2
        and isinstance(args[2], str)
        and len(args[2]) <= _BRIDGE_CHARS
    )
