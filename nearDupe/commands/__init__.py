"""``scrapy neardupe``: inspect and explain a nearDupe index (registered as a Scrapy command)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from nearDupe._settings import Config
from nearDupe.errors import NearDupeError
from nearDupe.logstats import plural
from nearDupe.report import ReportWriter, read_report

#: How the commands name the drops an index remembers (when no report is given).
_INDEX_DROPS = "drops kept in the index"

SUBCOMMANDS = {
    "stats": "size, design, settings, memory and distance histograms of the index",
    "check": "fingerprint a URL or HTML file and list its near-duplicates in the index",
    "clusters": "write groups of near-duplicate pages as JSON lines, biggest first",
    "report": "write a self-contained HTML report with plots",
    "import": "build or extend the index from a crawl's JSON-lines output",
}


#: Where the ``-s`` options given after the subcommand are collected.
_SET_AFTER = "set_after_subcommand"


def _json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")


def _k(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--k", type=int, help="distance for duplicates (the index's k by default)")


def _radius(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--radius", type=int, help="how far to look for neighbours")


def _decisions(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--report",
        metavar="FILE",
        help="a NEARDUPE_REPORT decisions file (NEARDUPE_REPORT by default, if it exists)",
    )


def _output(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("-o", "--output", metavar="FILE", help=what)


def _stats_options(parser: argparse.ArgumentParser) -> None:
    _json(parser)
    _k(parser)
    _radius(parser)
    _decisions(parser)


def _check_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="URL_OR_FILE", help="a URL, or an HTML file")
    _json(parser)
    _radius(parser)
    parser.add_argument("--text", action="store_true", help="read the file as plain text")


def _clusters_options(parser: argparse.ArgumentParser) -> None:
    _k(parser)
    _decisions(parser)
    _output(parser, "the JSON-lines file to write (stdout by default)")
    parser.add_argument("--min-size", type=int, default=2, help="smallest cluster listed")


def _report_options(parser: argparse.ArgumentParser) -> None:
    _k(parser)
    _decisions(parser)
    _output(parser, "the HTML file to write (report.html by default)")
    parser.add_argument("--top", type=int, default=20, help="clusters the report shows")


def _import_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="FEED.jsonl", help="a crawl's JSON-lines items")
    _json(parser)
    _output(parser, "also write the import's decisions there, as JSON lines")
    parser.add_argument("--url-field", default="url", help="the field the URL is read from")
    parser.add_argument("--text-field", default="text", help="the field the text is read from")
    parser.add_argument(
        "--workers", type=int, help="fingerprinting processes (NEARDUPE_WORKERS by default)"
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar (by default when on a terminal)",
    )


#: Each subcommand's options.
_OPTIONS = {
    "stats": _stats_options,
    "check": _check_options,
    "clusters": _clusters_options,
    "report": _report_options,
    "import": _import_options,
}


class NearDupeCommand(ScrapyCommand):
    """The ``scrapy neardupe SUBCOMMAND`` command."""

    requires_project = False
    requires_crawler_process = False
    default_settings = {"LOG_LEVEL": "WARNING"}  # noqa: RUF012 - Scrapy's own attribute

    def syntax(self) -> str:
        """Usage after ``scrapy neardupe``."""
        return "{stats|check URL_OR_FILE|clusters|report|import FEED.jsonl} [options]"

    def short_desc(self) -> str:
        """One line for ``scrapy -h``."""
        return "Inspect the nearDupe index: stats, check, clusters, report, import"

    def long_desc(self) -> str:
        """The help text."""
        return (
            "Inspect and explain the nearDupe index named by the project's NEARDUPE_* settings "
            "(override with -s NEARDUPE_INDEX=PATH). 'scrapy neardupe SUBCOMMAND -h' lists a "
            "subcommand's options."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        """Scrapy's options, and one sub-parser per subcommand with its own options."""
        super().add_options(parser)
        scrapy_options = self._scrapy_options()
        subcommands = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
        for name, summary in SUBCOMMANDS.items():
            sub = subcommands.add_parser(
                name,
                prog=f"scrapy neardupe {name}",
                help=summary,
                description=summary,
                parents=[scrapy_options],
            )
            _OPTIONS[name](sub)

    def _scrapy_options(self) -> argparse.ArgumentParser:
        """Scrapy's own options (``-s``, ``-L``, ...), also accepted after the subcommand: they
        leave what was given before it as it is, and ``-s`` adds to it."""
        options = argparse.ArgumentParser(add_help=False)
        super().add_options(options)
        for action in options._actions:
            action.default = argparse.SUPPRESS
            if action.dest == "set":
                action.dest = _SET_AFTER
        return options

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        """Scrapy's options, with the ``-s`` given after the subcommand."""
        opts.set = [*opts.set, *vars(opts).pop(_SET_AFTER, [])]
        super().process_options(args, opts)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        """Dispatch to the subcommand."""
        if opts.subcommand is None:
            raise UsageError(f"choose a subcommand: {', '.join(SUBCOMMANDS)}", print_help=True)
        if args:
            raise UsageError(f"{opts.subcommand}: unrecognised arguments: {' '.join(args)}")
        config = self._config()
        operands = [opts.target] if "target" in opts else []
        try:
            getattr(self, f"_{opts.subcommand}")(config, opts, *operands)
        except NearDupeError as exc:
            print(f"nearDupe: {exc}", file=sys.stderr)
            self.exitcode = 1
        except BrokenPipeError:
            # The reader stopped early (`stats | head -2`): not an error. Point stdout at
            # /dev/null so the interpreter's final flush does not raise again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())

    def _config(self) -> Config:
        """The project's NEARDUPE_* settings (inspection works even with NEARDUPE_ENABLED off)."""
        assert self.settings is not None
        settings = self.settings.copy()
        settings.set("NEARDUPE_ENABLED", True, priority="cmdline")
        try:
            return Config.from_settings(settings)
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    # -- subcommands ---------------------------------------------------------------------

    def _stats(self, config: Config, opts: argparse.Namespace) -> None:
        from nearDupe.commands.stats import format_stats, index_stats

        view = self._view(config)
        radius = opts.radius if opts.radius is not None else self._k(view, opts) + 3
        stats = index_stats(view, radius, self._decisions(config, opts, view))
        print(json.dumps(stats, indent=2) if opts.json else format_stats(stats))

    def _check(self, config: Config, opts: argparse.Namespace, target: str) -> None:
        from nearDupe.commands.check import analyze_response, check_page, format_check, load_page

        view = self._view(config)
        radius = opts.radius if opts.radius is not None else max(view.design.k, view.k)
        assert self.settings is not None
        response = load_page(target, self.settings.get("USER_AGENT") or "nearDupe")
        text, analysis = analyze_response(response, config, view, opts.text)
        result = check_page(target, response, text, analysis, view, radius)
        print(json.dumps(result, indent=2) if opts.json else format_check(result))

    def _clusters(self, config: Config, opts: argparse.Namespace) -> None:
        from nearDupe.commands.clusters import find_clusters, pages_of

        view = self._view(config)
        pages = pages_of(view, self._decisions(config, opts, view))
        clusters = find_clusters(
            pages, self._k(view, opts), max(1, opts.min_size), view.header.confirm_k
        )
        lines = "".join(json.dumps(c.to_json(), ensure_ascii=False) + "\n" for c in clusters)
        if opts.output and opts.output != "-":
            Path(opts.output).write_text(lines, encoding="utf-8")
            print(
                f"{len(clusters)} clusters of {sum(c.size for c in clusters)} pages "
                f"written to {opts.output}",
                file=sys.stderr,
            )
        else:
            sys.stdout.write(lines)

    def _report(self, config: Config, opts: argparse.Namespace) -> None:
        from nearDupe.commands.html_report import build_report

        view = self._view(config)
        decisions = self._decisions(config, opts, view)
        source = self._decisions_source(config, opts, view)
        html = build_report(view, decisions, k=self._k(view, opts), top=opts.top, source=source)
        output = Path(opts.output or "report.html")
        output.write_text(html, encoding="utf-8")
        print(f"report written to {output}", file=sys.stderr)

    def _import(self, config: Config, opts: argparse.Namespace, feed_name: str) -> None:
        from nearDupe.commands import importer

        feed = Path(feed_name)
        if not feed.is_file():
            raise UsageError(f"no feed file {feed}")
        total = importer.count_items(feed)
        workers = opts.workers
        if workers is None:
            small = total is not None and total < importer.POOL_FROM
            workers = 0 if small else config.workers
        items = importer.read_feed(feed, opts.url_field, opts.text_field)
        progress = importer.ProgressBar(total, sys.stderr, importer.progress_wanted(opts.progress))
        writer = ReportWriter(opts.output) if opts.output else None
        store = importer.open_writable(config)

        async def run() -> tuple[Any, int]:
            try:
                with importer.analyses(items, config, workers) as results:
                    counts = await importer.import_feed(store, results, feed, progress, writer)
                return counts, await store.count()
            finally:
                await store.close()

        try:
            counts, size = asyncio.run(run())
        finally:
            progress.close()
            if writer is not None:
                writer.close()
        skipped = {k.split("/", 1)[1]: v for k, v in sorted(counts.items()) if "/" in k}
        summary = {
            "feed": str(feed),
            "index": config.public_index,
            "items": counts["kept"] + counts["dropped"] + counts["skipped"],
            "kept": counts["kept"],
            "dropped": counts["dropped"],
            "skipped": counts["skipped"],
            "skipped_by_reason": skipped,
            "index_size": size,
        }
        if opts.json:
            print(json.dumps(summary, indent=2))
            return
        reasons = f" ({', '.join(f'{r} {n}' for r, n in skipped.items())})" if skipped else ""
        print(
            f"imported {plural(summary['items'], 'item')} from {feed}: {summary['kept']} kept, "
            f"{summary['dropped']} dropped, {summary['skipped']} skipped{reasons}; "
            f"index {config.public_index} now holds {plural(size, 'page')}"
        )

    # -- helpers -------------------------------------------------------------------------

    @staticmethod
    def _view(config: Config) -> Any:
        from nearDupe.commands._index import IndexView

        return IndexView.open(config)

    @staticmethod
    def _k(view: Any, opts: argparse.Namespace) -> int:
        return view.k if opts.k is None else opts.k

    @staticmethod
    def _decisions_source(config: Config, opts: argparse.Namespace, view: Any) -> str | None:
        """The decisions report to read, or "drops kept in the index", or None."""
        path = opts.report or config.report
        if path is not None and (opts.report or Path(path).is_file()):
            return str(path)
        return _INDEX_DROPS if view.drops else None

    def _decisions(
        self, config: Config, opts: argparse.Namespace, view: Any
    ) -> list[dict[str, Any]] | None:
        """A decisions report's lines (--report or NEARDUPE_REPORT), else what the index
        remembers (its pages kept and its last drops), else None."""
        source = self._decisions_source(config, opts, view)
        if source == _INDEX_DROPS:
            return view.decisions()
        if source is None:
            return None
        try:
            return read_report(source)
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read decisions report {source}: {exc}") from None
