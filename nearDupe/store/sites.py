"""What a store remembers of each site's lines (see nearDupe/sitetemplate.py), within bounds.

Per site (host and template, sitetemplate.site_memory), line hash -> the identities of up to
LINE_TITLES pages that had it, least recently seen first, for at most SITE_LINES lines: past
that, lines seen on one page only go first, then any, the least recently seen first (Redis
forgets the same ones, store/redis_sites.py), so a site costs at most SITE_LINES x 16 B on
disk (a host at most HOST_TEMPLATES sites; a crawl of 10^5 hosts of one template: at most
0.4 GiB, far less when sites are small) and the embedded index keeps at most CACHED_SITES of
them in memory.

Per host, too, a row counting its first decided pages for the mirror rule (nearDupe/mirrors.py):
how many, how many copied each other host (emptied once decided), and the host it mirrors.
"""

from __future__ import annotations

import json
import sqlite3
import struct
from collections import OrderedDict
from collections.abc import Iterable

from nearDupe.mirrors import HostCount, MirrorRule, counted
from nearDupe.sitetemplate import LINE_TITLES, SITE_LINES, SiteTemplate
from nearDupe.store.base import storable_key

#: Sites whose lines the embedded index keeps in memory (the rest are read back on demand):
#: at most ~100 B per line in Python, so ~25 MB.
CACHED_SITES = 1000

#: One line as stored: the line hash, then LINE_TITLES page identities (0: none).
_LINE = struct.Struct(f"<Q{LINE_TITLES}I")


def learned(
    book: dict[int, tuple[int, ...]], identity: int, lines: Iterable[int]
) -> dict[int, tuple[int, ...]]:
    """``book`` after a page of ``identity`` with ``lines`` (each line moved to the end, its
    identities capped at LINE_TITLES), then cut to SITE_LINES by :func:`evict`."""
    for line in lines:
        titles = book.pop(line, ())
        if identity not in titles and len(titles) < LINE_TITLES:
            titles = (*titles, identity)
        book[line] = titles
    return evict(book)


def evict(book: dict[int, tuple[int, ...]]) -> dict[int, tuple[int, ...]]:
    """At most SITE_LINES lines: those seen on one page only go first, then any, the least
    recently seen first."""
    excess = len(book) - SITE_LINES
    if excess <= 0:
        return book
    once = [line for line, titles in book.items() if len(titles) < 2][:excess]
    for line in once:
        del book[line]
    for line in list(book)[: len(book) - SITE_LINES]:
        del book[line]
    return book


def pack(book: dict[int, tuple[int, ...]]) -> bytes:
    """A site's lines as one blob (20 B a line)."""
    pad = (0,) * LINE_TITLES
    return b"".join(
        _LINE.pack(line, *(titles + pad)[:LINE_TITLES]) for line, titles in book.items()
    )


def unpack(blob: bytes) -> dict[int, tuple[int, ...]]:
    """The inverse of :func:`pack` (a blob of another size is ignored: the site is relearned)."""
    if len(blob) % _LINE.size:
        return {}
    return {line: tuple(t for t in titles if t) for line, *titles in _LINE.iter_unpack(blob)}


def read_mirrors(db: sqlite3.Connection) -> dict[str, str]:
    """Mirror host -> the host it mirrors, as stored in an embedded index's database."""
    try:
        rows = db.execute("SELECT host, mirror_of FROM hosts WHERE mirror_of IS NOT NULL")
        return dict(rows.fetchall())
    except sqlite3.OperationalError:  # an index written before hosts were counted
        return {}


def read_site(db: sqlite3.Connection, host: str) -> dict[int, tuple[int, ...]]:
    """A site's lines as stored in an embedded index's database (empty if it has none)."""
    row = db.execute("SELECT lines FROM sites WHERE host = ?", (storable_key(host),)).fetchone()
    return unpack(row[0]) if row else {}


