"""A crawl checks its settings and its index before it starts: one line when they are wrong,
a non-zero exit, no traceback; and nothing of nearDupe's dependencies floods the log."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from scrapy.settings import Settings

from nearDupe._settings import Config, unknown_settings
from nearDupe.errors import SettingsError
from tests.crawl import ROOT, assert_refused_at_start, run_crawl
from tests.mockserver import MockServer
from tests.redis_server import free_port
from tests.site import build_site


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("NEARDUPE_K", "abc", "a whole number within 0..63"),
        ("NEARDUPE_K", "99", "a whole number within 0..63"),
        ("NEARDUPE_K", "2.5", "a whole number"),
        ("NEARDUPE_WORKERS", "many", "a whole number within 0..1024"),
        ("NEARDUPE_WORKERS", "-1", "a whole number within 0..1024"),
        ("NEARDUPE_GC_FREEZE", "maybe", "True or False"),
        ("NEARDUPE_COMMIT_INTERVAL", "-1", "a number within [0, 3600]"),
        ("NEARDUPE_ANALYSIS_TIMEOUT", "soon", "a number within [0, 3600]"),
        ("NEARDUPE_MAX_HTML_CHARS", "10", "a whole number within 1000.."),
        ("NEARDUPE_DESIGN", "blocks-3-x", "4-table, 10-table"),
        ("NEARDUPE_FEATURES", "{not json", "a dict or its JSON text"),
        ("NEARDUPE_INDEX_NAME", "", "a non-empty string"),
    ],
)
def test_a_wrong_setting_names_itself_its_value_and_what_is_allowed(
    name: str, value: str, allowed: str
) -> None:
    with pytest.raises(SettingsError) as raised:
        Config.from_settings(Settings({name: value}))
    message = str(raised.value)
    assert message.startswith(f"{name} = {value!r}: expected"), message
    assert allowed in message, message


@pytest.mark.parametrize("index", ["http://x/", "https://user:secret@redis.example/0", "s3://b/i"])
def test_an_index_url_naming_no_redis_is_refused_without_its_credentials(index: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Config.from_settings(Settings({"NEARDUPE_INDEX": index}))
    message = str(raised.value)
    assert message.startswith("NEARDUPE_INDEX = '"), message
    assert "expected a directory or a Redis URL (redis://" in message, message
    assert "secret" not in message and "user" not in message, message


def test_settings_of_the_right_type_from_the_command_line_are_read() -> None:
    config = Config.from_settings(
        Settings(
            {
                "NEARDUPE_K": "5",
                "NEARDUPE_WORKERS": "0",
                "NEARDUPE_GC_FREEZE": "false",
                "NEARDUPE_SENTENCE_SHARE": "0.5",
                "NEARDUPE_FEATURES": '{"top_n": 50}',
                "NEARDUPE_START_WITHOUT_INDEX": "1",
            }
        )
    )
    assert (config.k, config.workers, config.gc_freeze, config.sentence_share) == (
        5,
        0,
        False,
        0.5,
    )
    assert config.features.top_n == 50 and config.start_without_index


def test_an_unknown_setting_is_named_with_the_closest_known_one() -> None:
    settings = Settings({"NEARDUPE_KK": 5, "NEARDUPE_INDX": "x", "NEARDUPE_TOTALLY_NEW": 1})
    assert unknown_settings(settings) == [
        "unknown setting NEARDUPE_INDX is ignored; did you mean NEARDUPE_INDEX?",
        "unknown setting NEARDUPE_KK is ignored; did you mean NEARDUPE_K?",
        "unknown setting NEARDUPE_TOTALLY_NEW is ignored",
    ]


def test_a_wrong_setting_refuses_the_crawl_in_one_line(tmp_path: Path) -> None:
    pages, _ = build_site()
    with MockServer(pages) as server:
        result = run_crawl(
            tmp_path,
            ["crawl", "pages", "-a", f"start_url={server.url}/"],
            {"NEARDUPE_K": "abc", "NEARDUPE_KK": "5"},
        )
    assert_refused_at_start(result)
    errors = [line for line in result.log.splitlines() if " ERROR: " in line]
    assert errors == [next(ln for ln in errors if "NEARDUPE_K = 'abc'" in ln)], errors
    assert "expected a whole number within 0..63" in errors[0]
    warnings = [line for line in result.log.splitlines() if " WARNING: " in line]
    assert any("NEARDUPE_KK is ignored; did you mean NEARDUPE_K?" in ln for ln in warnings)


def test_an_unreachable_redis_refuses_the_crawl(tmp_path: Path) -> None:
    pages, _ = build_site()
    index = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    with MockServer(pages) as server:
        result = run_crawl(
            tmp_path,
            ["crawl", "pages", "-a", f"start_url={server.url}/"],
            {"NEARDUPE_INDEX": index},
        )
    assert_refused_at_start(result)
    refusal = next(ln for ln in result.log.splitlines() if "the crawl does not start" in ln)
    assert "is unreachable" in refusal and "NEARDUPE_START_WITHOUT_INDEX" in refusal, refusal


def test_a_report_that_cannot_be_written_refuses_the_crawl(tmp_path: Path) -> None:
    pages, _ = build_site()
    with MockServer(pages) as server:
        result = run_crawl(
            tmp_path,
            ["crawl", "pages", "-a", f"start_url={server.url}/"],
            {"NEARDUPE_REPORT": str(tmp_path)},  # a directory
        )
    assert_refused_at_start(result)
    refusal = next(ln for ln in result.log.splitlines() if "the crawl does not start" in ln)
    assert f"cannot write its report {tmp_path} (Is a directory)" in refusal, refusal


def test_a_crawl_started_without_its_index_on_purpose_keeps_its_items(tmp_path: Path) -> None:
    pages, _ = build_site()
    index = f"redis://127.0.0.1:{free_port()}/0"
    with MockServer(pages) as server:
        result = run_crawl(
            tmp_path,
            ["crawl", "pages", "-a", f"start_url={server.url}/"],
            {
                "NEARDUPE_INDEX": index,
                "NEARDUPE_START_WITHOUT_INDEX": True,
                "CLOSESPIDER_ITEMCOUNT": 3,
            },
        )
    assert result.returncode == 0, result.log[-3000:]
    assert result.items, result.log[-3000:]
    assert {line["reason"] for line in result.report if line["decision"] == "kept"} == {
        "index-unavailable"
    }


def test_the_first_pages_are_analysed_while_the_workers_start(tmp_path: Path) -> None:
    """A worker process takes seconds to import the extractor; meanwhile the crawl's first
    pages are analysed in a thread of its own, so the first page is decided at once."""
    pages, _ = build_site()
    with MockServer(pages) as server:
        result = run_crawl(
            tmp_path,
            ["crawl", "pages", "-a", f"start_url={server.url}/"],
            {"NEARDUPE_WORKERS": 2},
        )
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats.get("neardupe/responses/before_workers", 0) >= 1, result.stats
    assert result.stats["neardupe/dropped"] == 3 and result.stats["neardupe/kept"] == 6


@pytest.mark.parametrize("command", [["crawl", "demo"], ["neardupe", "stats"]])
def test_a_redis_index_without_the_redis_client_is_refused_in_one_line(
    tmp_path: Path, command: list[str]
) -> None:
    """A Redis index where the redis client is not installed (``sys.modules`` says so, as on
    a machine without ``nearDupe[redis]``): the crawl, or the command, stops with one line
    naming what to install, and no traceback."""
    (tmp_path / "sitecustomize.py").write_text('import sys\nsys.modules["redis"] = None\n')
    result = subprocess.run(
        [sys.executable, "-m", "scrapy", *command, "-s", "NEARDUPE_INDEX=redis://127.0.0.1:1/0"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    hint = "pip install 'nearDupe[redis]'"
    lines = [line for line in result.stderr.splitlines() if hint in line]
    assert len(lines) == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
