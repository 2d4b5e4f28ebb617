"""nearDupe as a user gets it: a built wheel in a fresh virtualenv, `scrapy startproject`, the
ADDONS line and a small spider, a crawl of the demo network; on the newest Scrapy of the
test environment and on the oldest that pyproject.toml supports."""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from spiders.demosite.server import DemoSiteServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
#: The oldest Scrapy pyproject.toml supports (its "scrapy>=X.Y" dependency).
OLDEST_SCRAPY = re.search(r'"scrapy>=([\d.]+)"', (ROOT / "pyproject.toml").read_text(), re.I)

#: The spider a user would write: an item per article page, every link followed.
SPIDER = """
import scrapy
from scrapy.linkextractors import LinkExtractor


class ArticlesSpider(scrapy.Spider):
    name = "articles"
    allowed_domains = ["127.0.0.1"]
    links = LinkExtractor()

    async def start(self):
        yield scrapy.Request(self.start_url)

    def parse(self, response):
        if not isinstance(response, scrapy.http.HtmlResponse):
            return
        if response.css("article"):
            yield {"url": response.url, "title": response.css("title::text").get()}
        for link in self.links.extract_links(response):
            yield response.follow(link, self.parse)
"""

#: Appended to the project's settings.py: the add-on, and no download delay for a local site.
SETTINGS = """
ADDONS = {"nearDupe.Addon": 500}
DOWNLOAD_DELAY = 0
CONCURRENT_REQUESTS_PER_DOMAIN = 8
"""


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """nearDupe's wheel, built once for the test run (shared by the xdist workers) from a copy
    of the work tree's files, so that the build leaves nothing in the work tree."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    out = base / "wheel"
    with open(base / "wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not list(out.glob("*.whl")):
            source = base / "wheel-source"
            shutil.rmtree(source, ignore_errors=True)
            files = subprocess.run(
                ["git", "ls-files", "-co", "--exclude-standard", "-z"],
                cwd=ROOT, check=True, capture_output=True, text=True,
            ).stdout.split("\0")  # fmt: skip
            for name in filter(None, files):
                if (ROOT / name).is_file():
                    (source / name).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(ROOT / name, source / name)
            # Without build isolation where this environment can build the wheel (offline);
            # else pip fetches the build requirements (setuptools) into an isolated one.
            isolation = ["--no-build-isolation"] if _builds_wheels() else []
            _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation,
                  "-w", str(out), str(source)])  # fmt: skip
    (built,) = out.glob("*.whl")
    return built


def _builds_wheels() -> bool:
    """Whether this environment's setuptools meets pyproject's build requirement and builds
    wheels (with the `wheel` package before setuptools 70.1)."""
    if importlib.util.find_spec("setuptools") is None:
        return False
    import setuptools

    version = tuple(int(part) for part in re.findall(r"\d+", setuptools.__version__)[:2])
    has_wheel = importlib.util.find_spec("wheel") is not None
    return version >= (70, 1) or (version >= (68, 0) and has_wheel)


def test_wheel_holds_the_package_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    data = {f"nearDupe/data/{p.name}" for p in (ROOT / "nearDupe" / "data").glob("*.txt.gz")}
    assert data and data <= names, data - names
    assert "nearDupe/py.typed" in names
    modules = {str(p.relative_to(ROOT)) for p in (ROOT / "nearDupe").rglob("*.py")}
    assert modules <= names, modules - names
    assert not any(name.startswith(("tests/", "spiders/", "benchmarks/")) for name in names)


def test_wheel_in_a_fresh_virtualenv_and_project(wheel: Path, tmp_path: Path) -> None:
    venv = fresh_venv(tmp_path / "venv")
    pip_install(venv, "--no-deps", str(wheel))
    where = _run([str(venv), "-c", "import nearDupe; print(nearDupe.__file__)"], cwd=tmp_path)
    assert where.stdout.startswith(str(tmp_path / "venv")), where.stdout
    crawl_fresh_project(venv, tmp_path)


def test_oldest_supported_scrapy(wheel: Path, tmp_path: Path) -> None:
    """pyproject's floor (scrapy>=2.14) in a virtualenv of its own, from PyPI."""
    assert OLDEST_SCRAPY, "pyproject.toml names no scrapy>= floor"
    oldest = OLDEST_SCRAPY.group(1)
    venv = fresh_venv(tmp_path / "venv")
    pip_install(venv, f"scrapy=={oldest}.*", str(wheel))
    version = _run([str(venv), "-c", "import scrapy; print(scrapy.__version__)"], cwd=tmp_path)
    assert version.stdout.startswith(f"{oldest}."), version.stdout
    crawl_fresh_project(venv, tmp_path)


def fresh_venv(path: Path) -> Path:
    """A new virtualenv at ``path``; its python. What it does not install itself comes from
    this test environment: a .pth file puts this environment's site-packages after the new
    one's (``--system-site-packages`` would add the base interpreter's, not this venv's),
    without its .pth files, so that an editable nearDupe there stays out."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(path)])
    python = path / "bin" / "python"
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    Path(site.stdout.strip(), "_test_environment.pth").write_text(
        sysconfig.get_path("purelib") + "\n"
    )
    return python


def pip_install(python: Path, *args: str) -> None:
    """``pip install ARGS`` into the virtualenv of ``python`` (this environment's pip)."""
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", *args])


def crawl_fresh_project(python: Path, tmp_path: Path) -> None:
    """``scrapy startproject``, the ADDONS line, a spider, a crawl of the demo network: each
    article kept once (14), its copies dropped (14), the index in the project's .scrapy."""
    _run([str(python), "-m", "scrapy", "startproject", "fresh"], cwd=tmp_path)
    project = tmp_path / "fresh"
    with (project / "fresh" / "settings.py").open("a") as settings:
        settings.write(SETTINGS)
    (project / "fresh" / "spiders" / "articles.py").write_text(SPIDER)
    with DemoSiteServer() as site:
        crawl = _run(
            [str(python), "-m", "scrapy", "crawl", "articles", "-a", f"start_url={site.url}/",
             "-O", "items.jsonl", "-s", "LOG_LEVEL=INFO"],
            cwd=project,
        )  # fmt: skip
    log = crawl.stderr
    assert "nearDupe: 28 items seen, 14 kept, 14 dropped" in log, log[-3000:]
    assert "Traceback" not in log and " ERROR: " not in log, log[-3000:]
    items = [json.loads(line) for line in (project / "items.jsonl").read_text().splitlines()]
    assert len(items) == 14 and len({item["url"] for item in items}) == 14
    assert (project / ".scrapy" / "neardupe").is_dir()
    stats = _run([str(python), "-m", "scrapy", "neardupe", "stats", "--json"], cwd=project)
    assert json.loads(stats.stdout)["pages"] == 14, stats.stdout


def _run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (args, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc
