"""Which inner loops an index runs: plain numpy, or numba's compiled ones where they pay.

numba's kernels (nearDupe/_kernels.py, nearDupe/_sample_kernels.py) answer a query in a few
microseconds, numpy's (nearDupe/_kernels_numpy.py) in tens, but ``import numba`` and loading the
cached kernels costs ~2 s of CPU and compiling them 15-45 s. So an index starts on numpy and
moves to numba only when it is large enough for the difference to matter (see the crossovers
below) and only once the kernels are compiled: the compile never runs on a crawl's path. When
numba's cache for the current source is not ready, a low-priority background process
(``python -m nearDupe.kernels``, nice 19, ended after :data:`COMPILE_SECONDS`) fills it; when it
is ready, a background thread loads the kernels, and each index moves to them at its next query
or run (:func:`choose` is the one place that decides).

numba's cache goes to ``$NEARDUPE_KERNEL_CACHE``, else ``$XDG_CACHE_HOME/nearDupe/numba``, else
``~/.cache/nearDupe/numba`` (writable wherever the package is installed). ``NEARDUPE_KERNELS``
= ``numpy`` or ``numba`` forces one module (``numba`` compiles on first use if it must).
numba's and its dependencies' loggers are set to WARNING before it is imported: compiling logs
tens of thousands of DEBUG lines.
"""

from __future__ import annotations

import gc
import hashlib
import importlib.metadata
import json
import logging
import os
import platform
import subprocess
import sys
import threading
import time
from functools import cache
from pathlib import Path
from types import ModuleType

from nearDupe import _kernels_numpy

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no background compile, numpy only
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

#: Stored fingerprints from which a block index runs numba's kernels (when compiled). A query
#: of the default design costs numpy ~30 µs more than numba at 10**4-10**5 and the gap grows
#: with the index (see ``benchmarks/index_bench.py --kernels``).
INDEX_CROSSOVER = 1_000_000
#: Entries (pages x sampled sentences) from which the sentence-sample index runs numba's.
SAMPLE_CROSSOVER = 4_000_000
#: An index this share of its crossover starts the background compile (it is ready long
#: before the index needs it).
COMPILE_FROM = 1 / 16
#: The background compile ends by then, done or not (numba keeps each kernel it compiled, so
#: the next one resumes).
COMPILE_SECONDS = 75
CACHE_ENV = "NEARDUPE_KERNEL_CACHE"
BACKEND_ENV = "NEARDUPE_KERNELS"
#: Libraries logging below WARNING while numba imports or compiles.
_QUIET = ("numba", "llvmlite")
_SOURCES = ("_kernels.py", "_sample_kernels.py")
#: Seconds between two looks at the cache while it is not ready.
_RECHECK_SECONDS = 30.0

#: The compiled modules (index, sample) once loaded in this process.
_numba: tuple[ModuleType, ModuleType] | None = None
#: Bumped when the compiled modules become available: indexes then choose again.
generation = 0
_forced: str | None = None
_lock = threading.Lock()
_load_lock = threading.Lock()
_loading = False
_spawned = False
_next_check = 0.0


def cache_dir() -> Path:
    """Where numba's cache of the kernels lives."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nearDupe" / "numba"


def force(name: str | None) -> None:
    """Run every index on ``"numpy"`` or ``"numba"`` kernels (None: choose by size)."""
    global _forced, generation
    if name not in (None, "numpy", "numba"):
        raise ValueError(f"kernels are 'numpy' or 'numba', not {name!r}")
    _forced = name
    generation += 1


def choose(pages: int, *, sample: bool = False) -> ModuleType:
    """The kernel module for an index of ``pages`` stored fingerprints (``sample``: of the
    sentence-sample index, ``pages`` entries). Never compiles: numpy until numba's are loaded."""
    forced = _forced or os.environ.get(BACKEND_ENV) or None
    if forced == "numpy":
        return _kernels_numpy
    if forced == "numba":
        return load_numba()[sample]
    crossover = SAMPLE_CROSSOVER if sample else INDEX_CROSSOVER
    if pages >= crossover and _numba is not None:
        return _numba[sample]
    if pages >= crossover * COMPILE_FROM:
        _prepare()
    return _kernels_numpy


class Choice:
    """The kernels one index runs: chosen by its size, chosen again (:meth:`update`) as it
    grows or once numba's kernels are loaded or forced (:attr:`stale`)."""

    def __init__(self, *, sample: bool = False) -> None:
        self.sample = sample
        self.generation = generation
        self.module = choose(0, sample=sample)
        self.module.warm_up()

    @property
    def stale(self) -> bool:
        """Whether the kernels loaded or forced changed since the last choice."""
        return self.generation != generation

    def update(self, pages: int) -> bool:
        """Choose for an index of ``pages``; whether the choice changed (then warmed up)."""
        self.generation = generation
        kern = choose(pages, sample=self.sample)
        if kern is self.module:
            return False
        kern.warm_up()
        self.module = kern
        return True


