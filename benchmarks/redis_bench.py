"""Check-and-add on Redis: an earlier revision's code (``--old``, default main) against this
tree's, side by side, on one node (and this tree's on a 3-node cluster), at each stored size;
then the performance goals' table.

Each code runs in its own subprocesses (PYTHONPATH: the old tree, exported with ``git archive``
into a temp dir, or this tree), each on its own Redis, and this tree's on a 3-node cluster too
(with ``--old-cluster``, the old code's on a cluster of its own as well).
Per size N: bulk-load N pages into each (~70-byte URLs, 4 sentences of 150 letters each,
signature = fingerprint), then ``--rounds`` rounds in which the three take turns (each first
in one round of three):
``--procs`` processes x ``--inflight`` calls check-and-add ``--ops`` pages (half new, half
near copies 1-3 bits away with the stored page's sentences).  Reported, the median of the
rounds: ops/s, p50/p99 latency, server CPU per check (used_cpu_user+sys delta / ops, per node;
``spread``: the busiest node's lowest and highest of the rounds) and the capacity that implies
(one core per node), and the crawlers' CPU per check (client us: what limits the measured
rate when clients and servers share this machine's cores), and ``calls``: the script calls a
check costs the busiest node (each has a cost of its own, whatever its keys), ``commands``: the
commands a check costs each node (a script's own commands counted one by one; each key a command
touches is a lookup in a dictionary of millions, cold in the cache: the CPU figures follow them
across topologies), and ``in scripts``:
the time each node spent in them a check (INFO commandstats: its clock, so a script the
machine's other processes interrupt counts their time too; the rest of the node's CPU is its
plain reads, the network and the event loop); bytes per page
(INFO used_memory delta / N, per node) after the load.  The shared machine's noise moves one
round's CPU figures by up to a quarter, and the machine's speed drifts between rounds: the
3-node cluster's gain is the median of each round's against the same round's one node.

    python benchmarks/redis_bench.py [--sizes 100000 1000000 10000000] [--ops 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

NAME = "bench"
#: ~70-byte URLs, as a news site's.
URL = "https://www.example-news.com/politics/2024/05/17/article-{:09d}.html"
#: Sentences of a page (``--sentences``; an article has ~20-60): each is a lease and a record.
SENTENCES = int(os.environ.get("REDIS_BENCH_SENTENCES", "4"))
SENTENCE_LETTERS = 150
#: The project's default detection: 4-table, k=3, confirm_k 22.
HEADER = {"design": "4-table", "k": 3, "confirm_k": 22}
#: Performance goals: check-and-adds/s, p99 ms, bytes a page, scaling.
GOAL_RATE, GOAL_P99_MS, GOAL_BYTES, GOAL_SCALE = 3000, 5.0, 200, 2.5


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 of uint64s: the stored pages' fingerprints and sentences, regenerated alike
    by every process."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def stored_fps(idx: np.ndarray) -> np.ndarray:
    """The fingerprints of stored pages ``idx``."""
    return _mix(idx.astype(np.uint64))


def sentence_hashes(index: np.ndarray) -> np.ndarray:
    """The sorted sentence hashes of stored pages ``index``, one row each."""
    start = np.uint64(2**40) + index.astype(np.uint64)[:, None] * np.uint64(2 * SENTENCES)
    return np.sort(_mix(start + np.arange(SENTENCES, dtype=np.uint64)), axis=1)  # none shared


def stored_sentences(i: int) -> tuple[tuple[int, int], ...]:
    """The sentences of stored page i."""
    return tuple((h, SENTENCE_LETTERS) for h in sentence_hashes(np.array([i]))[0].tolist())


class LazySentences:
    """Sentences of pages 0..n-1, made a block at a time (10^7 pages' tuples would take GBs)."""

    BLOCK = 65_536

    def __init__(self, n: int) -> None:
        self.n = n
        self._block, self._rows = -1, np.empty((0, SENTENCES), dtype=np.uint64)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[tuple[int, int], ...]:
        block = i // self.BLOCK
        if block != self._block:
            first = block * self.BLOCK
            self._block = block
            self._rows = sentence_hashes(np.arange(first, min(first + self.BLOCK, self.n)))
        return tuple((h, SENTENCE_LETTERS) for h in self._rows[i % self.BLOCK].tolist())


# -- roles run under one code's PYTHONPATH ------------------------------------------------------


def _open(url: str, cluster: bool, **options: Any) -> Any:
    from nearDupe.store import IndexHeader
    from nearDupe.store.redis import RedisStore

    return RedisStore.from_url(url, IndexHeader(**HEADER), name=NAME, cluster=cluster, **options)


def role_load(url: str, cluster: bool, n: int, pages: int = 0) -> dict[str, Any]:
    """Bulk-load n pages into an index laid out for ``pages`` (0: the default layout)."""

    async def main() -> tuple[float, bool]:
        store = _open(url, cluster, **({"pages": pages} if pages else {}))
        fps = stored_fps(np.arange(n))
        keys = [URL.format(i) for i in range(n)]
        started = time.perf_counter()
        try:
            await store.add_many(fps, keys, fps.tolist(), LazySentences(n))
            sentences = True
        except TypeError:  # main's add_many(fps, keys, signatures, *, chunk)
            await store.add_many(fps, keys, fps.tolist())
            sentences = False
        seconds = time.perf_counter() - started
        await store.close()
        return seconds, sentences

    seconds, sentences = asyncio.run(main())
    return {"seconds": seconds, "sentences": sentences}


def _worker(url: str, cluster: bool, n: int, ops: int, seed: int, inflight: int, out: Any) -> None:
    rng = np.random.default_rng(seed)
    jobs = []
    for j in range(ops):
        if j % 2:
            i = int(rng.integers(n))
            fp = int(stored_fps(np.array([i]))[0])
            for bit in rng.choice(64, int(rng.integers(1, 4)), replace=False):
                fp ^= 1 << int(bit)
            jobs.append((fp, stored_sentences(i)))
        else:
            fp = int(rng.integers(0, 2**64, dtype=np.uint64))
            jobs.append((fp, stored_sentences(int(rng.integers(2**40, 2**41)))))

    async def main() -> tuple[list[float], float, float]:
        store = _open(url, cluster, max_connections=4 * inflight)
        await store.count()
        latencies: list[float] = []

        async def client(part: list[tuple[int, Any]], tag: int) -> None:
            for i, (fp, sentences) in enumerate(part):
                t0 = time.perf_counter()
                await store.check_and_add(fp, f"https://w{seed}.example/{tag}/{i}", fp, sentences)
                latencies.append(time.perf_counter() - t0)

        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(client(jobs[j::inflight], j) for j in range(inflight)))
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        await store.close()
        return latencies, seconds, cpu

    out.put(asyncio.run(main()))


