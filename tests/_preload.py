"""What the process that forks the tests' crawls and commands imports once (tests/crawl.py):
Scrapy, Twisted (no reactor installed), lxml, readability, numpy, numba and nearDupe's
components with their compiled kernels loaded, ~2 s of CPU a process otherwise."""

import scrapy.cmdline
import scrapy.crawler
import scrapy.extensions.feedexport
import scrapy.spiders

import nearDupe.addon
import nearDupe.commands
import nearDupe.middleware
import nearDupe.pipeline
import nearDupe.store.embedded
import nearDupe.text
from nearDupe import _kernels, _sample_kernels

_kernels.warm_up()
_sample_kernels.warm_up()

__all__ = ["nearDupe", "scrapy"]
