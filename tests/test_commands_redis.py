"""`scrapy neardupe` on a shared Redis index: import, then stats, clusters, check and report."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.crawl import CrawlResult
from tests.redis_server import RedisServer, require_redis
from tests.test_commands import crawl, neardupe
from tests.test_crawl_redis import PLUGIN_HEADER

__all__ = ["crawl"]  # the module-scoped demo crawl fixture, shared with test_commands

pytestmark = pytest.mark.redis


def test_commands_read_a_redis_index(crawl: tuple[Path, CrawlResult], tmp_path: Path) -> None:
    require_redis()
    tmp, result = crawl
    items = result.items
    feed = tmp_path / "feed.jsonl"
    with feed.open("w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps({"url": item["url"], "text": item["text"]}) + "\n")
        f.write(json.dumps({"url": items[0]["url"] + "?copy", "text": items[0]["text"]}) + "\n")
    with RedisServer(tmp_path / "redis") as redis:
        imported = neardupe(tmp, "import", str(feed), "--json", index=redis.url)
        assert imported.returncode == 0, imported.stderr
        summary = json.loads(imported.stdout)
        assert summary["kept"] == len(items) and summary["dropped"] == 1

        stats = neardupe(tmp, "stats", "--json", index=redis.url)
        assert stats.returncode == 0, stats.stderr
        assert json.loads(stats.stdout)["pages"] == len(items)
        assert json.loads(stats.stdout)["disk_bytes"] is None
        text = neardupe(tmp, "stats", index=redis.url).stdout
        assert "disk          none: the index lives in Redis's memory" in text

        out = tmp_path / "clusters.jsonl"
        clusters = neardupe(tmp, "clusters", "--k", "8", "-o", str(out), index=redis.url)
        assert clusters.returncode == 0, clusters.stderr
        grouped = [json.loads(line) for line in out.read_text().splitlines()]
        copy = items[0]["url"] + "?copy"  # dropped by the import: the index remembers it
        assert all(set(g["pages"]) <= {i["url"] for i in items} | {copy} for g in grouped)
        assert any({items[0]["url"], copy} <= set(g["pages"]) for g in grouped)

        page = tmp_path / "page.html"
        page.write_text(f"<html><body><p>{items[0]['text']}</p></body></html>")
        check = neardupe(tmp, "check", str(page), "--json", index=redis.url)
        assert check.returncode == 0, check.stderr
        assert items[0]["url"] in check.stdout

        html = tmp_path / "report.html"
        report = neardupe(tmp, "report", "-o", str(html), index=redis.url)
        assert report.returncode == 0, report.stderr
        assert redis.url in html.read_text()


def test_import_into_a_redis_cluster(tmp_path: Path) -> None:
    """import honours NEARDUPE_REDIS_CLUSTER: an index whose slot is on another node than
    the one in the URL (it failed with a MOVED error)."""
    from redis.crc import key_slot

    from tests.redis_server import RedisCluster

    name = next(f"news{i}" for i in range(100) if key_slot(f"{{news{i}}}".encode()) > 12000)
    feed = tmp_path / "feed.jsonl"
    feed.write_text(json.dumps({"url": "https://example.com/a", "text": "word " * 300}) + "\n")
    with RedisCluster(tmp_path / "cluster") as cluster:
        settings = ["-s", "NEARDUPE_REDIS_CLUSTER=True", "-s", f"NEARDUPE_INDEX_NAME={name}"]
        imported = neardupe(tmp_path, "import", str(feed), "--json", *settings, index=cluster.url)
        assert imported.returncode == 0, imported.stderr
        assert json.loads(imported.stdout)["kept"] == 1
        stats = neardupe(tmp_path, "stats", "--json", *settings, index=cluster.url)
        assert json.loads(stats.stdout)["pages"] == 1


_OLD_INDEX = """
import asyncio, json, sys
from scrapy.settings import Settings
from nearDupe._settings import Config
from nearDupe.store.redis import RedisStore

