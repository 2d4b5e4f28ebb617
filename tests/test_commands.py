"""``scrapy neardupe ...`` against a real demo crawl's index and report, and the progress log."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import lxml.html
import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from nearDupe.logstats import NearDupeLogStats
from tests.crawl import ROOT, CrawlResult, run_crawl, run_scrapy, shared_crawl

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CrawlResult]:
    """One demo crawl for the whole run: its directory (index/, report.jsonl, items.jsonl)
    and results. Tests only read that directory: what they write goes to their tmp_path."""
    tmp, result, _ = shared_crawl(
        tmp_path_factory, "demo", ["crawl", "demo"], {"LOGSTATS_INTERVAL": 1}
    )
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["neardupe/dropped"] > 0
    return tmp, result


def neardupe(tmp: Path, *args: str, index: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m scrapy neardupe ARGS`` from the repo root, on the crawl's index."""
    return run_scrapy(["neardupe", *args, "-s", f"NEARDUPE_INDEX={index or tmp / 'index'}"])


def decisions(result: CrawlResult) -> dict[str, dict[str, Any]]:
    """The first decision of each URL."""
    first: dict[str, dict[str, Any]] = {}
    for line in result.report:
        first.setdefault(line["url"], line)
    return first


def test_command_is_registered_and_lists_subcommands(crawl: tuple[Path, CrawlResult]) -> None:
    tmp, _ = crawl
    proc = neardupe(tmp)
    assert proc.returncode == 2
    for name in ("stats", "check", "clusters", "report", "import"):
        assert name in proc.stdout + proc.stderr
    # Scrapy's help formatter makes a heading of any help line ending in a colon.
    usage = neardupe(tmp, "--help").stdout
    headings = [line for line in usage.splitlines() if set(line) == {"="}]
    assert len(headings) == 3 and "SUBCOMMAND -h' lists" in " ".join(usage.split()), usage
    assert "report.html by default" in neardupe(tmp, "report", "--help").stdout


def test_options_are_each_subcommands_own(crawl: tuple[Path, CrawlResult], tmp_path: Path) -> None:
    tmp, _ = crawl
    wrong = neardupe(tmp, "stats", "--top", "3")
    assert wrong.returncode == 2 and "stats: unrecognised arguments: --top 3" in wrong.stderr
    missing = neardupe(tmp, "check")
    assert missing.returncode == 2
    assert "scrapy neardupe check: error: the following arguments are required" in missing.stderr
    # Scrapy's -s before and after the subcommand both count.
    index, report = tmp / "index", tmp_path / "report.jsonl"
    report.write_text(json.dumps({"url": "http://example.com/", "decision": "kept"}) + "\n")
    given = ["-s", f"NEARDUPE_INDEX={index}", "stats", "--json", "-s", f"NEARDUPE_REPORT={report}"]
    both = run_scrapy(["neardupe", *given])
    alone = neardupe(tmp, "stats", "--json")
    assert both.returncode == alone.returncode == 0, both.stderr + alone.stderr
    with_report, without = json.loads(both.stdout), json.loads(alone.stdout)
    assert with_report["pages"] == without["pages"] > 0
    assert with_report["report"]["items"] == 1 < without["report"]["items"]


