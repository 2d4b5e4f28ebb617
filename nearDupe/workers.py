"""Runs CPU-heavy analysis off the reactor thread: a process pool, or one thread when workers=0."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from nearDupe.analysis import warm_up
from nearDupe.features import FeatureSettings, has_chinese, load_chinese

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: How often a worker checks that the crawl that started it is alive (seconds).
_PARENT_CHECK_INTERVAL = 1.0


def _exit_with_parent(parent: int) -> None:
    """In a worker: end the process once its parent is gone (a ``kill -9`` of the crawl gives
    the pool no chance to stop it; the worker is then adopted by another process)."""
    while os.getppid() == parent:
        time.sleep(_PARENT_CHECK_INTERVAL)
    os._exit(0)


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

    jieba's dictionary, needed only for Chinese, is loaded before the timer starts, on the
    first text with Chinese (about a second, once per worker): a crawl that meets no Chinese
    page never loads it (a worker holds 115 MB instead of 304)."""
    if has_chinese(text):
        load_chinese()
    return within(seconds, func, text, *args)


def start_worker(features: FeatureSettings) -> None:
    """Worker initializer: watch the parent, then load the dictionaries before pages come."""
    parent = os.getppid()
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    warm_up(features)


class WorkerPool:
    """Processes (the GIL would serialise threads) that answer awaitably on any reactor."""

    def __init__(self, workers: int, features: FeatureSettings) -> None:
        self.workers = workers
        self.features = features
        self._executor = self._start()

    def _start(self) -> Executor:
        if self.workers <= 0:
            return ThreadPoolExecutor(1, thread_name_prefix="neardupe")
        # spawn: forking a process that runs a reactor and threads is unsafe.
        executor = ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=start_worker,
            initargs=(self.features,),
        )
        # The pool starts its processes on the first submits; starting one takes tens of ms,
        # so make those submits from a helper thread rather than on the reactor's first pages.
        threading.Thread(
            target=lambda: [executor.submit(int) for _ in range(self.workers)],
            name="neardupe-pool-start",
            daemon=True,
        ).start()
        return executor

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """func(*args) in the pool; a broken pool (a worker died) is restarted and retried once."""
        try:
            return await self._await(self._executor.submit(func, *args))
        except BrokenProcessPool:
            logger.warning("nearDupe worker pool broke (a worker died); restarting it")
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = self._start()
            return await self._await(self._executor.submit(func, *args))

    @staticmethod
    async def _await(future: Future[T]) -> T:
        from twisted.internet import reactor

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
        """Stop the workers (pending work is cancelled)."""
        self._executor.shutdown(wait=True, cancel_futures=True)


async def off_the_loop(func: Callable[[], T]) -> T:
    """func() in a thread when an asyncio loop runs (reading an index's tables, compiling the
    search kernels on a first run, ~3 s, or Redis's handshake must not hold the reactor);
    inline otherwise (another reactor)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return func()
    return await loop.run_in_executor(None, func)
