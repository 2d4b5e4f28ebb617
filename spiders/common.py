"""Helpers shared by the demo spiders: item fields and link following."""

from __future__ import annotations

from urllib.parse import urlsplit

from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.link import Link
from scrapy.linkextractors import LinkExtractor

from nearDupe import main_text

_VISIBLE = ".//text()[not(ancestor::script or ancestor::style)]"


def page_title(response: TextResponse) -> str:
    """The page's <title>, whitespace-normalised."""
    return response.xpath("normalize-space(//title)").get(default="")


def page_text(response: TextResponse) -> str:
    """nearDupe's extracted text if the plugin attached it, else the visible article/body text."""
    text = main_text(response)
    if text is not None:
        return text
    root = response.xpath("//article") or response.xpath("//body")
    if not root:
        return ""
    lines = (line.strip() for line in root[0].xpath(_VISIBLE).getall())
    return "\n".join(line for line in lines if line)


def article_item(response: Response) -> dict[str, str] | None:
    """The demo's item for an article page (url, title, text, site), None for other pages."""
    if not isinstance(response, HtmlResponse) or not response.xpath("//article"):
        return None
    return {
        "url": response.url,
        "title": page_title(response),
        "text": page_text(response),
        "site": response.xpath("//meta[@property='og:site_name']/@content").get(""),
    }


def same_host_links(extractor: LinkExtractor, response: TextResponse, host: str) -> list[Link]:
    """The extractor's links from ``response`` that point to ``host`` (any port)."""
    links = extractor.extract_links(response)
    return [link for link in links if urlsplit(link.url).hostname == host]
