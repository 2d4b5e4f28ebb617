"""Short full garbage collections during a crawl: long-lived objects kept out of their scans.

A full (generation 2) collection walks every container object in the process. nearDupe's
compiled index kernels bring ~50,000 long-lived objects (numba's dispatchers and types) into
the crawl process, and each full collection paused the reactor for 130-170 ms, against
~95 ms in a plain crawl (``benchmarks/crawl_bench.py``). Frozen objects (``gc.freeze``) are
skipped by the collector; objects that are freed by reference counting are still freed.
"""

from __future__ import annotations

import gc

#: Crawls in this process that hold the freeze (several crawlers may share one process).
_holders = 0


def freeze() -> None:
    """Collect the young garbage, then freeze every object alive (modules, the compiled
    kernels, the crawler): full collections during the crawl skip them.

    The collection is of the young generations only: in a crawl process at start a full one
    finds nothing more (0 objects after the young ones' 219) and took 0.1 s, 0.5 s on a busy
    machine, while the crawl's first requests waited."""
    global _holders
    gc.collect(1)
    gc.freeze()
    _holders += 1


def unfreeze() -> None:
    """Hand the frozen objects back to the collector once the last crawl that froze them ends."""
    global _holders
    _holders = max(0, _holders - 1)
    if not _holders:
        gc.unfreeze()