def role_run(
    url: str, cluster: bool, n: int, ops: int, procs: int, inflight: int, round_: int = 0
) -> dict:
    """procs x inflight concurrent check-and-adds (new pages of their own each round): ops/s,
    p50 and p99 ms."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    seeds = [7 + w + 100 * round_ for w in range(procs)]
    workers = [
        ctx.Process(target=_worker, args=(url, cluster, n, ops // procs, seed, inflight, out))
        for seed in seeds
    ]
    for w in workers:
        w.start()
    results = [out.get() for _ in workers]
    for w in workers:
        w.join()
    lat = np.asarray([x for r, _, _ in results for x in r]) * 1000
    seconds = max(s for _, s, _ in results)
    return {
        "rate": len(lat) / seconds,
        "client_us": sum(c for _, _, c in results) / len(lat) * 1e6,
        "p50": float(np.median(lat)),
        "p99": float(np.percentile(lat, 99)),
        "ops": len(lat),
    }


# -- the orchestrator -------------------------------------------------------------------------


def tree(rev: str, where: Path) -> Path:
    """Revision ``rev``'s package exported under ``where`` (a PYTHONPATH for its roles)."""
    where.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(HERE.parent), "archive", rev, "nearDupe"],
                             capture_output=True, check=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return where


def _in(code: Path, role: str, **args: Any) -> dict[str, Any]:
    """Run a role in a subprocess under ``code``'s PYTHONPATH; its JSON answer."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    cmd = [sys.executable, __file__, "--role", role, "--args", json.dumps(args)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{role} under {code} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _infos(ports: list[int], section: str) -> list[dict[str, Any]]:
    import redis

    out = []
    for port in ports:
        client = redis.Redis(port=port)
        out.append(client.info(section))
        client.close()
    return out


def _cpu(ports: list[int]) -> list[float]:
    return [i["used_cpu_user"] + i["used_cpu_sys"] for i in _infos(ports, "cpu")]


def _commands(ports: list[int]) -> list[int]:
    """Commands each node has processed (a script's own commands counted one by one)."""
    return [int(i["total_commands_processed"]) for i in _infos(ports, "stats")]


def _memory(ports: list[int]) -> list[int]:
    return [int(i["used_memory"]) for i in _infos(ports, "memory")]


def _scripts(ports: list[int]) -> list[tuple[int, int]]:
    """Script calls (EVALSHA) each node has served since its last CONFIG RESETSTAT, and the
    microseconds it spent in them (the commands they call included)."""
    stats = [i.get("cmdstat_evalsha", {}) for i in _infos(ports, "commandstats")]
    return [(int(s.get("calls", 0)), int(s.get("usec", 0))) for s in stats]


def _on_each(ports: list[int], command: str) -> None:
    """Run a command without arguments (FLUSHALL, CONFIG RESETSTAT) on every node."""
    import redis

    for port in ports:
        client = redis.Redis(port=port)
        client.execute_command(command)
        client.close()


def load_index(
    code: Path, url: str, ports: list[int], cluster: bool, n: int, pages: int = 0
) -> dict:
    """Flush and load n pages with ``code`` into an index laid out for ``pages``; memory per
    node."""
    _on_each(ports, "FLUSHALL")
    time.sleep(0.5)
    before = _memory(ports)
    loaded = _in(code, "load", url=url, cluster=cluster, n=n, pages=pages)
    memory = [m - b for m, b in zip(_memory(ports), before, strict=True)]
    return {**loaded, "bytes": [m / n for m in memory]}


def run_round(
    code: Path, url: str, ports: list[int], cluster: bool, n: int, a: Any, round_: int
) -> dict:
    """Time one round of check-and-adds with ``code``; server CPU, commands and script calls
    per check and node."""
    _on_each(ports, "CONFIG RESETSTAT")
    cpu, commands = _cpu(ports), _commands(ports)
    done = _in(code, "run", url=url, cluster=cluster, n=n, ops=a.ops, procs=a.procs,
               inflight=a.inflight, round_=round_)  # fmt: skip
    cpu_us = [(c - b) / done["ops"] * 1e6 for c, b in zip(_cpu(ports), cpu, strict=True)]
    ran = [(c - b) / done["ops"] for c, b in zip(_commands(ports), commands, strict=True)]
    scripts = _scripts(ports)
    calls = max(c for c, _us in scripts) / done["ops"]
    return {**done, "cpu_us": cpu_us, "calls": calls, "commands": ran,
            "script_us": [us / done["ops"] for _c, us in scripts]}  # fmt: skip


def _median(rounds: list[dict], loaded: dict) -> dict:
    """The rounds' medians (CPU per node, the other figures), with the spread of the busiest
    node's CPU."""
    median = statistics.median
    nodes = len(rounds[0]["cpu_us"])
    busiest = [max(r["cpu_us"]) for r in rounds]
    return {
        **loaded,
        **{
            key: median(r[key] for r in rounds)
            for key in ("rate", "p50", "p99", "client_us", "calls")
        },
        **{
            key: [median(r[key][i] for r in rounds) for i in range(nodes)]
            for key in ("cpu_us", "script_us", "commands")
        },
        "spread": f"{min(busiest):.0f}-{max(busiest):.0f}",
    }


def _capacity(r: dict) -> float:
    """Checks/s the busiest node sustains on one core: a check costs CPU on every node that
    holds some of its buckets (not a share of one), so the busiest node bounds them all."""
    return 1e6 / max(r["cpu_us"])


def per_node(values: list[float], spec: str) -> str:
    """One figure per node, joined by slashes."""
    return "/".join(format(v, spec) for v in values)


def _row(code: str, topology: str, n: int, r: dict) -> str:
    per_page = sum(r["bytes"])
    nodes, cpus = per_node(r["bytes"], ".0f"), per_node(r["cpu_us"], ".0f")
    scripts, commands = per_node(r["script_us"], ".0f"), per_node(r["commands"], ".1f")
    capacity = _capacity(r)
    return (
        f"{n:>10,} {code:<5} {topology:<8} {r['rate']:>8,.0f} {r['p50']:>7.2f} {r['p99']:>7.2f} "
        f"{per_page:>7.0f} {nodes:>15} {cpus:>13} {scripts:>13} {r['spread']:>9} "
        f"{capacity:>10,.0f} {r['client_us']:>10,.0f} {r['calls']:>6.2f} {commands:>14} "
        f"{'' if r['sentences'] else 'no sentences loaded'}"
    )


def main() -> None:
    """Run both codes at every size and print the table and the goals."""
    from redis_server import RedisCluster, RedisServer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--ops", type=int, default=20_000)
    parser.add_argument("--sentences", type=int, default=SENTENCES, help="sentences a page")
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--inflight", type=int, default=8)
    parser.add_argument(
        "--rounds", type=int, default=3, help="timed rounds per code and size (medians shown)"
    )
    parser.add_argument("--old", default="main", help="git revision of today's code (main)")
    parser.add_argument("--old-up-to", type=int, default=10_000_000, help="largest N for it")
    parser.add_argument("--old-cluster", action="store_true", help="the old code on a cluster too")
    parser.add_argument(
        "--layout-pages", type=int, default=0, help="NEARDUPE_REDIS_PAGES of this tree's index"
    )
    a = parser.parse_args()
    os.environ["REDIS_BENCH_SENTENCES"] = str(a.sentences)  # the subprocesses read it
    if a.sentences != SENTENCES:  # this process's pages too
        os.execv(sys.executable, [sys.executable, *sys.argv])
    tmp = Path(tempfile.mkdtemp(prefix="neardupe-redis-bench-"))
    old = tree(a.old, tmp / "old")
    rev = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", a.old],
                         capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    new = HERE.parent
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} CPUs (load {load}); {HEADER}; {a.procs} processes x {a.inflight} "
          f"in flight, {a.ops} check-and-adds (half new, half near copies) per row; "
          f"old = {a.old} ({rev}), new = this tree")  # fmt: skip
    head = (
        f"{'stored N':>10} {'code':<5} {'topology':<8} {'ops/s':>8} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'B/page':>7} {'B/page/node':>15} {'CPU us/node':>13} {'in scripts':>13} {'spread':>9} "
        f"{'capacity':>10} {'client us':>10} {'calls':>6} {'commands/node':>14}"
    )
    print(head + "\n" + "-" * len(head), flush=True)
    results: dict[tuple[str, str, int], dict] = {}
    clusters = [RedisCluster(tmp / f"cluster-{code}") for code in ("new", "old")]
    for server in (s for c in clusters for s in c.nodes):
        server.extra = (*server.extra, "--appendonly", "no")
    with ExitStack() as stack:
        old_node = stack.enter_context(RedisServer(tmp / "old", extra=("--appendonly", "no")))
        new_node = stack.enter_context(RedisServer(tmp / "new", extra=("--appendonly", "no")))
        cluster = stack.enter_context(clusters[0])
        old_cluster = stack.enter_context(clusters[1]) if a.old_cluster else None
        ports = [s.port for s in cluster.nodes]
        for n in a.sizes:
            # (code, topology, its tree, url, ports, cluster?, layout pages)
            setups = [
                ("new", "node", new, new_node.url, [new_node.port], False, a.layout_pages),
                ("new", "cluster3", new, cluster.url, ports, True, a.layout_pages),
            ]
            if n <= a.old_up_to:
                setups.insert(0, ("old", "node", old, old_node.url, [old_node.port], False, 0))
                if old_cluster is not None:
                    old_ports = [s.port for s in old_cluster.nodes]
                    setups.insert(1, ("old", "cluster3", old, old_cluster.url, old_ports, True, 0))
            loaded = [
                load_index(path, url, p, c, n, pages) for _, _, path, url, p, c, pages in setups
            ]
            rounds: list[list[dict]] = [[] for _ in setups]
            for i in range(a.rounds):  # in turn, each first in one round of every len(setups)
                for j in [*range(i % len(setups), len(setups)), *range(i % len(setups))]:
                    _, _, path, url, p, c, _ = setups[j]
                    rounds[j].append(run_round(path, url, p, c, n, a, i))
            for (code, topology, *_), done, load in zip(setups, rounds, loaded, strict=True):
                results[code, topology, n] = {**_median(done, load), "rounds": done}
                print(_row(code, topology, n, results[code, topology, n]), flush=True)
    _goals(results, max(a.sizes))