class SqliteSites:
    """Sites' lines in the embedded index's database, the recent ones cached in memory."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        db.execute("CREATE TABLE IF NOT EXISTS sites (host TEXT PRIMARY KEY, lines BLOB NOT NULL)")
        self._cache: OrderedDict[str, dict[int, tuple[int, ...]]] = OrderedDict()
        #: Sites learned from since the last take, and those taken for a commit not done yet:
        #: neither leaves the cache until it is on disk.
        self._dirty: set[str] = set()
        self._committing: set[str] = set()
        db.execute(
            "CREATE TABLE IF NOT EXISTS hosts (host TEXT PRIMARY KEY, pages INTEGER NOT NULL,"
            " copies TEXT NOT NULL, mirror_of TEXT)"
        )
        #: Mirror host -> the host it mirrors (every one: they are few).
        self.mirrors = read_mirrors(db)
        self._hosts: dict[str, HostCount] = {}  # hosts counted since the last take
        self._committing_hosts: dict[str, HostCount] = {}

    def _book(self, host: str) -> dict[int, tuple[int, ...]]:
        book = self._cache.get(host)
        if book is None:
            book = self._cache[host] = read_site(self._db, host)
            excess = len(self._cache) - CACHED_SITES
            if excess > 0:  # let go of the oldest saved ones; unsaved ones wait for the disk
                keep = self._dirty | self._committing | {host}
                for old in [h for h in self._cache if h not in keep][:excess]:
                    del self._cache[old]
        self._cache.move_to_end(host)
        return book

    def template(self, host: str) -> SiteTemplate:
        """What the site's pages taught so far."""
        return SiteTemplate(dict(self._book(storable_key(host)))) if host else SiteTemplate()

    def learn(self, host: str, identity: int, lines: Iterable[int]) -> None:
        """Count a decided page's lines (durable at the next :meth:`write`)."""
        if host and identity:
            host = storable_key(host)  # a host from the web may hold a lone surrogate
            self._cache[host] = learned(self._book(host), identity, lines)
            self._dirty.add(host)

    def record_host(self, host: str, copy_of: str | None, rule: MirrorRule) -> str | None:
        """Count a decided page of ``host`` (durable at the next :meth:`write`); its verdict."""
        if not host:
            return None
        host = storable_key(host)
        count = self._hosts.get(host) or self._committing_hosts.get(host) or self._read_host(host)
        if not count.decided(rule):
            count = counted(count, storable_key(copy_of) if copy_of else None, rule)
            self._hosts[host] = count
            if count.mirror_of is not None:
                self.mirrors[host] = count.mirror_of
        return count.mirror_of

    def _read_host(self, host: str) -> HostCount:
        row = self._db.execute(
            "SELECT pages, copies, mirror_of FROM hosts WHERE host = ?", (host,)
        ).fetchone()
        return HostCount(row[0], json.loads(row[1]), row[2]) if row else HostCount()

    def unsaved(self) -> bool:
        """Whether sites learned from or hosts counted wait for a commit."""
        return bool(self._dirty or self._hosts)

    def take(self) -> list[tuple[str, tuple[object, ...]]]:
        """The writes of the sites learned from and hosts counted since the last take, for
        the caller's commit; they are read from memory until :meth:`done` says it is over."""
        self._committing |= self._dirty
        writes: list[tuple[str, tuple[object, ...]]] = [
            (_SITE_ROW, (host, pack(self._cache[host]))) for host in self._dirty
        ]
        writes += [
            (_HOST_ROW, (h, c.pages, json.dumps(c.copies), c.mirror_of))
            for h, c in self._hosts.items()
        ]
        self._committing_hosts.update(self._hosts)
        self._dirty, self._hosts = set(), {}
        return writes

    def done(self, committed: bool) -> None:
        """The commit of the taken writes is over: on disk, or to be taken again."""
        if not committed:
            self._dirty |= self._committing
            self._hosts = {**self._committing_hosts, **self._hosts}
        self._committing, self._committing_hosts = set(), {}


_SITE_ROW = "INSERT OR REPLACE INTO sites (host, lines) VALUES (?, ?)"
_HOST_ROW = "INSERT OR REPLACE INTO hosts (host, pages, copies, mirror_of) VALUES (?, ?, ?, ?)"
