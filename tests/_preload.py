"""What the process that forks the tests' crawls and commands imports once (tests/crawl.py):
Scrapy and the components a crawl loads, lxml, readability, aiohttp (the demo site's server),
numpy and nearDupe (~2 s of CPU a process otherwise). Not numba: a crawl's small index runs
numpy's kernels, and a crawl loads numba's itself when it needs them (nearDupe/kernels.py).
No Twisted reactor is installed here: each crawl installs its own."""

import importlib
import sys

import nearDupe.addon
import nearDupe.commands
import nearDupe.kernels
import nearDupe.links
import nearDupe.middleware
import nearDupe.pipeline
import nearDupe.store.embedded
import nearDupe.text

_MODULES = [
    "aiohttp.web",
    "requests",
    "tldextract",
    "scrapy.cmdline",
    "scrapy.commands.crawl",
    "scrapy.core.downloader.handlers.http11",
    "scrapy.core.downloader.handlers.file",
    "scrapy.core.downloader.handlers.datauri",
    "scrapy.downloadermiddlewares.cookies",
    "scrapy.downloadermiddlewares.httpcompression",
    "scrapy.downloadermiddlewares.offsite",
    "scrapy.downloadermiddlewares.redirect",
    "scrapy.downloadermiddlewares.retry",
    "scrapy.downloadermiddlewares.robotstxt",
    "scrapy.extensions.feedexport",
    "scrapy.extensions.telnet",
    "scrapy.extensions.memusage",
    "scrapy.pqueues",
    "scrapy.squeues",
    "scrapy.spidermiddlewares.referer",
    "scrapy.spidermiddlewares.depth",
    "spiders.spiders.demo",
    "spiders.spiders.pages",
]
for name in _MODULES:
    importlib.import_module(name)
assert "twisted.internet.reactor" not in sys.modules, "a crawl installs its own reactor"
assert "numba" not in sys.modules, "numba is loaded only where an index needs it"

__all__ = ["nearDupe"]
