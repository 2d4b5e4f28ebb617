"""What site templates cost: memory per site (embedded and Redis), learning and reading time,
the worker's line stripping, and the size of what a job carries to a worker.

Sites (hosts) of STORIES stories, each story LINES lines of its own plus TEMPLATE template lines
(of one template, or ``--templates N`` a host: a portal, each template with its own chrome,
so its pages go to the memory sitetemplate.site_memory gives them), are learned into a fresh
embedded index and a fresh Redis index side by side (the memories full at SITE_LINES, the
worst case). Run: ``python benchmarks/site_bench.py [--sites 200] [--templates 300 --sites 2
--stories 3000]``; starts its own redis-server (or ``--url``).
"""

from __future__ import annotations

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

from _harness import arguments, markdown, p50_p99
from redis_server import RedisServer

from nearDupe.sitetemplate import HOST_TEMPLATES, SITE_LINES, site_memory, strip_template
from nearDupe.store import EmbeddedIndex, EmbeddedStore, IndexHeader, Store
from nearDupe.store.redis import RedisStore

STORIES, LINES, TEMPLATE = 60, 40, 30
#: The class names of a template's chrome (each template: with a suffix of its own).
CHROME = ("top", "nav", "menu", "logo", "search", "crumbs", "side", "ad")


def chrome(template: int) -> str:
    """A page of a template of its own: 8 class names before its headline."""
    suffix = chr(97 + template % 26) + chr(97 + template // 26 % 26)
    names = " ".join(f"{part}{suffix}" for part in CHROME)
    return f'<html><body><div class="{names}"></div><h1>Headline</h1></body></html>'


def pages(
    sites: int, rng: random.Random, templates: int = 1, stories: int = STORIES
) -> list[tuple[str, int, list[int]]]:
    """(site memory, story identity, its line hashes), the hosts' stories interleaved; a host's
    stories in ``templates`` templates of their own (a portal's sections), in turn."""
    template = {
        (s, t): [rng.getrandbits(64) for _ in range(TEMPLATE)]
        for s in range(sites)
        for t in range(templates)
    }
    memory = {
        (s, t): site_memory(f"site{s}.example", chrome(t))
        for s in range(sites)
        for t in range(templates)
    }
    out = []
    for story in range(stories):
        for s in range(sites):
            own = [rng.getrandbits(64) for _ in range(LINES)]
            t = story % templates
            out.append((memory[s, t], story + 1, own + template[s, t]))
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


def us(seconds: float) -> str:
    """A time in microseconds."""
    return f"{seconds * 1e6:,.0f} µs"


async def main() -> None:
    """Learn the same pages into both backends and print one table."""
    parser = arguments(__doc__)
    parser.add_argument("--sites", type=int, default=200)
    parser.add_argument("--templates", type=int, default=1, help="templates a site's pages use")
    parser.add_argument("--stories", type=int, default=STORIES, help="stories a site")
    parser.add_argument("--url", help="a Redis to use instead of starting one")
    args = parser.parse_args()
    work = pages(args.sites, random.Random(1), args.templates, args.stories)
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
        disk = blob[0] / len(names)  # per memory
        memory = [
            await redis.client.memory_usage(redis.sites.key(site), samples=0)
            for site in names[:200]
        ]
        full = sum([len((await embedded.site_template(n)).lines) == SITE_LINES for n in names])
        template = await embedded.site_template(names[0])
        text = "\n".join(f"line {i} of a story, with words of its own" for i in range(60))
        start = time.perf_counter()
        for _ in range(200):
            strip_template(text, 99, template)
        strip_us = (time.perf_counter() - start) / 200 * 1e6
        print(f"# Site templates: {args.sites} hosts x {args.stories} stories x "
              f"{LINES + TEMPLATE} lines in {args.templates} template(s) a host: "
              f"{len(names)} memories, {full} full (at SITE_LINES={SITE_LINES}); "
              f"at most {HOST_TEMPLATES} memories a host\n")  # fmt: skip
        cells = []
        for name, _, learn, read in rows:
            size = (
                f"{disk / 1024:.1f} KB on disk"
                if name == "embedded"
                else f"{statistics.mean(memory) / 1024:.1f} KB in Redis"
            )
            per_host = (disk if name == "embedded" else statistics.mean(memory)) * len(names)
            learn_p50, learn_p99 = p50_p99(learn)
            cells.append(
                [name, us(learn_p50), us(learn_p99), us(p50_p99(read)[0]), size,
                 f"{per_host / args.sites / 1024:,.0f} KB"]
            )  # fmt: skip
        headings = ["backend", "learn a page (p50)", "learn a page (p99)", "read a memory (p50)"]
        print("\n".join(markdown([*headings, "per memory (mean)", "per host"], cells)))
        print(
            f"\nA worker strips a 60-line page against a full site in {strip_us:,.0f} µs; "
            f"the site's template travels to it as {len(pickle.dumps(template)) / 1024:.1f} "
            f"KB. 10^5 such hosts: {disk * len(names) / args.sites * 1e5 / 2**30:.1f} GiB on "
            f"disk, {statistics.mean(memory) * len(names) / args.sites * 1e5 / 2**30:.1f} GiB "
            f"in Redis. A host's bound ({HOST_TEMPLATES} memories) when they are full: "
            f"{HOST_TEMPLATES * disk / 2**20:.1f} MB on disk, "
            f"{HOST_TEMPLATES * statistics.mean(memory) / 2**20:.1f} MB in Redis."
        )
        await embedded.close()
        await redis.close()


if __name__ == "__main__":
    asyncio.run(main())