async def main(url):
    header = Config.from_settings(Settings({"NEARDUPE_INDEX": url})).header
    store = RedisStore.from_url(url, header)
    brief = ((11, 60), (22, 70))
    assert await store.check_and_add(0x1111111111111111, "https://old/a", 5, brief) is None
    assert await store.check_and_add(0x2222222222222222, "https://old/b") is None
    assert await store.check_and_add(0x4444444444444444, "https://old/c", 9) is None
    copy = await store.check_and_add((0x1111111111111111) ^ 1, "https://old/copy", 5)
    assert copy is not None and copy.key == "https://old/a"
    print(json.loads(await store.client.get("{neardupe}:layout"))["format"])
    await store.close()

asyncio.run(main(sys.argv[1]))
"""


def at_this_algorithm(old: Path) -> None:
    """The older code unpacked at ``old`` run at this ALGORITHM_VERSION: the Redis layout is
    under test here (an index of another algorithm is refused: tests/test_edits.py)."""
    from nearDupe.simhash import ALGORITHM_VERSION

    simhash = old / "nearDupe" / "simhash.py"
    code = simhash.read_text(encoding="utf-8")
    assert "\nALGORITHM_VERSION = " in code
    code = re.sub(r"\nALGORITHM_VERSION = \d+", f"\nALGORITHM_VERSION = {ALGORITHM_VERSION}", code)
    simhash.write_text(code, encoding="utf-8")


def test_a_format_2_index_is_refused_then_migrated(tmp_path: Path) -> None:
    """An index built by the code before format 3 (main's tree, one hash tag) is refused at
    open with the command that rebuilds it; ``migrate-redis`` rebuilds it, pages and sentence
    samples included."""
    import asyncio
    import subprocess
    import sys

    from nearDupe.errors import IndexSettingsMismatch
    from nearDupe.store.redis import RedisStore
    from tests.test_commands import ROOT

    require_redis()
    old = tmp_path / "old"
    old.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "8a8da4e", "nearDupe"], capture_output=True
    )
    if archive.returncode:
        pytest.skip("the format-2 code (commit 8a8da4e) is not in this repository")
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
    at_this_algorithm(old)
    with RedisServer(tmp_path / "redis") as redis:
        built = subprocess.run(
            [sys.executable, "-c", _OLD_INDEX, redis.url],
            env={**os.environ, "PYTHONPATH": str(old)},
            cwd=old,
            capture_output=True,
            text=True,
        )
        assert built.returncode == 0 and built.stdout.strip() == "2", built.stderr
        stats = neardupe(tmp_path, "stats", "--json", index=redis.url)
        assert stats.returncode == 1
        assert (
            "format-2 layout" in stats.stderr and "scrapy neardupe migrate-redis" in stats.stderr
        )
        with pytest.raises(IndexSettingsMismatch, match="migrate-redis"):
            RedisStore.from_url(redis.url, PLUGIN_HEADER)

        migrated = neardupe(tmp_path, "migrate-redis", index=redis.url)
        assert migrated.returncode == 0, migrated.stderr
        assert "3 pages" in migrated.stdout
        # Format 2 kept the sentences of short pages only: b and c were stored without any.
        assert "WARNING: 2 of them have no sentences" in migrated.stderr, migrated.stderr

        async def after() -> None:
            async with RedisStore.from_url(redis.url, PLUGIN_HEADER) as store:
                assert await store.count() == 3
                assert sorted(await store.pages()) == [
                    (0x1111111111111111, "https://old/a", 5),
                    (0x2222222222222222, "https://old/b", None),
                    (0x4444444444444444, "https://old/c", 9),
                ]
                near = await store.check_and_add((0x2222222222222222) ^ 6, "https://new/b")
                assert near is not None and near.key == "https://old/b"
                brief = await store.check_and_add(77, "https://new/a", None, ((11, 60), (22, 70)))
                assert brief is not None and (brief.key, brief.shared) == ("https://old/a", 1.0)

        asyncio.run(after())


_FORMAT_3_CODE = "368ced6"  # the last commit that wrote format 3
_CHECKS = """
import asyncio, json, sys
from scrapy.settings import Settings
from nearDupe._settings import Config
from nearDupe.store.redis import RedisStore

async def main(url, name, checks):
    header = Config.from_settings(Settings({"NEARDUPE_INDEX": url})).header
    async with RedisStore.from_url(url, header, name=name) as store:
        found = []
        for fp, key, signature, sentences in json.loads(checks):
            match = await store.check_and_add(fp, key, signature, [tuple(s) for s in sentences])
            found.append(match and match.key)
        layout = json.loads(await store.client.get("{" + name + "}:layout"))
    print(json.dumps([layout["format"], found]))

asyncio.run(main(*sys.argv[1:]))
"""


def test_a_format_3_index_is_read_and_written_in_its_own_format(tmp_path: Path) -> None:
    """An index built by the code before format 4 opens and stays format 3: this code finds
    its pages (by fingerprint and by sentences) and adds pages that the older code finds in
    turn (crawlers of both versions may share it); a new index gets format 4, which the older
    code refuses at open."""
    import subprocess
    import sys

    from tests.test_commands import ROOT

    require_redis()
    old = tmp_path / "old"
    old.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", _FORMAT_3_CODE, "nearDupe"], capture_output=True
    )
    if archive.returncode:
        pytest.skip(f"the format-3 code (commit {_FORMAT_3_CODE}) is not in this repository")
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
    at_this_algorithm(old)
    a, b, c = 0x123456789ABCDEF0, 0x0F0F0F0F0F0F0F0F, 0x5555555555555555
    brief = [[11, 60], [22, 70]]
    other = [[33, 60], [44, 70]]
    with RedisServer(tmp_path / "redis") as redis:

        def checks(code: Path, name: str, *pages: list[object]) -> tuple[int, list[str | None]]:
            ran = subprocess.run(
                [sys.executable, "-c", _CHECKS, redis.url, name, json.dumps(pages)],
                env={**os.environ, "PYTHONPATH": str(code)},
                cwd=tmp_path,
                capture_output=True,
                text=True,
            )
            assert ran.returncode == 0, ran.stderr
            format_, found = json.loads(ran.stdout)
            return format_, found

        built = checks(old, "n", [a, "https://www.old/a", 5, brief], [b, "http://old/b", 9, []])
        assert built == (3, [None, None])
        ours = checks(
            ROOT,
            "n",
            [a ^ 1, "https://www.new/a", 5, []],
            [77, "https://www.new/brief", None, brief],
            [c, "https://www.new/c", 7, other],
        )
        assert ours == (3, ["https://www.old/a", "https://www.old/a", None])
        theirs = checks(old, "n", [c ^ 3, "https://old/c2", 7, []], [78, "x", None, other])
        assert theirs == (3, ["https://www.new/c", "https://www.new/c"])

        assert checks(ROOT, "fresh", [a, "https://www.new/a", 5, brief]) == (4, [None])
        refused = subprocess.run(
            [sys.executable, "-c", _CHECKS, redis.url, "fresh", "[]"],
            env={**os.environ, "PYTHONPATH": str(old)},
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert refused.returncode == 1 and "unknown layout" in refused.stderr


def test_stats_prints_the_format_of_the_redis_index(tmp_path: Path) -> None:
    """``stats`` on a Redis index prints the format of its keys: that of a new index
    (REDIS_FORMAT), or 3 for an index laid out in format 3, not the embedded index's
    header format."""
    import asyncio

    from nearDupe.designs import Design
    from nearDupe.store.redis import RedisStore
    from nearDupe.store.redis_layout import REDIS_FORMAT

    require_redis()

    async def fill(url: str) -> None:
        async with RedisStore.from_url(url, PLUGIN_HEADER) as store:
            assert await store.check_and_add(0x0123456789ABCDEF, "https://new/a") is None
            tables = len(Design.named(PLUGIN_HEADER.design).tables)
            old = {"format": 3, "bucket_bits": [16] * tables, "page_bits": 18, "sentence_bits": 18}
            await store.client.set("{old}:header", json.dumps(PLUGIN_HEADER.to_dict()))
            await store.client.set("{old}:layout", json.dumps(old))

    with RedisServer(tmp_path / "redis") as redis:
        asyncio.run(fill(redis.url))
        assert REDIS_FORMAT == 4
        text = neardupe(tmp_path, "stats", index=redis.url)
        assert text.returncode == 0, text.stderr
        (line,) = [x for x in text.stdout.splitlines() if x.startswith("algorithm")]
        assert line.endswith(f"format {REDIS_FORMAT}"), line
        old = neardupe(
            tmp_path, "stats", "--json", "-s", "NEARDUPE_INDEX_NAME=old", index=redis.url
        )
        assert old.returncode == 0, old.stderr
        assert json.loads(old.stdout)["format"] == 3
