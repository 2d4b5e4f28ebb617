"""Sites' lines in Redis (see nearDupe/store/sites.py): one hash per site, learned atomically.

Key ``<name>:lines:{<xxh3 of the site>}`` (a site: sitetemplate.site_memory, a host and a
template): the site's own hash tag, so on a Redis Cluster the sites spread over the slots;
each update is one script on one key. Field: the 8-byte line hash; value: when the site last
saw it (4 bytes, the site's CLOCK then), then the 4-byte identities of up to LINE_TITLES
pages that had it. Every crawler learns into the same hash and reads it back at most every
REFRESH seconds per site, and forgets the lines the embedded index forgets. (An index
written before stamps kept its sites under ``<name>:site:{...}``: they are relearned.)

Hosts counted for the mirror rule (nearDupe/mirrors.py) share one hash per index,
``{<name>}:hosts`` (the index's own hash tag, as its counter and drop log), each page counted
by one script: fields ``n:<host>`` (its first decided pages, up to the rule's pages),
``c:<host>\0<other>`` (how many of them copied ``other``: at most the rule's pages fields a
host) and ``m:<host>`` (the host it mirrors, once decided).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from xxhash import xxh3_64_hexdigest

from nearDupe.mirrors import MirrorRule
from nearDupe.sitetemplate import LINE_TITLES, SITE_LINES, SiteTemplate
from nearDupe.store.sites import CACHED_SITES, learned

logger = logging.getLogger(__name__)

#: Seconds a crawler reuses what it read of a site before reading it again (what it learns
#: itself it sees at once; what other crawlers learned, within this delay). A young site
#: (sitetemplate.YOUNG_STORIES) is read again at every use: its pages are decided one at a
#: time with what every crawler's pages taught before them.
REFRESH = 5.0

#: The field of a site's hash that counts the lines it learned: each line's value begins with
#: the count when it was last seen (4 bytes), so every crawler forgets the same lines, in
#: the order the embedded index forgets them.
CLOCK = b"t"

#: KEYS: the site's hash. ARGV: the page's identity (4 bytes), LINE_TITLES, SITE_LINES, then
#: the page's line hashes. Each line is stamped with the site's clock as it is seen; past
#: SITE_LINES, the lines of one page only go first, then any, least recently seen first
#: (sitetemplate.py, store/sites.evict).
LUA_LEARN = """
local key, id = KEYS[1], ARGV[1]
local titles, cap = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = redis.call('HINCRBY', key, 't', #ARGV - 3)
local first = now - (#ARGV - 3)
for i = 4, #ARGV do
  local line = ARGV[i]
  local v = redis.call('HGET', key, line)
  local ids = v and string.sub(v, 5) or ''
  if #ids < 4 * titles then
    local seen = false
    for j = 1, #ids, 4 do
      if string.sub(ids, j, j + 3) == id then seen = true break end
    end
    if not seen then ids = ids .. id end
  end
  redis.call('HSET', key, line, struct.pack('>I4', (first + i - 4) % 4294967296) .. ids)
end
local excess = redis.call('HLEN', key) - 1 - cap
if excess > 0 then
  local all = redis.call('HGETALL', key)
  local once, any = {}, {}
  for j = 1, #all, 2 do
    if all[j] ~= 't' then
      local age = (struct.unpack('>I4', all[j + 1]) - now) % 4294967296
      local entry = {age, all[j]}
      any[#any + 1] = entry
      if #all[j + 1] <= 8 then once[#once + 1] = entry end
    end
  end
  local function older(a, b) return a[1] < b[1] end
  table.sort(once, older)
  local gone = {}
  for j = 1, math.min(#once, excess) do
    redis.call('HDEL', key, once[j][2])
    gone[once[j][2]] = true
  end
  excess = excess - math.min(#once, excess)
  if excess > 0 then
    table.sort(any, older)
    for j = 1, #any do
      if excess == 0 then break end
      if not gone[any[j][2]] then
        redis.call('HDEL', key, any[j][2])
        excess = excess - 1
      end
    end
  end
end
return 1
"""


#: KEYS: the index's hosts hash. ARGV: the host, the host its page copies ("" if none), the
#: rule's pages and the copies of one host that make a mirror. Returns the verdict (or nil).
LUA_RECORD_HOST = """
local key, host, other = KEYS[1], ARGV[1], ARGV[2]
local pages, needed = tonumber(ARGV[3]), tonumber(ARGV[4])
local mirror = redis.call('HGET', key, 'm:' .. host)
if mirror then return mirror end
if tonumber(redis.call('HGET', key, 'n:' .. host) or '0') >= pages then return false end
redis.call('HINCRBY', key, 'n:' .. host, 1)
if other ~= '' and redis.call('HINCRBY', key, 'c:' .. host .. '\0' .. other, 1) >= needed then
  redis.call('HSET', key, 'm:' .. host, other)
  return other
end
return false
"""


def _titles(value: bytes) -> tuple[int, ...]:
    """The page identities of a line's value (after its 4-byte stamp)."""
    return tuple(int.from_bytes(value[i : i + 4], "big") for i in range(4, len(value) - 3, 4))


def _book(raw: dict[bytes, bytes]) -> dict[int, tuple[int, ...]]:
    """A site's lines as read from its hash, least recently seen first (as the embedded
    index keeps them; the stamps count modulo 2**32 from the site's clock)."""
    clock = int(raw.get(CLOCK, b"0"))
    stamped = [
        ((int.from_bytes(value[:4], "big") - clock) % 2**32, field, value)
        for field, value in raw.items()
        if len(field) == 8
    ]
    return {int.from_bytes(field, "big"): _titles(value) for _, field, value in sorted(stamped)}


class RedisSites:
    """Read and learn sites' lines in the index's Redis (a cache of recent sites per process)."""

    def __init__(self, client: Any, name: str) -> None:
        self.client = client
        self.name = name
        self._learn = client.register_script(LUA_LEARN)
        self._cache: OrderedDict[str, tuple[float, dict[int, tuple[int, ...]]]] = OrderedDict()
        self._record_host = client.register_script(LUA_RECORD_HOST)
        self.hosts_key = "{" + name + "}:hosts"
        #: Host -> (when read, the host it mirrors): a verdict is final, None is read again
        #: after REFRESH seconds.
        self._mirrors: OrderedDict[str, tuple[float, str | None]] = OrderedDict()

    def key(self, host: str) -> str:
        """The Redis key of a site."""
        return f"{self.name}:lines:{{{xxh3_64_hexdigest(host.encode('utf-8', 'surrogatepass'))}}}"

    async def _book(self, host: str) -> dict[int, tuple[int, ...]]:
        cached = self._cache.get(host)
        if (
            cached is not None
            and time.monotonic() - cached[0] < REFRESH
            and not SiteTemplate(cached[1]).young()
        ):
            self._cache.move_to_end(host)
            return cached[1]
        try:
            raw = await self.client.hgetall(self.key(host))
        except Exception as exc:  # the template is an aid: without it the page is judged whole
            logger.debug("nearDupe: site %s not read from Redis: %s", host, exc)
            return cached[1] if cached is not None else {}
        book = _book(raw)
        self._cache[host] = (time.monotonic(), book)
        while len(self._cache) > CACHED_SITES:
            self._cache.popitem(last=False)
        return book

    async def template(self, host: str) -> SiteTemplate:
        """What the site's pages taught every crawler (as of at most REFRESH seconds ago, or
        now while the site is young)."""
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

    async def record_host(self, host: str, copy_of: str | None, rule: MirrorRule) -> None:
        """Count a decided page of ``host`` in the index's hosts hash (one script)."""
        if not host:
            return
        args = [
            host.encode("utf-8", "surrogatepass"),
            (copy_of or "").encode("utf-8", "surrogatepass"),
        ]
        verdict = await self._record_host([self.hosts_key], [*args, rule.pages, rule.needed])
        if verdict:
            self._remember(host, verdict.decode("utf-8", "surrogatepass"))

    async def mirror_of(self, host: str) -> str | None:
        """The host ``host`` mirrors (a verdict is read once, a None at most every REFRESH s)."""
        known = self._mirrors.get(host)
        if known is not None and (known[1] is not None or time.monotonic() - known[0] < REFRESH):
            return known[1]
        raw = await self.client.hget(self.hosts_key, b"m:" + host.encode("utf-8", "surrogatepass"))
        verdict = raw.decode("utf-8", "surrogatepass") if raw is not None else None
        self._remember(host, verdict)
        return verdict

    def _remember(self, host: str, verdict: str | None) -> None:
        known = self._mirrors.get(host)
        if verdict is None and known is not None and known[1] is not None:
            return  # a read sent before this crawler learned the verdict: a verdict is final
        self._mirrors[host] = (time.monotonic(), verdict)
        self._mirrors.move_to_end(host)
        while len(self._mirrors) > CACHED_SITES:
            self._mirrors.popitem(last=False)

    async def mirrors(self) -> dict[str, str]:
        """Every mirror host of the index -> the host it mirrors."""
        found = {}
        async for field, value in self.client.hscan_iter(self.hosts_key, match=b"m:*"):
            found[field[2:].decode("utf-8", "surrogatepass")] = value.decode(
                "utf-8", "surrogatepass"
            )
        return found
