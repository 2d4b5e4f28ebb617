"""A real HTTP server on 127.0.0.1 serving an in-memory site, for crawls through the engine."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType


@dataclass(frozen=True)
class Page:
    """One resource: body bytes, Content-Type header (None: send none) and status."""

    body: bytes
    content_type: str | None = "text/html; charset=utf-8"
    status: int = 200


class MockServer:
    """Serves ``pages`` (path -> Page) on a free port of ``host`` (a loopback address) in a
    background thread.

    ``delay`` seconds are waited before each answer, to make a crawl last long enough for a
    test to interfere with it; with a ``gate``, every answer but the home page's (/) waits
    until the gate is set (at most 60 s), to hold a crawl open as long as the test needs.
    """

    def __init__(
        self,
        pages: dict[str, Page],
        delay: float = 0.0,
        host: str = "127.0.0.1",
        gate: threading.Event | None = None,
    ) -> None:
        self.pages = pages
        site = pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                time.sleep(delay)
                if gate is not None and self.path != "/":
                    gate.wait(60)
                page = site.get(self.path.split("?")[0])
                if page is None:
                    page = Page(b"<html><body><p>not found</p></body></html>", status=404)
                self.send_response(page.status)
                if page.content_type is not None:
                    self.send_header("Content-Type", page.content_type)
                self.send_header("Content-Length", str(len(page.body)))
                self.end_headers()
                self.wfile.write(page.body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> MockServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