def test_stats_into_a_pipe_closed_early(crawl: tuple[Path, CrawlResult]) -> None:
    tmp, _ = crawl
    command = f"{sys.executable} -m scrapy neardupe stats -s NEARDUPE_INDEX={tmp / 'index'}"
    proc = subprocess.run(
        f"{command} | head -2",
        shell=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout.startswith("index ") and len(proc.stdout.splitlines()) == 2
    assert "BrokenPipeError" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_stats(crawl: tuple[Path, CrawlResult]) -> None:
    tmp, result = crawl
    proc = neardupe(tmp, "stats", "--json", "--report", str(tmp / "report.jsonl"))
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)
    kept = result.stats["neardupe/kept"]
    assert stats["pages"] == kept == result.stats["neardupe/index_size"]
    assert stats["header"]["design"] == "4-table" and stats["header"]["k"] == 3
    assert stats["memory_bytes"] > 0 and stats["disk_bytes"] > 0
    assert sum(stats["nearest_distance"].values()) == kept
    # Kept pages are never within k of each other.
    assert all(stats["nearest_distance"][str(d)] == 0 for d in range(4))
    report = stats["report"]
    assert report["kept"] == kept and report["dropped"] == result.stats["neardupe/dropped"]
    assert report["drop_distances"] == {
        name.rsplit("/", 1)[1]: n
        for name, n in result.stats.items()
        if name.startswith("neardupe/distance/")
    }

    text = neardupe(tmp, "stats").stdout
    assert f"pages         {kept}" in text
    assert "4-table (k=3, 4 tables" in text and "nearest other stored page" in text


def test_clusters_match_the_drops(crawl: tuple[Path, CrawlResult], tmp_path: Path) -> None:
    tmp, result = crawl
    out = tmp_path / "clusters.jsonl"
    proc = neardupe(tmp, "clusters", "-o", str(out), "--report", str(tmp / "report.jsonl"))
    assert proc.returncode == 0, proc.stderr
    clusters = [json.loads(line) for line in out.read_text().splitlines()]
    assert [c["size"] for c in clusters] == sorted((c["size"] for c in clusters), reverse=True)
    where = {url: i for i, c in enumerate(clusters) for url in c["pages"]}
    assert len(where) == sum(c["size"] for c in clusters), "each page in one cluster"
    dropped = [d for d in decisions(result).values() if d["decision"] == "dropped"]
    for drop in dropped:
        assert where[drop["url"]] == where[drop["duplicate_of"]]
    for cluster in clusters:
        assert cluster["size"] == len(cluster["pages"]) == len(cluster["fingerprints"]) >= 2
        assert cluster["kept"] and cluster["pages"][0] == cluster["kept"][0]
        drops = [d["distance"] for d in dropped if d["url"] in cluster["pages"] and d["distance"]]
        assert cluster["max_distance"] >= max(drops, default=0)
    assert sum(c["size"] - len(c["kept"]) for c in clusters) == len(dropped)

    # Without the report the index's own drop log gives the same clusters, on stdout.
    from_index = [json.loads(line) for line in neardupe(tmp, "clusters").stdout.splitlines()]
    assert from_index == clusters


def test_inspect_commands_work_on_an_index_crawled_without_a_report(tmp_path: Path) -> None:
    """The demo as the README runs it (no NEARDUPE_REPORT): the index remembers its drops,
    so clusters, report and stats show them."""
    result = run_crawl(tmp_path, ["crawl", "demo"], {"NEARDUPE_REPORT": ""})
    assert result.returncode == 0 and result.report == [], result.log[-2000:]
    dropped = result.stats["neardupe/dropped"]
    clusters = [json.loads(line) for line in neardupe(tmp_path, "clusters").stdout.splitlines()]
    assert sum(c["size"] - len(c["kept"]) for c in clusters) == dropped > 0
    stats = json.loads(neardupe(tmp_path, "stats", "--json").stdout)
    assert stats["report"]["dropped"] == dropped
    html = tmp_path / "report.html"
    assert neardupe(tmp_path, "report", "-o", str(html)).returncode == 0
    assert "drops kept in the index" in html.read_text() and "Biggest clusters" in html.read_text()


def test_check_url_finds_the_original_of_a_dropped_page(
    crawl: tuple[Path, CrawlResult],
) -> None:
    from spiders.demosite.server import DemoSiteServer

    tmp, result = crawl
    drop = next(d for d in decisions(result).values() if d["decision"] == "dropped")
    with DemoSiteServer() as server:
        proc = neardupe(tmp, "check", server.url + urlsplit(drop["url"]).path, "--json")
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["verdict"] == "dropped" and found["fingerprint"] == drop["fingerprint"]
    assert {"url": drop["duplicate_of"], "distance": drop["distance"]} in [
        {"url": m["url"], "distance": m["distance"]} for m in found["matches"] if m["duplicate"]
    ]


