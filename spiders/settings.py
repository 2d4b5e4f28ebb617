"""Scrapy settings of the nearDupe demo project."""

BOT_NAME = "spiders"

SPIDER_MODULES = ["spiders.spiders"]
NEWSPIDER_MODULE = "spiders.spiders"

ROBOTSTXT_OBEY = False
CONCURRENT_REQUESTS = 16
AUTOTHROTTLE_ENABLED = False

# The nearDupe add-on wires in the plugin; NEARDUPE_REPORT is deliberately left unset.
ADDONS = {"nearDupe.Addon": 500}

LOG_LEVEL = "INFO"
FEED_EXPORT_ENCODING = "utf-8"
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
