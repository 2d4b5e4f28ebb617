"""Items that carry their text, one of them under a URL with a lone surrogate (what
``json.loads`` makes of a feed's ``"\\udc80"``), then a copy of each under other URLs."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from scrapy import Spider
from scrapy.http import Response

WORDS = [
    "river",
    "council",
    "budget",
    "harbor",
    "bridge",
    "ferry",
    "library",
    "market",
    "metro",
    "flood",
    "garden",
]


def text(i: int) -> str:
    """Twelve sentences of article ``i``'s own vocabulary."""
    rng = random.Random(i)
    vocab = [f"w{i}x{j}" for j in range(40)] + WORDS
    return " ".join(
        " ".join(rng.choice(vocab) for _ in range(14)).capitalize() + "." for _ in range(12)
    )


class OddUrlsSpider(Spider):
    """``-a start_url=URL -a n=N``: N articles (article 1 under an odd URL), then N copies."""

    name = "odd_urls"

    def __init__(self, start_url: str = "", n: str = "6", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls, self.n = [start_url], int(n)

    def parse(self, response: Response) -> Iterator[dict[str, str]]:
        """The articles, then their copies."""
        for i in range(self.n):
            yield {"url": f"http://127.0.0.1/a{i}" + ("\udc80" if i == 1 else ""), "text": text(i)}
        for i in range(self.n):
            yield {"url": f"http://127.0.0.1/copy{i}", "text": text(i)}