def test_check_decides_as_the_crawl_does(crawl: tuple[Path, CrawlResult], tmp_path: Path) -> None:
    """PDF, JSON and PNG are not HTML (the crawl skips them as not-html); a 404 is a page
    with an error status, not a usage error; a file is typed by its name."""
    from tests.mockserver import MockServer, Page

    tmp, _ = crawl
    pages = {
        "/doc.pdf": Page(b"%PDF-1.4 " + b"text " * 200, "application/pdf"),
        "/api.json": Page(json.dumps({"text": "words " * 200}).encode(), "application/json"),
        "/logo.png": Page(b"\x89PNG\r\n\x1a\n" + bytes(range(256)), "image/png"),
    }
    with MockServer(pages) as server:
        verdicts = {
            path: json.loads(neardupe(tmp, "check", server.url + path, "--json").stdout)
            for path in [*pages, "/missing.html"]
        }
        missing = neardupe(tmp, "check", server.url + "/missing.html")
    assert {p: (v["verdict"], v["reason"]) for p, v in verdicts.items()} == {
        "/doc.pdf": ("skipped", "not-html"),
        "/api.json": ("skipped", "not-html"),
        "/logo.png": ("skipped", "not-html"),
        "/missing.html": ("skipped", "status"),
    }
    assert missing.returncode == 0 and "Usage" not in missing.stdout + missing.stderr
    assert "SKIPPED: not fingerprinted (HTTP status 404)" in missing.stdout
    assert verdicts["/missing.html"]["status"] == 404
    pdf = tmp_path / "doc.pdf"
    pdf.write_bytes(pages["/doc.pdf"].body)
    assert json.loads(neardupe(tmp, "check", str(pdf), "--json").stdout)["reason"] == "not-html"


def test_check_file(crawl: tuple[Path, CrawlResult], tmp_path: Path) -> None:
    from spiders.demosite.server import DemoSiteServer

    tmp, result = crawl
    kept = next(
        d
        for d in decisions(result).values()
        if d["decision"] == "kept" and "council-budget" in d["url"]  # an English article
    )
    page = tmp_path / "kept.html"
    with DemoSiteServer() as server:
        import urllib.request

        with urllib.request.urlopen(server.url + urlsplit(kept["url"]).path) as reply:
            page.write_bytes(reply.read())
    proc = neardupe(tmp, "check", str(page), "--radius", "6")
    assert proc.returncode == 0, proc.stderr
    assert f"fingerprint   {kept['fingerprint']}" in proc.stdout
    assert re.search(
        rf" 0 +0  DUPLICATE  {kept['fingerprint']}  {re.escape(kept['url'])}", proc.stdout
    )
    assert "stored pages within 6 bits" in proc.stdout

    # The same words in another order: within k by the fingerprint, told apart by the signature.
    tree = lxml.html.fromstring(page.read_bytes())
    rng = random.Random(5)
    for para in tree.iter("p"):
        words = (para.text_content() or "").split()
        if len(words) > 3:
            para.clear()
            para.text = " ".join(rng.sample(words, len(words)))
    reordered = tmp_path / "reordered.html"
    reordered.write_bytes(lxml.html.tostring(tree))
    proc = neardupe(tmp, "check", str(reordered), "--json")
    found = json.loads(proc.stdout)
    assert found["verdict"] == "kept", found
    near = [m for m in found["matches"] if m["url"] == kept["url"]]
    assert near and near[0]["distance"] <= found["k"]
    assert near[0]["distance"] + near[0]["signature_distance"] > found["confirm_k"]
    assert "differ in word order" in neardupe(tmp, "check", str(reordered)).stdout

    short = tmp_path / "short.html"
    short.write_text("<html><body><p>Too short.</p></body></html>")
    assert "SKIPPED: not fingerprinted (tiny-text)" in neardupe(tmp, "check", str(short)).stdout
    missing = neardupe(tmp, "check", str(tmp_path / "nope.html"))
    assert missing.returncode == 2
    assert "neither an http(s) URL nor a readable file" in missing.stderr


