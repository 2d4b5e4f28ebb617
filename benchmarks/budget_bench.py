"""Crawl budget: requests saved and own pages lost by the crawl budget settings, side by side.

What NEARDUPE_SKIP_MIRRORS and NEARDUPE_FOLLOW_COPIES = False save on a network of mirrors, and
the unique pages they lose, beside a crawl with both off.

A generated news network on loopback hosts, each a real HTTP server: a source of ``--stories``
stories, a full mirror (every page the source's, in its own template), a near mirror (one story
in 12 its own) and a partner (a third of its stories republished from the source, the rest its
own). Every host has the source's link structure: its home page lists its latest 20 stories,
each story links to the one before and after it and to 3 others. The source is crawled first,
then the three others at once (a crawl meeting mirrors of a site it knows), every link followed
(``tests/spiders/phased.py``), with the budget settings off, each on, and both; on the embedded
index and on a real redis-server. Printed per host kind: requests (the share saved beside
off), unique pages (the source's stories, the near mirror's and partner's own) lost, and
copies stored.

    nice python benchmarks/budget_bench.py [--stories 500] [--seeds 1 2] [--delay 0.05]
                                           [--backends embedded redis] [--configs both]

The verdicts come as fast as pages are decided, so what skipping mirrors saves depends on how
far fetching runs ahead of deciding: ``--delay 0`` is a loopback crawl's worst case.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from _harness import arguments

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

#: host kind -> loopback address.
HOSTS = {
    "source": "127.0.0.41",
    "mirror": "127.0.0.42",
    "near": "127.0.0.43",
    "partner": "127.0.0.44",
}
#: Stories a home page lists; links of a story to others of its host besides its neighbours.
LATEST, RELATED = 20, 3
#: Settings of each crawl beside the budget settings off.
CONFIGS = {
    "off": {},
    "skip-mirrors": {"NEARDUPE_SKIP_MIRRORS": True},
    "no-copy-links": {"NEARDUPE_FOLLOW_COPIES": False},
    "both": {"NEARDUPE_SKIP_MIRRORS": True, "NEARDUPE_FOLLOW_COPIES": False},
}
WORDS = sorted(
    {
        w
        for p in (ROOT / "spiders" / "demosite" / "articles" / "en").iterdir()
        for w in re.findall(r"[a-z]{3,}", p.read_text())
    }
)


def own(kind: str, i: int) -> bool:
    """Whether story i of a host kind is its own (else the source's story i)."""
    return {
        "source": True,
        "mirror": False,
        "near": i % 12 == 5,
        "partner": i % 3 != 0,
    }[kind]


def story(seed: str) -> tuple[str, str]:
    """A headline and five paragraphs of two sentences (HTML), all its own."""
    rng = random.Random(seed)

    def sentence(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."

    body = "".join(f"<p>{sentence(14)} {sentence(12)}</p>" for _ in range(5))
    return sentence(6)[:-1], body


def page(kind: str, title: str, main: str, links: list[int]) -> bytes:
    """A page in the host's own template (its title, navigation and footer)."""
    anchors = "".join(f"<li><a href='/story/{j}'>story {j}</a></li>" for j in links)
    return (
        f"<html><head><title>{title} | {kind} news</title></head><body>"
        f"<header><ul class='nav'><li><a href='/'>{kind} home</a></li></ul></header>"
        f"<main>{main}</main><ul class='more'>{anchors}</ul>"
        f"<footer>Copyright {kind} news, all rights reserved</footer></body></html>"
    ).encode()


def network(stories: int, seed: int) -> dict[str, dict[str, bytes]]:
    """host kind -> path -> body."""
    rng = random.Random(seed)
    links = [
        sorted({i - 1, i + 1, *rng.sample(range(stories), RELATED)} & set(range(stories)) - {i})
        for i in range(stories)
    ]
    sites: dict[str, dict[str, bytes]] = {}
    for kind in HOSTS:
        latest = list(range(stories - 1, max(-1, stories - 1 - LATEST), -1))
        site = {"/": page(kind, "Latest", "<p>Latest stories</p>", latest)}
        for i in range(stories):
            title, body = story(f"{kind}-{i}" if own(kind, i) else f"source-{i}")
            site[f"/story/{i}"] = page(
                kind, title, f"<article><h1>{title}</h1>{body}</article>", links[i]
            )
        sites[kind] = site
    return sites


class Host:
    """One host's HTTP server, counting the requests it answers."""

    def __init__(self, address: str, pages: dict[str, bytes]) -> None:
        self.requests = 0
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                host.requests += 1
                body = pages.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer((address, 0), Handler)
        self.url = f"http://{address}:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@dataclass
class Outcome:
    """What one crawl fetched and kept, per host kind."""

    requests: dict[str, int]
    lost: dict[str, int]  # unique pages not kept
    copies: dict[str, int]  # copies kept
    mirrors: int  # requests not fetched as a mirror's
    copy_links: int  # requests of copies not scheduled


def crawl(
    hosts: dict[str, Host], stories: int, workdir: Path, index: str, settings: dict[str, Any]
) -> Outcome:
    """One crawl in a subprocess: the source, then the others at once."""
    for host in hosts.values():
        host.requests = 0
    workdir.mkdir(parents=True)
    report, stats_path = workdir / "report.jsonl", workdir / "stats.json"
    others = ",".join(f"{hosts[k].url}/" for k in ("mirror", "near", "partner"))
    command = [
        sys.executable, "-m", "scrapy", "runspider", str(ROOT / "tests" / "spiders" / "phased.py"),
        "-a", f"phases={hosts['source'].url}/;{others}",
    ]  # fmt: skip
    merged = {
        "LOG_LEVEL": "WARNING",
        "NEARDUPE_INDEX": index,
        "NEARDUPE_REPORT": str(report),
        "NEARDUPE_WORKERS": 1,
        "EXTENSIONS": json.dumps({"stats_dump.StatsDump": 0}),
        "STATS_DUMP_PATH": str(stats_path),
        **settings,
    }
    for name, value in merged.items():
        command += ["-s", f"{name}={value}"]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}"}
    subprocess.run(command, cwd=ROOT, env=env, check=True)  # the demo project's add-on
    stats = json.loads(stats_path.read_text())
    kept = {
        line["url"]
        for line in map(json.loads, report.read_text().splitlines())
        if line["decision"] == "kept"
    }
    lost: Counter[str] = Counter()
    copies: Counter[str] = Counter()
    for kind, host in hosts.items():
        for i in range(stories):
            stored = f"{host.url}/story/{i}" in kept
            if own(kind, i) and not stored:
                lost[kind] += 1
            elif not own(kind, i) and stored:
                copies[kind] += 1
    return Outcome(
        {kind: host.requests for kind, host in hosts.items()},
        dict(lost),
        dict(copies),
        stats.get("neardupe/mirror/skipped", 0),
        stats.get("neardupe/copy_links/skipped", 0),
    )


def print_table(title: str, outcomes: dict[str, Outcome], stories: int) -> None:
    """Requests (the share saved beside off), unique pages lost and copies stored per host
    kind, one row per setting; then the targets."""
    off = outcomes["off"]
    own_pages = {kind: sum(own(kind, i) for i in range(stories)) for kind in HOSTS}
    print(f"\n{title}: requests (saved) / own pages lost of N / copies stored")
    print(f"{'':14}" + "".join(f"{f'{kind} (N={own_pages[kind]})':>26}" for kind in HOSTS))
    for name, outcome in outcomes.items():
        cells = []
        for kind in HOSTS:
            n, before = outcome.requests[kind], off.requests[kind]
            saved = f"({1 - n / before:.0%})" if before else ""
            lost, copies = outcome.lost.get(kind, 0), outcome.copies.get(kind, 0)
            cells.append(f"{n:>5} {saved:>6} / {lost:>3} / {copies:>3}")
        print(f"{name:14}" + "".join(f"{cell:>26}" for cell in cells))
    for name, outcome in outcomes.items():
        mirror = 1 - outcome.requests["mirror"] / off.requests["mirror"]
        lost = sum(outcome.lost.values())
        extra = sum(outcome.copies.values()) - sum(off.copies.values())
        print(
            f"  {name}: not fetched {outcome.mirrors} as mirrors', {outcome.copy_links} links "
            f"of copies; full mirror saved {mirror:.0%} (target >= 80%), own pages lost {lost} "
            f"(target 0), copies stored {extra:+d} beside off (target 0), partner's own "
            f"{'all' if not outcome.lost.get('partner') else 'NOT all'} stored"
        )


def main() -> None:
    """Serve the network, crawl it every way on each backend, print the tables."""
    parser = arguments(__doc__, seeds=[1, 2])  # seeds: link structures
    parser.add_argument("--stories", type=int, default=500, help="stories a host")
    parser.add_argument(
        "--backends", nargs="+", choices=["embedded", "redis"], default=["embedded", "redis"]
    )
    parser.add_argument(
        "--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS), help="beside off"
    )
    parser.add_argument(
        "--delay", type=float, default=0.05, help="DOWNLOAD_DELAY: seconds between a host's pages"
    )
    args = parser.parse_args()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        backends = {}
        if "embedded" in args.backends:
            backends["embedded"] = ""
        if "redis" in args.backends:
            from redis_server import RedisServer

            backends["redis"] = stack.enter_context(RedisServer(tmp / "redis")).url
        configs = {
            name: CONFIGS[name] for name in CONFIGS if name == "off" or name in args.configs
        }
        for seed in args.seeds:
            sites = network(args.stories, seed)
            hosts = {kind: Host(HOSTS[kind], sites[kind]) for kind in HOSTS}
            pages = sum(len(site) for site in sites.values())
            print(
                f"\nseed {seed}: {len(hosts)} hosts, {pages:,} pages, {args.delay:g} s between a "
                "host's requests"
            )
            for backend, redis_url in backends.items():
                outcomes = {}
                for name, settings in configs.items():
                    workdir = tmp / f"{seed}-{backend}-{name}"
                    index = redis_url or str(workdir / "index")
                    extra: dict[str, Any] = {
                        "DOWNLOAD_DELAY": args.delay,
                        "DOWNLOAD_DELAY_JITTER": 0,
                    }
                    if redis_url:
                        extra["NEARDUPE_INDEX_NAME"] = f"budget-{seed}-{name}"
                    outcomes[name] = crawl(
                        hosts, args.stories, workdir, index, {**settings, **extra}
                    )
                print_table(f"{backend}, seed {seed}", outcomes, args.stories)
            for host in hosts.values():
                host.httpd.shutdown()
                host.httpd.server_close()


if __name__ == "__main__":
    main()