def _prepare() -> None:
    """Load numba's kernels in the background if they are compiled, else compile them in a
    background process; at most once every _RECHECK_SECONDS."""
    global _next_check, _loading
    now = time.monotonic()
    with _lock:
        if _loading or _numba is not None or now < _next_check:
            return
        _next_check = now + _RECHECK_SECONDS
        ready = is_ready()
        _loading = ready
    if ready:
        threading.Thread(target=_load_in_background, name="nearDupe-kernels", daemon=True).start()
    else:
        spawn_compile()


def _load_in_background() -> None:
    global _loading
    try:
        load_numba()
    except Exception:
        logger.warning("nearDupe: numba's kernels did not load; numpy's serve", exc_info=True)
    finally:
        _loading = False


def quiet_numba_logs() -> None:
    """numba logs every compile step at DEBUG: nothing of it below WARNING reaches a crawl."""
    for name in _QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)


def load_numba() -> tuple[ModuleType, ModuleType]:
    """Import numba's kernels with their cache in :func:`cache_dir` and load them (compiling
    what the cache lacks), then mark the cache ready."""
    global _numba, generation
    with _load_lock:
        if _numba is not None:
            return _numba
        quiet_numba_logs()
        from numba.core import config

        saved = config.CACHE_DIR  # type: ignore[attr-defined]
        config.CACHE_DIR = str(cache_dir())  # type: ignore[attr-defined]  # read at decoration
        try:
            from nearDupe import _kernels, _sample_kernels
        finally:
            config.CACHE_DIR = saved  # type: ignore[attr-defined]
        _kernels.warm_up()
        _sample_kernels.warm_up()
        _mark_ready((_kernels, _sample_kernels))
        if gc.get_freeze_count():  # a crawl froze its long-lived objects (nearDupe/gcfreeze.py)
            gc.freeze()  # numba's ~50,000 join them: each full collection would walk them
        _numba = (_kernels, _sample_kernels)
        generation += 1
        return _numba


def is_ready() -> bool:
    """Whether numba's cache holds every kernel of the current source (without importing
    numba)."""
    try:
        marker = json.loads(_marker().read_text())
    except (OSError, ValueError):
        return False
    return isinstance(marker, list) and bool(marker) and all(os.path.exists(p) for p in marker)


def _marker() -> Path:
    return cache_dir() / f"ready-{_cache_key()}.json"


def _cache_key() -> str:
    """What numba's cache entries depend on: its version, Python's, the CPU, the sources'
    stamps (numba reuses an entry only for the same modification time and size)."""
    here = Path(__file__).parent
    parts = [_numba_version(), sys.version, platform.machine(), _cpu_model()]
    for name in _SOURCES:
        st = (here / name).stat()
        parts.append(f"{here / name}:{st.st_mtime_ns}:{st.st_size}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]


@cache
def _numba_version() -> str:
    try:
        return importlib.metadata.version("numba")
    except importlib.metadata.PackageNotFoundError:
        return "?"


@cache
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("model name", "Processor", "cpu model")):
                    return line.split(":", 1)[-1].strip()
    except OSError:
        pass
    return platform.processor()


def _mark_ready(modules: tuple[ModuleType, ...]) -> None:
    """Record the cache's index files of every kernel loaded (their absence means not ready)."""
    from numba.core.dispatcher import Dispatcher

    files = []
    for module in modules:
        for obj in vars(module).values():
            cache_file = getattr(getattr(obj, "_cache", None), "_cache_file", None)
            path = getattr(cache_file, "_index_path", None)
            if isinstance(obj, Dispatcher) and path and os.path.exists(path):
                files.append(path)
    marker = _marker()
    try:
        if files and not marker.exists():
            tmp = marker.with_name(f"{marker.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(files))
            os.replace(tmp, marker)
    except OSError:
        logger.debug("nearDupe: could not mark the kernel cache %s ready", marker, exc_info=True)


def spawn_compile() -> subprocess.Popen[bytes] | None:
    """Start the background compile unless one runs (its lock file is held) or this process
    started one already; returns it."""
    global _spawned
    if fcntl is None or _spawned:
        return None
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / "compile.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when closed
    except OSError:  # held by a running compile, or the directory is not writable
        return None
    _spawned = True
    process = subprocess.Popen(
        [sys.executable, "-m", "nearDupe.kernels"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, CACHE_ENV: str(directory)},
        start_new_session=True,  # not in the crawl's process group: Ctrl-C is the crawl's
    )
    threading.Thread(target=process.wait, name="nearDupe-compile", daemon=True).start()
    return process


def _compile() -> None:
    """The background compile: nice 19, one at a time (the lock file holds its pid), ended by
    SIGALRM after COMPILE_SECONDS."""
    import signal

    if fcntl is None:
        return
    os.nice(19)
    signal.alarm(COMPILE_SECONDS)
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "compile.lock", "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return
        lock.truncate(0)
        lock.write(str(os.getpid()))
        lock.flush()
        if not is_ready():
            load_numba()


if __name__ == "__main__":
    _compile()