def _goals(results: dict[tuple[str, str, int], dict], n: int) -> None:
    node, cluster = results["new", "node", n], results.get(("new", "cluster3", n))
    capacity = _capacity(node)
    print(f"\nGoals at N={n:,} (capacity: checks/s one core per node sustains, from its CPU "
          "per check)")  # fmt: skip
    rows = [
        ("check-and-add, one node", f">= {GOAL_RATE:,}/s", f"{node['rate']:,.0f}/s measured, "
         f"{capacity:,.0f}/s capacity", min(node["rate"], capacity) >= GOAL_RATE),
        ("p99 latency, one node", f"<= {GOAL_P99_MS} ms", f"{node['p99']:.2f} ms",
         node["p99"] <= GOAL_P99_MS),
        ("memory per page", f"<= {GOAL_BYTES} B", f"{sum(node['bytes']):.0f} B",
         sum(node["bytes"]) <= GOAL_BYTES),
    ]  # fmt: skip
    if cluster is not None:  # paired: each round's cluster against the same round's one node
        scale = statistics.median(
            _capacity(c) / _capacity(o)
            for c, o in zip(cluster["rounds"], node["rounds"], strict=True)
        )
        split = per_node(cluster["bytes"], ".0f")
        rows.append(("3-node cluster vs one node", f">= {GOAL_SCALE}x", f"{scale:.2f}x capacity "
                     f"({cluster['rate'] / node['rate']:.2f}x measured on 2 shared cores)",
                     scale >= GOAL_SCALE))  # fmt: skip
        rows.append(("memory split over nodes", "each ~1/3", f"{split} B/page",
                     max(cluster["bytes"]) <= 0.5 * sum(cluster["bytes"])))  # fmt: skip
    for what, goal, got, met in rows:
        print(f"  {what:<28} {goal:<12} {got:<58} {'met' if met else 'NOT met'}")
    gib = 1e8 * sum(node["bytes"]) / 2**30
    print(
        f"\n10^8 pages: at {sum(node['bytes']):.0f} B/page ~{gib:.0f} GiB of Redis memory, beyond "
        "add_many's loader on this machine; benchmarks/redis_scale_bench.py builds such an index "
        "with numpy, streamed, and times the same rounds on it"
    )


if __name__ == "__main__":
    if "--role" in sys.argv:
        role = sys.argv[sys.argv.index("--role") + 1]
        kwargs = json.loads(sys.argv[sys.argv.index("--args") + 1])
        print(json.dumps({"load": role_load, "run": role_run}[role](**kwargs)))
    else:
        main()
