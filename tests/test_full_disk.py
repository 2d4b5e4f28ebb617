"""The disk fills up mid-crawl: the crawl goes on, every page keeps its item, nothing crashes."""

from __future__ import annotations

from pathlib import Path

from tests.crawl import ROOT, run_crawl
from tests.mockserver import MockServer
from tests.test_crash_resume import build_network

#: Every file the crawl writes stops growing here: the index's SQLite WAL reaches it first.
FILE_LIMIT = 256 * 1024


def test_index_write_failure_mid_crawl_keeps_every_item(tmp_path: Path) -> None:
    pages, cluster_of = build_network(40, 2)
    name = f"full-disk-{tmp_path.name}"
    pending = ROOT / ".scrapy" / f"neardupe-pending-{name}.jsonl"
    try:  # the pending file is only written if the index became unavailable: clean it anyway
        with MockServer(pages) as server:
            result = run_crawl(
                tmp_path,
                ["crawl", "pages", "-a", f"start_url={server.url}/"],
                {"NEARDUPE_COMMIT_INTERVAL": 0, "NEARDUPE_INDEX_NAME": name},
                max_file_bytes=FILE_LIMIT,
            )
        assert result.returncode == 0, result.log[-3000:]
        assert result.stats["finish_reason"] == "finished"
        html = {server.url + p for p in pages}
        decided = result.decisions()
        assert set(decided) == html, "every page got a decision"
        dropped = {u for u, d in decided.items() if d["decision"] == "dropped"}
        assert {item["url"] for item in result.items} == html - dropped, "no item lost"
        for url in dropped:  # drops made before the disk filled are still right
            dup = decided[url]["duplicate_of"]
            assert cluster_of[url[len(server.url) :]] == cluster_of[dup[len(server.url) :]]
        # The index keeps deciding from memory while it cannot write: every copy is caught.
        kept = {cluster_of[u[len(server.url) :]] for u, d in decided.items() if u in dropped}
        assert len(dropped) == len(cluster_of) // 2 == len(kept)
        assert "cannot write index" in result.log
        assert "closing index" in result.log and " ERROR: " in result.log
        assert "Traceback" not in result.log
    finally:
        pending.unlink(missing_ok=True)
