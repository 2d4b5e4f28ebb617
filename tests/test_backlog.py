"""The pending file of kept pages, shared by every crawler of an index: crawler processes
saving to it and taking from it at once lose no page and take none twice."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from pathlib import Path
from typing import Any

from nearDupe.backlog import Backlog, Page


def _page(crawler: int, i: int) -> Page:
    return Page(crawler << 40 | i, f"http://site/{crawler}/{i}", None, ((i, 40),))


def _save_at_once(path: str, crawler: int, pages: int, start: Any) -> None:
    """A crawler closing with ``pages`` kept pages in memory, at the moment the others do."""
    backlog = Backlog(Path(path))
    for i in range(pages):
        backlog.append(_page(crawler, i))
    start.wait()
    assert backlog.save()


def _save_in_rounds(path: str, crawler: int, rounds: int, pages: int, start: Any) -> None:
    """A crawler after another (a crawl per round), each keeping ``pages`` and spilling past
    its small memory bound."""
    start.wait()
    for r in range(rounds):
        backlog = Backlog(Path(path), limit=pages // 2)
        for i in range(pages):
            backlog.append(_page(crawler, r * pages + i))
        assert backlog.save()


def _take_until(path: str, out: str, start: Any, stop: Any) -> None:
    """A crawler reaching the index: it loads what earlier crawls left and records it."""
    taken = []
    start.wait()
    while True:
        last = stop.is_set()
        backlog = Backlog(Path(path), limit=50)
        backlog.load()
        while (page := backlog.first()) is not None:
            taken.append(page[1])
            backlog.pop()
        if last:
            break
    Path(out).write_text("".join(url + "\n" for url in taken))


def _run(processes: list[multiprocessing.process.BaseProcess]) -> None:
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
        assert process.exitcode == 0, process


def test_crawlers_saving_at_once_keep_every_page(tmp_path: Path) -> None:
    """Two crawlers close together, each with 10,000 pages waiting: the file holds all
    20,000, once each, and a later crawl takes them all."""
    ctx = multiprocessing.get_context("spawn")
    path, crawlers, pages = tmp_path / "pending.jsonl", 2, 10_000
    start = ctx.Barrier(crawlers)
    _run(
        [
            ctx.Process(target=_save_at_once, args=(str(path), c, pages, start))
            for c in range(crawlers)
        ]
    )
    later = Backlog(path)
    assert later.load() == crawlers * pages
    urls = []
    while (page := later.first()) is not None:
        urls.append(page[1])
        later.pop()
    assert sorted(urls) == sorted(_page(c, i)[1] for c in range(crawlers) for i in range(pages))
    assert not path.exists()


def test_crawlers_taking_while_others_save_take_each_page_once(tmp_path: Path) -> None:
    """A crawler saves rounds of pages while two others keep loading and taking them:
    every page saved is taken exactly once, by one of them or by the crawl after."""
    ctx = multiprocessing.get_context("spawn")
    path, rounds, pages = tmp_path / "pending.jsonl", 30, 200
    start, stop = ctx.Barrier(3), ctx.Event()
    savers = [ctx.Process(target=_save_in_rounds, args=(str(path), 0, rounds, pages, start))]
    outs = [tmp_path / f"taken-{t}.txt" for t in range(2)]
    takers = [
        ctx.Process(target=_take_until, args=(str(path), str(out), start, stop)) for out in outs
    ]
    for process in [*savers, *takers]:
        process.start()
    for process in savers:
        process.join(60)
        assert process.exitcode == 0
    stop.set()
    for process in takers:
        process.join(60)
        assert process.exitcode == 0
    taken = Counter(url for out in outs for url in out.read_text().splitlines())
    after = Backlog(path)
    after.load()
    while (page := after.first()) is not None:
        taken[page[1]] += 1
        after.pop()
    assert sum(n for n in taken.values() if n > 1) == 0, "pages taken twice"
    expected = {_page(0, i)[1] for i in range(rounds * pages)}
    assert set(taken) == expected, f"{len(expected - set(taken))} pages lost"
