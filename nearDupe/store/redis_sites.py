"""Sites' lines in Redis (see nearDupe/store/sites.py): one hash per site, learned atomically.

Key ``<name>:site:{<xxh3 of the host>}``: the site's own hash tag, so on a Redis Cluster the
sites spread over the slots; each update is one script on one key. Field: the 8-byte line
hash; value: the 4-byte identities of up to LINE_TITLES pages that had it. Every crawler
learns into the same hash and reads it back at most every REFRESH seconds per site.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from xxhash import xxh3_64_hexdigest

from nearDupe.sitetemplate import LINE_TITLES, SITE_LINES, SiteTemplate
from nearDupe.store.sites import CACHED_SITES, learned

logger = logging.getLogger(__name__)

#: Seconds a crawler reuses what it read of a site before reading it again (what it learns
#: itself it sees at once; what other crawlers learned, within this delay).
REFRESH = 5.0

#: KEYS: the site's hash. ARGV: the page's identity (4 bytes), LINE_TITLES, SITE_LINES, then
#: the page's line hashes. Past SITE_LINES, lines of one page only go first (sampled).
LUA_LEARN = """
local key, id = KEYS[1], ARGV[1]
local titles, cap = tonumber(ARGV[2]), tonumber(ARGV[3])
for i = 4, #ARGV do
  local line = ARGV[i]
  local v = redis.call('HGET', key, line)
  if not v then
    redis.call('HSET', key, line, id)
  elseif #v < 4 * titles then
    local seen = false
    for j = 1, #v, 4 do
      if string.sub(v, j, j + 3) == id then seen = true break end
    end
    if not seen then redis.call('HSET', key, line, v .. id) end
  end
end
local excess = redis.call('HLEN', key) - cap
while excess > 0 do
  local sample = redis.call('HRANDFIELD', key, math.min(2 * excess, 512), 'WITHVALUES')
  local once = {}
  for j = 1, #sample, 2 do
    if #sample[j + 1] <= 4 then once[#once + 1] = sample[j] end
  end
  if #once == 0 then
    for j = 1, #sample, 2 do once[#once + 1] = sample[j] end
  end
  for j = 1, math.min(#once, excess) do redis.call('HDEL', key, once[j]) end
  excess = redis.call('HLEN', key) - cap
end
return 1
"""


def _titles(value: bytes) -> tuple[int, ...]:
    return tuple(int.from_bytes(value[i : i + 4], "big") for i in range(0, len(value) - 3, 4))


class RedisSites:
    """Read and learn sites' lines in the index's Redis (a cache of recent sites per process)."""

    def __init__(self, client: Any, name: str) -> None:
        self.client = client
        self.name = name
        self._learn = client.register_script(LUA_LEARN)
        self._cache: OrderedDict[str, tuple[float, dict[int, tuple[int, ...]]]] = OrderedDict()

    def key(self, host: str) -> str:
        """The Redis key of a site."""
        return f"{self.name}:site:{{{xxh3_64_hexdigest(host.encode('utf-8', 'surrogatepass'))}}}"

    async def _book(self, host: str) -> dict[int, tuple[int, ...]]:
        cached = self._cache.get(host)
        if cached is not None and time.monotonic() - cached[0] < REFRESH:
            self._cache.move_to_end(host)
            return cached[1]
        try:
            raw = await self.client.hgetall(self.key(host))
        except Exception as exc:  # the template is an aid: without it the page is judged whole
            logger.debug("nearDupe: site %s not read from Redis: %s", host, exc)
            return cached[1] if cached is not None else {}
        book = {int.from_bytes(line, "big"): _titles(value) for line, value in raw.items()}
        self._cache[host] = (time.monotonic(), book)
        while len(self._cache) > CACHED_SITES:
            self._cache.popitem(last=False)
        return book

    async def template(self, host: str) -> SiteTemplate:
        """What the site's pages taught every crawler (as of at most REFRESH seconds ago)."""
        return SiteTemplate(dict(await self._book(host))) if host else SiteTemplate()

    async def learn(self, host: str, identity: int, lines: Iterable[int]) -> None:
        """Count a decided page's lines in the shared hash (and in this process's copy)."""
        if not host or not identity:
            return
        lines = list(lines)
        if not lines:
            return
        args = [identity.to_bytes(4, "big"), LINE_TITLES, SITE_LINES]
        args += [line.to_bytes(8, "big") for line in lines]
        await self._learn([self.key(host)], args)
        cached = self._cache.get(host)
        if cached is not None:
            self._cache[host] = (cached[0], learned(dict(cached[1]), identity, lines))
