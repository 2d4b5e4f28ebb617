"""A local HTTP server for the demo news network, rendered from memory."""

from __future__ import annotations

import argparse
import functools
import json
import struct
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit

from . import render
from .content import PRINT_VIEWS, SITES, SITES_BY_KEY, placements


@dataclass(frozen=True)
class Resource:
    """One response body with its Content-Type header."""

    content_type: str
    body: bytes


def _png(size: int = 16) -> bytes:
    """A small striped RGB PNG logo."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    blue, gold = b"\x1f\x4e\x79", b"\xf2\xc1\x4e"
    rows = b"".join(b"\x00" + (blue if (y // 4) % 2 else gold) * size for y in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _pdf() -> bytes:
    """A tiny one-page PDF-like document."""
    return (
        b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
        b"2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n"
        b"3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] >> endobj\n"
        b"trailer << /Root 1 0 R >>\n%%EOF\n"
    )


def _html(text: str, charset: str = "utf-8") -> Resource:
    """An HTML resource encoded in ``charset``."""
    return Resource(
        f"text/html; charset={charset}", text.encode(charset, errors="xmlcharrefreplace")
    )


def build_routes(edition: int = 1) -> dict[str, Resource]:
    """Every URL path of the network and its response, in its first or second edition
    (spiders/demosite/edition.py)."""
    routes = {
        "/": _html(render.home_page()),
        "/contact": _html(render.CONTACT_PAGE),
        "/static/logo.png": Resource("image/png", _png()),
        "/static/press-kit.pdf": Resource("application/pdf", _pdf()),
    }
    for site in SITES:
        routes[site.prefix] = _html(render.index_page(site), site.charset)
    feed = []
    for page in placements():
        routes[page.path] = _html(render.article_page(page), page.site.charset)
        feed.append({"site": page.site.name, "title": page.article.title, "url": page.path})
    for key, slug in PRINT_VIEWS:
        page = next(p for p in placements() if p.site.key == key and p.article.slug == slug)
        routes[f"/print/{key}/{slug}"] = _html(render.print_page(page), SITES_BY_KEY[key].charset)
    body = json.dumps({"articles": feed}, ensure_ascii=False, indent=1).encode("utf-8")
    routes["/api/articles.json"] = Resource("application/json", body)
    if edition == 2:
        from .edition import pages

        routes.update({path: _html(html, charset) for path, (html, charset) in pages().items()})
    return routes


class _Handler(BaseHTTPRequestHandler):
    """Serves the prebuilt routes; 404 for anything else."""

    server: _Server

    def do_GET(self) -> None:
        self._respond(with_body=True)

    def do_HEAD(self) -> None:
        self._respond(with_body=False)

    def _respond(self, with_body: bool) -> None:
        resource = self.server.routes.get(urlsplit(self.path).path)
        if resource is None:
            resource = Resource("text/plain; charset=utf-8", b"not found\n")
            self.send_response(404)
        else:
            self.send_response(200)
        self.send_header("Content-Type", resource.content_type)
        self.send_header("Content-Length", str(len(resource.body)))
        self.end_headers()
        if with_body:
            self.wfile.write(resource.body)

    def log_message(self, format: str, *args: object) -> None:
        """Keep the demo server quiet."""


class _Server(ThreadingHTTPServer):
    """A threading HTTP server that carries the route table."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], routes: dict[str, Resource]) -> None:
        super().__init__(address, _Handler)
        self.routes = routes


def _address(server: _Server) -> str:
    """The server's base URL, e.g. ``http://127.0.0.1:54321`` (an IPv4 socket: str host)."""
    host, port = server.server_address[:2]
    return f"http://{host!s}:{port}"


class DemoSiteServer:
    """The demo news network (or other ``routes``) on a local port; use as a context manager
    or start()/stop()."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        routes: Callable[[], dict[str, Resource]] = build_routes,
        *,
        any_port_if_taken: bool = False,
    ) -> None:
        self._address = (host, port)
        self._any_port_if_taken = any_port_if_taken
        self._routes = routes
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL without a trailing slash, e.g. ``http://127.0.0.1:54321``."""
        if self._httpd is None:
            raise RuntimeError("server is not running")
        return _address(self._httpd)

    def start(self) -> DemoSiteServer:
        """Bind the port and serve from a background thread."""
        if self._httpd is None:
            try:
                self._httpd = _Server(self._address, self._routes())
            except OSError:
                if not self._any_port_if_taken:
                    raise
                self._httpd = _Server((self._address[0], 0), self._routes())
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, name="demosite", daemon=True
            )
            self._thread.start()
        return self

    def serve_edition(self, edition: int) -> None:
        """Serve the network's first or second edition from now on, on the same port."""
        self._routes = functools.partial(build_routes, edition)
        if self._httpd is not None:
            self._httpd.routes = self._routes()

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            if self._thread is not None:
                self._thread.join()
            self._httpd = self._thread = None

    def __enter__(self) -> DemoSiteServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def main() -> None:
    """Serve the demo site in the foreground until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--edition", type=int, choices=(1, 2), default=1)
    args = parser.parse_args()
    server = _Server((args.host, args.port), build_routes(args.edition))
    print(f"Serving the demo news network at {_address(server)}/ (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