def test_import_builds_an_index_of_the_kept_items(
    crawl: tuple[Path, CrawlResult], tmp_path: Path
) -> None:
    tmp, result = crawl
    items = result.items
    copies = items[:5]
    feed = tmp_path / "feed.jsonl"
    with feed.open("w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps({"link": item["url"], "body": item["text"]}) + "\n")
        for item in copies:
            copy = {"link": item["url"] + "?copy", "body": item["text"] + "\n\n"}
            f.write(json.dumps(copy) + "\n")
        f.write(json.dumps({"link": "http://example.com/short", "body": "Too short."}) + "\n")
        f.write(json.dumps({"link": "http://example.com/none"}) + "\n")
    index, out = tmp_path / "imported", tmp_path / "import-decisions.jsonl"
    args = ["--url-field", "link", "--text-field", "body", "--json", "--workers", "2"]
    proc = neardupe(tmp, "import", str(feed), *args, "-o", str(out), index=index)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["kept"] == len(items) == summary["index_size"]
    assert summary["dropped"] == len(copies)
    assert summary["skipped_by_reason"] == {"tiny-text": 1, "no-text-field": 1}
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == summary["items"] == len(items) + len(copies) + 2
    assert {d["duplicate_of"] for d in lines if d["decision"] == "dropped"} == {
        c["url"] for c in copies
    }
    stats = json.loads(neardupe(tmp, "stats", "--json", index=index).stdout)
    assert stats["pages"] == summary["kept"]

    again = neardupe(
        tmp, "import", str(feed), "--url-field", "link", "--text-field", "body", index=index
    )
    assert again.returncode == 0, again.stderr
    assert f"0 kept, {len(copies)} dropped" in again.stdout
    assert f"now holds {len(items)} pages" in again.stdout


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_report_links_only_web_urls(tmp_path: Path) -> None:
    """URLs from an imported feed are untrusted: a javascript: one is shown, never linked."""
    text = " ".join(f"word{i} common shared words here" for i in range(80))
    feed = tmp_path / "feed.jsonl"
    rows = [("javascript:alert(document.domain)", text), ("https://example.com/a", text)]
    feed.write_text("".join(json.dumps({"url": u, "text": t}) + "\n" for u, t in rows))
    index = tmp_path / "index"
    decided = tmp_path / "decisions.jsonl"
    assert neardupe(tmp_path, "import", str(feed), "-o", str(decided), index=index).returncode == 0
    html_path = tmp_path / "report.html"
    report = neardupe(
        tmp_path, "report", "-o", str(html_path), "--report", str(decided), index=index
    )
    assert report.returncode == 0, report.stderr
    html = html_path.read_text(encoding="utf-8")
    assert "javascript:alert(document.domain)" in html and "href='javascript" not in html


def test_html_report(crawl: tuple[Path, CrawlResult], tmp_path: Path) -> None:
    tmp, result = crawl
    html_path = tmp_path / "report.html"
    proc = neardupe(tmp, "report", "-o", str(html_path), "--report", str(tmp / "report.jsonl"))
    assert proc.returncode == 0, proc.stderr
    html = html_path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and html.count("<svg") >= 3
    assert "Distance of each drop to its original" in html and "Closest kept pairs" in html
    drop = next(d for d in decisions(result).values() if d["decision"] == "dropped")
    assert f"href='{drop['url']}'" in html and f"href='{drop['duplicate_of']}'" in html
    assert "<script" not in html and "http-equiv" not in html, "self-contained, static"

    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    shot, profile = tmp_path / "shot.png", tmp_path / "chromium-profile"
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        f"--screenshot={shot}",
        "--window-size=1200,2000",
        html_path.as_uri(),
    ]
    subprocess.run(command, capture_output=True, timeout=60, check=False)
    shutil.rmtree(profile, ignore_errors=True)
    assert shot.exists(), "chromium wrote no screenshot"
    assert _png_size(shot) == (1200, 2000)
    assert shot.stat().st_size > 30_000, "a blank page compresses to a few KB"


