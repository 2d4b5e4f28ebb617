"""What site templates cost: memory per site (embedded and Redis), learning and reading time,
the worker's line stripping, and the size of what a job carries to a worker.

Sites of STORIES stories, each story LINES lines of its own plus TEMPLATE template lines (of
one template, or ``--templates N`` a site: a portal), are
learned into a fresh embedded index and a fresh Redis index side by side (the sites full at
SITE_LINES, the worst case). Run: ``python benchmarks/site_bench.py [--sites 200]``; starts
its own redis-server (or ``--url``).
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import random
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from redis_server import RedisServer

from nearDupe.sitetemplate import SITE_LINES, strip_template
from nearDupe.store import EmbeddedIndex, EmbeddedStore, IndexHeader, Store
from nearDupe.store.redis import RedisStore

STORIES, LINES, TEMPLATE = 60, 40, 30


def pages(sites: int, rng: random.Random, templates: int = 1) -> list[tuple[str, int, list[int]]]:
    """(site, story identity, its line hashes), the sites' stories interleaved; a site's
    stories in ``templates`` templates of their own (a portal's sections), in turn."""
    template = {
        (s, t): [rng.getrandbits(64) for _ in range(TEMPLATE)]
        for s in range(sites)
        for t in range(templates)
    }
    out = []
    for story in range(STORIES):
        for s in range(sites):
            own = [rng.getrandbits(64) for _ in range(LINES)]
            out.append((f"site{s}.example", story + 1, own + template[s, story % templates]))
    return out


async def learn_all(store: Store, work: list[tuple[str, int, list[int]]]) -> list[float]:
    """Learn every page; the time of each call."""
    times = []
    for site, identity, lines in work:
        start = time.perf_counter()
        await store.learn_site(site, identity, lines)
        times.append(time.perf_counter() - start)
    return times


async def read_all(store: Store, sites: list[str]) -> list[float]:
    """Read every site's template; the time of each call."""
    times = []
    for site in sites:
        start = time.perf_counter()
        await store.site_template(site)
        times.append(time.perf_counter() - start)
    return times


def us(times: list[float]) -> str:
    """The median in microseconds."""
    return f"{statistics.median(times) * 1e6:,.0f} µs"


async def main() -> None:
    """Learn the same pages into both backends and print one table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=200)
    parser.add_argument("--templates", type=int, default=1, help="templates a site's pages use")
    parser.add_argument("--url", help="a Redis to use instead of starting one")
    args = parser.parse_args()
    work = pages(args.sites, random.Random(1), args.templates)
    names = sorted({site for site, _, _ in work})
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        url = args.url or stack.enter_context(RedisServer(Path(tmp) / "redis")).url
        embedded = EmbeddedStore(EmbeddedIndex(Path(tmp) / "index", IndexHeader()))
        redis = RedisStore.from_url(url, IndexHeader(), name="sitebench")
        rows = []
        for name, store in (("embedded", embedded), ("Redis", redis)):
            learn = await learn_all(store, work)
            read = await read_all(store, names)
            rows.append((name, store, learn, read))
        embedded.index.commit()
        blob = embedded.index._db.execute("SELECT SUM(LENGTH(lines)) FROM sites").fetchone()
        disk = blob[0] / args.sites
        memory = [
            await redis.client.memory_usage(redis.sites.key(site), samples=0)
            for site in names[:50]
        ]
        template = await embedded.site_template(names[0])
        text = "\n".join(f"line {i} of a story, with words of its own" for i in range(60))
        start = time.perf_counter()
        for _ in range(200):
            strip_template(text, 99, template)
        strip_us = (time.perf_counter() - start) / 200 * 1e6
        print(f"# Site templates: {args.sites} sites x {STORIES} stories x "
              f"{LINES + TEMPLATE} lines in {args.templates} template(s) a site "
              f"(full at SITE_LINES={SITE_LINES})\n")  # fmt: skip
        print("| backend | learn a page (p50) | read a site (p50) | per full site |")
        print("|---|---|---|---|")
        for name, _, learn, read in rows:
            size = (
                f"{disk / 1024:.1f} KB on disk"
                if name == "embedded"
                else f"{statistics.mean(memory) / 1024:.1f} KB in Redis"
            )
            print(f"| {name} | {us(learn)} | {us(read)} | {size} |")
        print(
            f"\nA worker strips a 60-line page against a full site in {strip_us:,.0f} µs; "
            f"the site's template travels to it as {len(pickle.dumps(template)) / 1024:.1f} "
            f"KB. 10^5 full sites: {disk * 1e5 / 2**30:.1f} GiB on disk, "
            f"{statistics.mean(memory) * 1e5 / 2**30:.1f} GiB in Redis."
        )
        await embedded.close()
        await redis.close()


if __name__ == "__main__":
    asyncio.run(main())
