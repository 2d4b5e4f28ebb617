"""One-line enabling: ``ADDONS = {"nearDupe.Addon": 500}``."""

from __future__ import annotations

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from scrapy.utils.misc import load_object

from nearDupe.logformatter import NearDupeLogFormatter

#: Component -> (setting, priority). The downloader middleware sits close to the engine so it
#: sees final, decompressed responses after redirects; the mirror skipper sees requests after
#: the offsite filter, before robots.txt's (none fetched for a mirror); the spider middlewares
#: sit last before the engine so they see the items and requests other spider middlewares let
#: through (the copy-link holder last: it sees what the item linker tagged); the
#: pipeline runs early so dropped items never reach storage pipelines.
COMPONENTS = {
    "nearDupe.middleware.NearDupeDownloaderMiddleware": ("DOWNLOADER_MIDDLEWARES", 100),
    "nearDupe.mirrors.MirrorSkipMiddleware": ("DOWNLOADER_MIDDLEWARES", 60),
    "nearDupe.links.NearDupeSpiderMiddleware": ("SPIDER_MIDDLEWARES", 25),
    "nearDupe.copylinks.CopyLinksMiddleware": ("SPIDER_MIDDLEWARES", 20),
    "nearDupe.pipeline.NearDupePipeline": ("ITEM_PIPELINES", 100),
    "nearDupe.logstats.NearDupeLogStats": ("EXTENSIONS", 500),
}


class Addon:
    """Enables nearDupe's middlewares, item pipeline, progress logging and drop log lines."""

    def update_settings(self, settings: BaseSettings) -> None:
        """Add the components unless the user already placed them."""
        chosen = settings.getpriority("LOG_FORMATTER")
        if chosen is None or chosen <= SETTINGS_PRIORITIES["default"]:
            settings.set("LOG_FORMATTER", NearDupeLogFormatter, priority="addon")
        for component, (setting, priority) in COMPONENTS.items():
            # A class, not its path: Scrapy then spots the user's own entry in either form.
            settings.setdefault_in_component_priority_dict(
                setting, load_object(component), priority
            )
