"""`scrapy neardupe` on a shared Redis index: import, then stats, clusters, check and report."""

from __future__ import annotations

import json
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


def test_stats_prints_the_format_of_the_redis_index(tmp_path: Path) -> None:
    """``stats`` on a Redis index prints the format of its keys (REDIS_FORMAT), not the
    embedded index's header format; an index laid out in an earlier format is refused with
    one line."""
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
        old = neardupe(tmp_path, "stats", "-s", "NEARDUPE_INDEX_NAME=old", index=redis.url)
        assert old.returncode == 1 and "has an unknown layout" in old.stderr, old.stderr
        assert "Traceback" not in old.stderr


def test_an_embedded_and_a_redis_index_answer_alike(
    crawl: tuple[Path, CrawlResult], tmp_path: Path
) -> None:
    """The same feed imported into an embedded and a Redis index, the same site lines and
    mirror learned by both: their read-only views answer every call alike, and every inspect
    command prints the same answers (but for where the index lives and what only one keeps:
    files, the time pages were added)."""
    import asyncio
    import dataclasses

    from nearDupe.mirrors import MirrorRule
    from nearDupe.sitetemplate import site_memory, site_of
    from nearDupe.store import open_store
    from nearDupe.store.embedded_view import EmbeddedView
    from nearDupe.store.location import is_redis_url
    from nearDupe.store.view import ReadOnlyIndex, open_view

    require_redis()
    tmp, result = crawl
    items = result.items
    copies = [{**item, "url": item["url"] + "?copy"} for item in items[:3]]  # dropped
    feed = tmp_path / "feed.jsonl"
    feed.write_text(
        "".join(json.dumps({"url": i["url"], "text": i["text"]}) + "\n" for i in items + copies)
    )
    embedded = tmp_path / "index"
    page = tmp_path / "page.html"
    page.write_text(f"<html><body><p>{items[1]['text']}</p></body></html>", encoding="utf-8")
    host = site_memory(site_of("https://news.example/a"), page.read_text(encoding="utf-8"))
    with RedisServer(tmp_path / "redis") as redis:
        for index in (str(embedded), redis.url):
            imported = neardupe(tmp, "import", str(feed), "--json", index=index)  # type: ignore[arg-type]
            assert imported.returncode == 0, imported.stderr
        header = EmbeddedView(embedded).header

        async def learn(location: str) -> None:
            options = {"name": "neardupe"} if is_redis_url(location) else {}
            store = open_store(location, header, **options)
            for story in range(6):
                await store.learn_site(host, story, [1, 2, 3, 100 + story])
            await store.record_host("mirror.example", "origin.example", MirrorRule(1.0, 1))
            await store.close()

        views: list[ReadOnlyIndex] = []
        for location in (str(embedded), redis.url):
            asyncio.run(learn(location))
            views.append(open_view(location, header, name="neardupe"))
        on_disk, in_redis = views

        def untimed(view: ReadOnlyIndex, url: str) -> object:
            version = view.version(url)
            return version and dataclasses.replace(version, first_stored=0, last_changed=None)

        assert sorted(p._replace(added=None) for p in on_disk.pages()) == in_redis.pages()
        assert len(in_redis.pages()) == len(items)
        assert [dataclasses.replace(d, added=0) for d in on_disk.drops()] == [
            dataclasses.replace(d, added=0) for d in in_redis.drops()
        ]
        assert len(on_disk.drops()) == 3
        assert on_disk.mirrors() == in_redis.mirrors() == {"mirror.example": "origin.example"}
        assert on_disk.site(host) == in_redis.site(host) and on_disk.site(host).lines
        for item in items[:5]:
            assert untimed(on_disk, item["url"]) == untimed(in_redis, item["url"]) is not None
        assert untimed(on_disk, "https://elsewhere/") is untimed(in_redis, "https://elsewhere/")
        assert on_disk.format() != in_redis.format()
        assert on_disk.disk_bytes() and in_redis.disk_bytes() is None

        answers = []
        for index in (str(embedded), redis.url):
            stats = json.loads(neardupe(tmp, "stats", "--json", index=index).stdout)
            for where in ("index", "format", "disk_bytes", "first_added", "last_added"):
                stats.pop(where)
            out = tmp_path / "clusters.jsonl"
            assert neardupe(tmp, "clusters", "-o", str(out), index=index).returncode == 0
            clusters = sorted(
                (sorted(c["pages"]), c["max_distance"], sorted(c["kept"]))
                for c in map(json.loads, out.read_text().splitlines())
            )
            check = json.loads(neardupe(tmp, "check", str(page), "--json", index=index).stdout)
            check["matches"].sort(key=lambda m: (m["distance"] is None, m["distance"], m["url"]))
            answers.append((stats, clusters, check))
        assert answers[0] == answers[1]
        stats, clusters, check = answers[0]
        assert stats["pages"] == len(items) and stats["mirrors"]
        assert any(len(pages) > 1 for pages, _, _ in clusters)
        assert check["verdict"] == "dropped"
        assert items[1]["url"] in [m["url"] for m in check["matches"] if m["duplicate"]]
