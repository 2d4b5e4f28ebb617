"""Server CPU of the commit script on page buckets of growing size: this tree's scripts
against an earlier revision's (``--old``, default main), side by side on one redis-server.

A page bucket holds the page records of one 2^18th of the fingerprints: ~4 at 10^6 pages,
~38 at 10^7, ~380 at 10^8.  Each commit appends one new page record (the common case) to its
own copy of such a bucket; reported: the server's CPU per commit (used_cpu_user+sys delta).
Then what one pipelined call costs the server of its own: a GET, an MGET of 8 keys, a script
that does nothing, one that reads the lengths of 8 keys; and where a new page's commit spends
(buckets of 2 records, as at 10^5-10^6 pages; 8 read for a page of 4 sentences, 20 for a
longer one, 8 written: checked and written, only checked, only written, and a script doing
nothing given the same arguments).

    python benchmarks/redis_script_bench.py [--records 4 38 380] [--commits 2000] [--old main]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import redis

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

URL = "https://www.example-news.com/politics/2024/05/17/article-{:09d}.html"


def _scripts(rev: str, tmp: Path) -> ModuleType:
    """The redis_lua module of revision ``rev`` (its constants from this tree's records)."""
    text = subprocess.run(["git", "-C", str(HERE), "show", f"{rev}:nearDupe/store/redis_lua.py"],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip
    path = tmp / f"lua_{rev.replace('/', '_')}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cpu(client: redis.Redis) -> float:
    info = cast(dict[str, Any], client.info("cpu"))
    return float(info["used_cpu_user"] + info["used_cpu_sys"])


def _record(i: int) -> bytes:
    from nearDupe.store.base import Sketch
    from nearDupe.store.redis_records import page_record

    fp = int.from_bytes(os.urandom(8), "big")
    sketch = Sketch(3000, 1500, os.urandom(32))
    return page_record(fp, URL.format(i), fp, sketch, os.urandom(4))


def commit_us(client: redis.Redis, script: str, records: int, commits: int, tag: str) -> float:
    """Server CPU per commit of a new page record into a bucket of ``records`` records."""
    bucket = b"".join(_record(i) for i in range(records))
    sha = client.script_load(script)
    pipe = client.pipeline(transaction=False)
    for j in range(commits):
        pipe.set(f"p:{{{tag}.{j}}}", bucket)
    pipe.execute()
    before = _cpu(client)
    for j in range(commits):
        key = f"p:{{{tag}.{j}}}"
        pipe.execute_command("EVALSHA", sha, 1, key, b"token", key, _record(j), "")
        if len(pipe) >= 100:
            pipe.execute()
    pipe.execute()
    spent = _cpu(client) - before
    client.flushall()
    return spent / commits * 1e6


def call_us(client: redis.Redis, queue: Any, calls: int = 20_000) -> float:
    """Server CPU per call of what ``queue(pipe)`` queues, pipelined 1,000 at a time."""
    pipe = client.pipeline(transaction=False)
    before = _cpu(client)
    for _ in range(calls // 1000):
        for _ in range(1000):
            queue(pipe)
        pipe.execute()
    return (_cpu(client) - before) / calls * 1e6


def commit_parts(
    client: redis.Redis, script: str, sentences: int, commits: int = 5000
) -> dict[str, float]:
    """Server CPU per commit of a new page that read 4 table buckets and ``sentences``
    sentence buckets of 2 records and writes one record into the 4 tables and 4 of the
    sentence buckets (each commit its own keys, so that every check passes), by part."""
    from nearDupe.store.redis_leases import commit_args

    sha = client.script_load(script)
    noop = client.script_load("#!lua flags=allow-cross-slot-keys\nreturn {1, 0}")
    sizes = [6] * 4 + [9] * sentences
    pipe = client.pipeline(transaction=False)
    for j in range(4 * commits):
        for t, size in enumerate(sizes):
            pipe.set(f"b{t}{{{j}}}", os.urandom(2 * size))
        if len(pipe) >= 8000:
            pipe.execute()
    pipe.execute()

    def args(j: int, check: bool, write: bool) -> list[Any]:
        keys = [f"b{t}{{{j}}}" for t in range(len(sizes))]
        written = keys[:8] if write else []
        writes = {key: [os.urandom(sizes[t])] for t, key in enumerate(written)}
        lengths = {key: 2 * size for key, size in zip(keys, sizes, strict=True)} if check else {}
        page = (f"p{{{j}}}", os.urandom(130)) if write else None
        return commit_args(b"token", page, "", keys, writes, lengths, cluster=False)

    parts = {
        "checked and written": (sha, True, True),
        "only checked": (sha, True, False),
        "only written": (sha, False, True),
        "nothing, same arguments": (noop, True, True),
    }
    out = {}
    for i, (what, (script_sha, check, write)) in enumerate(parts.items()):
        before = _cpu(client)
        for j in range(i * commits, (i + 1) * commits):
            pipe.execute_command("EVALSHA", script_sha, 1, f"b0{{{j}}}", *args(j, check, write))
            if len(pipe) >= 200:
                pipe.execute()
        pipe.execute()
        out[what] = (_cpu(client) - before) / commits * 1e6
    client.flushall()
    return out


def main() -> None:
    """Print the server CPU per commit of both revisions' scripts, per bucket size."""
    from redis_server import RedisServer

    from nearDupe.store import redis_lua

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=[4, 38, 380])
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--old", default="main")
    parser.add_argument("--rounds", type=int, default=2)
    a = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="neardupe-script-bench-"))
    old = _scripts(a.old, tmp)
    print(f"server CPU per commit (us), {a.commits} commits a row; old = {a.old}, new = this tree")
    print(f"{'records':>8} {'old':>8} {'new':>8} {'new/old':>8}")
    with RedisServer(tmp / "node", extra=("--appendonly", "no")) as server:
        client = redis.Redis(port=server.port)
        for records in a.records:
            for r in range(a.rounds):  # interleaved: the machine is shared
                o = commit_us(client, old.LUA_COMMIT, records, a.commits, f"o{r}")
                n = commit_us(client, redis_lua.LUA_COMMIT, records, a.commits, f"n{r}")
                print(f"{records:>8} {o:>8.1f} {n:>8.1f} {n / o:>8.2f}", flush=True)
        cross = "#!lua flags=allow-cross-slot-keys\n"
        noop = client.script_load(cross + "return 1")
        lengths = client.script_load(
            cross + "for i = 1, #ARGV do redis.call('STRLEN', ARGV[i]) end return 1"
        )
        keys = [f"k{{{i}}}" for i in range(8)]
        calls = {
            "GET": lambda pipe: pipe.get(keys[0]),
            "MGET of 8 keys": lambda pipe: pipe.mget(keys),
            "script doing nothing": lambda pipe: pipe.evalsha(noop, 0),
            "script: STRLEN of 8 keys": lambda pipe: pipe.evalsha(lengths, 0, *keys),
        }
        print("\nserver CPU per call (us), pipelined")
        for what, queue in calls.items():
            print(f"{what:<26} {min(call_us(client, queue) for _ in range(2)):>6.2f}", flush=True)
        for sentences in (4, 16):
            print(f"\nserver CPU per commit of a new page that read 4 table and {sentences} "
                  "sentence buckets, writing 8 (us), by part")  # fmt: skip
            for what, us in commit_parts(client, redis_lua.LUA_COMMIT, sentences).items():
                print(f"{what:<26} {us:>6.1f}", flush=True)
        client.close()


if __name__ == "__main__":
    main()