def test_progress_lines_in_the_crawl_log(crawl: tuple[Path, CrawlResult]) -> None:
    _, result = crawl
    lines = [line for line in result.log.splitlines() if "[nearDupe.logstats] INFO" in line]
    assert lines, "LOGSTATS_INTERVAL=1 logs nearDupe's counts every second"
    last = lines[-1]  # "1 item seen" when the crawl's first second saw one
    assert (" items seen (" in last or " 1 item seen (" in last) and " kept, " in last
    assert " skipped" in last


class _Stats:
    def __init__(self, values: dict[str, int]) -> None:
        self.values = values

    def get_stats(self) -> dict[str, int]:
        return self.values


def test_logstats_message_and_settings() -> None:
    stats = _Stats(
        {
            "neardupe/seen": 120,
            "neardupe/kept": 80,
            "neardupe/dropped": 30,
            "neardupe/skipped/tiny-text": 8,
            "neardupe/skipped/no-page": 2,
        }
    )
    extension = NearDupeLogStats(stats, 30.0)  # type: ignore[arg-type]
    assert extension.message() == (
        "nearDupe: 120 items seen (240/min), 80 kept, 30 dropped, 10 skipped "
        "(no-page 2, tiny-text 8)"
    )
    stats.values["neardupe/index_size"] = 1234
    assert extension.message().endswith(
        "0/min), 80 kept, 30 dropped, 10 skipped (no-page 2, tiny-text 8); index holds 1,234 pages"
    )
    with pytest.raises(NotConfigured):
        NearDupeLogStats.from_crawler(get_crawler(settings_dict={"NEARDUPE_ENABLED": False}))
    with pytest.raises(NotConfigured):
        NearDupeLogStats.from_crawler(get_crawler(settings_dict={"LOGSTATS_INTERVAL": 0}))
    enabled = NearDupeLogStats.from_crawler(get_crawler(settings_dict={"LOGSTATS_INTERVAL": 5}))
    assert enabled.interval == 5


def test_clusters_respect_signatures(tmp_path: Path) -> None:
    """Two kept pages within k whose signatures differ (same words, other order) are two
    clusters; a dropped copy joins the page it duplicates."""
    from nearDupe.commands._index import IndexView
    from nearDupe.commands.clusters import find_clusters, pages_of
    from nearDupe.store import EmbeddedIndex, IndexHeader
    from nearDupe.store.embedded_view import EmbeddedView

    a, signature = 0x0F0F_1234_5678_9ABC, 0x1111_2222_3333_4444
    b, c = a ^ 0b11, a ^ 0b100
    with EmbeddedIndex(tmp_path, IndexHeader(design="blocks-8-9", k=8, confirm_k=14)) as index:
        assert index.check_and_add(a, "https://a", signature) is None
        assert index.check_and_add(b, "https://b", ~signature & (2**64 - 1)) is None
        assert index.check_and_add(c, "https://c", signature ^ 1).key == "https://a"
    view = IndexView(EmbeddedView(tmp_path))
    report = [
        {
            "url": "https://c",
            "decision": "dropped",
            "fingerprint": f"{c:016x}",
            "duplicate_of": "https://a",
        }
    ]
    pages = pages_of(view, report)
    assert [sorted(p.url for p in cl.pages) for cl in find_clusters(pages, 8)] == [
        ["https://a", "https://b", "https://c"]
    ]
    clusters = find_clusters(pages, 8, confirm_k=14)
    assert [sorted(p.url for p in cl.pages) for cl in clusters] == [["https://a", "https://c"]]
    # A short page dropped for the sentences it shares with b: far by fingerprint, joined.
    far = ~b & (2**64 - 1)
    report.append(
        {"url": "https://d", "decision": "dropped", "fingerprint": f"{far:016x}",
         "duplicate_of": "https://b", "distance": None, "reason": "shared-sentences"}
    )  # fmt: skip
    clusters = find_clusters(pages_of(view, report), 8, confirm_k=14)
    assert [sorted(p.url for p in cl.pages) for cl in clusters] == [
        ["https://b", "https://d"],
        ["https://a", "https://c"],
    ]
    assert clusters[0].max_distance == 64


