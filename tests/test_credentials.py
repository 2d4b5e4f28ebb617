"""Redis credentials: never shown anywhere, and a refusal stops the crawl at start."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from nearDupe.store.location import public_location
from tests.crawl import assert_refused_at_start, run_crawl
from tests.mockserver import MockServer
from tests.redis_server import RedisServer, free_port, require_redis
from tests.site import build_site
from tests.test_commands import neardupe

pytestmark = pytest.mark.redis

SECRET = "s3cret-Pa55"


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        (f"redis://:{SECRET}@h:1/0", "redis://:***@h:1/0"),
        (f"redis://user:{SECRET}@h:1/0", "redis://user:***@h:1/0"),
        (f"redis://{SECRET}@h:1/0", "redis://:***@h:1/0"),  # a lone userinfo may be a password
        (f"redis://h:1/0?password={SECRET}&db=2", "redis://h:1/0?password=***&db=2"),
        (f"unix:///run/r.sock?Password={SECRET}", "unix:///run/r.sock?Password=***"),
        ("redis://h:1/0", "redis://h:1/0"),
        ("/data/index:1@x", "/data/index:1@x"),  # a directory is shown as it is
    ],
)
def test_public_location_masks_every_secret(location: str, shown: str) -> None:
    assert public_location(location) == shown


@pytest.fixture
def locked_redis(tmp_path: Path):
    require_redis()
    with RedisServer(tmp_path / "redis", extra=("--requirepass", SECRET)) as server:
        yield server


def test_passwords_never_reach_logs_reports_or_commands(locked_redis, tmp_path: Path) -> None:
    pages, _ = build_site()
    port = locked_redis.port
    with MockServer(pages) as server:
        crawls = [
            run_crawl(
                tmp_path / f"crawl{i}",
                ["crawl", "pages", "-a", f"start_url={server.url}/"],
                {"NEARDUPE_INDEX": index},
            )
            for i, index in enumerate(
                [
                    f"redis://:{SECRET}@127.0.0.1:{port}/0",
                    f"redis://127.0.0.1:{port}/0?password={SECRET}",
                ]
            )
        ]
    first, second = crawls
    assert first.returncode == second.returncode == 0, first.log[-2000:]
    assert first.stats["neardupe/kept"] > 0 and second.stats["neardupe/dropped"] > 0
    assert "redis://:***@127.0.0.1" in first.log and "password=***" in second.log
    index = f"redis://:{SECRET}@127.0.0.1:{port}/0"
    feed = tmp_path / "feed.jsonl"
    feed.write_text(json.dumps({"url": "https://example.com/a", "text": "word " * 300}) + "\n")
    html = tmp_path / "report.html"
    outputs = [
        neardupe(tmp_path, "stats", index=index),
        neardupe(tmp_path, "stats", "--json", index=index),
        neardupe(tmp_path, "report", "-o", str(html), index=index),
        neardupe(tmp_path, "import", str(feed), index=index),
        neardupe(tmp_path, "import", str(feed), "--json", index=index),
    ]
    for proc in outputs:
        assert proc.returncode == 0, proc.stderr
    shown = [c.log for c in crawls] + [p.stdout + p.stderr for p in outputs] + [html.read_text()]
    shown += [(c_dir / "report.jsonl").read_text() for c_dir in tmp_path.glob("crawl*")]
    assert all(SECRET not in text for text in shown)
    assert "redis://:***@127.0.0.1" in outputs[0].stdout and "***" in html.read_text()


def test_wrong_password_stops_the_crawl_at_start(locked_redis, tmp_path: Path) -> None:
    pages, _ = build_site()
    with MockServer(pages) as server:
        result = run_crawl(
            tmp_path,
            ["crawl", "pages", "-a", f"start_url={server.url}/"],
            {"NEARDUPE_INDEX": f"redis://:wrong-{SECRET}@127.0.0.1:{locked_redis.port}/0"},
        )
    assert_refused_at_start(result)
    refusal = next(ln for ln in result.log.splitlines() if "nearDupe cannot open" in ln)
    assert "refused this client" in refusal and "AuthenticationError" in refusal, refusal
    assert SECRET not in result.log


def test_a_certificate_that_does_not_verify_stops_the_crawl_at_start(tmp_path: Path) -> None:
    """A real TLS Redis whose self-signed certificate the client does not trust."""
    require_redis()
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    openssl = [
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
    ]
    subprocess.run(
        [*openssl, "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    tls_port = free_port()
    tls = (f"--tls-port {tls_port} --tls-cert-file {cert} --tls-key-file {key} "
           f"--tls-ca-cert-file {cert} --tls-auth-clients no").split()  # fmt: skip
    pages, _ = build_site()
    with RedisServer(tmp_path / "redis", extra=tuple(tls)), MockServer(pages) as server:
        result = run_crawl(
            tmp_path / "crawl",
            ["crawl", "pages", "-a", f"start_url={server.url}/"],
            {"NEARDUPE_INDEX": f"rediss://127.0.0.1:{tls_port}/0"},
        )
    assert_refused_at_start(result)
    refusal = next(ln for ln in result.log.splitlines() if "nearDupe cannot open" in ln)
    assert "SSLCertVerificationError" in refusal, refusal