def test_check_explains_a_drop_by_shared_sentences(tmp_path: Path) -> None:
    """``check`` judges a short page the way the crawl does: by the sentences it shares."""
    from scrapy.settings import Settings

    from nearDupe._settings import Config
    from nearDupe.analysis import analyze_html
    from nearDupe.store import EmbeddedIndex

    brief = (
        "<p>The city council approved the harbor budget on Monday evening.</p>"
        "<p>Ferries will run every twenty minutes from June.</p>"
    )
    config = Config.from_settings(Settings({"NEARDUPE_INDEX": str(tmp_path / "index")}))
    stored = analyze_html(f"<html><body>{brief}</body></html>", 200, 10**6, config.features)
    assert stored.fingerprint is not None and stored.sentences
    with EmbeddedIndex(config.index, config.header) as index:
        index.add(stored.fingerprint, "https://a", stored.signature, stored.sentences)
    copy = tmp_path / "copy.html"
    copy.write_text(f"<html><body>{brief}<p>Critics said the vote was rushed.</p></body></html>")
    proc = neardupe(tmp_path, "check", str(copy), "--json")
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["verdict"] == "dropped", found
    (match,) = [m for m in found["matches"] if m["duplicate"]]
    assert match["url"] == "https://a" and match["distance"] is None
    assert found["sentence_share"] <= match["shared"] < 1
    text = neardupe(tmp_path, "check", str(copy)).stdout
    assert "DROPPED: near-duplicate of https://a (shares" in text
    # One sentence in common, about half of each page: listed, not a copy.
    lookalike = tmp_path / "lookalike.html"
    lookalike.write_text(
        "<html><body><p>The city council approved the harbor budget on Monday evening.</p>"
        "<p>Parents asked the council for longer library hours in winter.</p></body></html>"
    )
    found = json.loads(neardupe(tmp_path, "check", str(lookalike), "--json").stdout)
    assert found["verdict"] == "kept", found
    (near,) = found["matches"]
    assert near["url"] == "https://a" and not near["duplicate"] and 0.3 < near["shared"] < 0.6
    text = neardupe(tmp_path, "check", str(lookalike)).stdout
    assert "the pages sharing its sentences share too little" in text
    assert re.search(r"near +[0-9a-f]{16}  https://a  \(shares \d+% of the sentences\)", text)


def test_a_missing_or_unreadable_index_is_a_usage_error(tmp_path: Path) -> None:
    """No index at NEARDUPE_INDEX, or one whose header is not JSON: one line saying so and
    the usage exit status, no traceback."""
    import sqlite3

    from nearDupe.store import EmbeddedIndex, IndexHeader

    missing = neardupe(tmp_path, "stats", index=tmp_path / "nowhere")
    assert missing.returncode == 2 and "no nearDupe index at" in missing.stderr, missing.stderr
    with EmbeddedIndex(tmp_path / "index", IndexHeader()) as index:
        assert index.check_and_add(0x0123_4567_89AB_CDEF, "https://a") is None
    with sqlite3.connect(tmp_path / "index" / "pages.sqlite3") as db:
        db.execute("UPDATE meta SET value = '{' WHERE name = 'header'")
    db.close()
    broken = neardupe(tmp_path, "stats", index=tmp_path / "index")
    assert broken.returncode == 2 and "has an unreadable header" in broken.stderr, broken.stderr
    assert "Traceback" not in missing.stderr + broken.stderr
