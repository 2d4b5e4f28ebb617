"""``scrapy neardupe check``: fingerprint one page (URL or file) and list its near-duplicates."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from scrapy.exceptions import UsageError
from scrapy.http import HtmlResponse, Response
from scrapy.responsetypes import responsetypes

from nearDupe._settings import Config
from nearDupe.analysis import (
    Analysis,
    analyze_extracted,
    analyze_text,
    detect_encoding,
    language_of,
)
from nearDupe.commands._index import IndexView
from nearDupe.decoding import decode, redecode, skip_reason
from nearDupe.report import iso_time
from nearDupe.simhash import to_hex
from nearDupe.text import extract_main_text


def load_page(target: str, user_agent: str, timeout: float = 30.0) -> Response:
    """A URL fetched (urllib) or a local file read, as the Scrapy response type the crawl gets
    (HtmlResponse, TextResponse or Response, by its headers and name), any HTTP status."""
    if target.startswith(("http://", "https://")):
        request = urllib.request.Request(target, headers={"User-Agent": user_agent})
        try:
            reply = urllib.request.urlopen(request, timeout=timeout)
        except urllib.error.HTTPError as error:
            reply = error  # a 404 or 500 is an answer: the crawl skips it as "status"
        except OSError as exc:
            raise UsageError(f"cannot fetch {target}: {exc}", print_help=False) from None
        with reply:
            headers = dict(reply.headers.items())
            url, body = reply.geturl(), reply.read()
        cls = responsetypes.from_args(headers=headers, url=url, body=body)
        return cls(url, status=reply.status, headers=headers, body=body)
    path = Path(target.removeprefix("file://"))
    if not path.is_file():
        raise UsageError(
            f"{target} is neither an http(s) URL nor a readable file", print_help=False
        )
    url, body = path.resolve().as_uri(), path.read_bytes()
    return responsetypes.from_args(url=url, filename=str(path), body=body)(url, body=body)


def analyze_response(
    response: Response, config: Config, view: IndexView, text: bool
) -> tuple[str, Analysis]:
    """The page's main text and Analysis (with the index's own feature settings and what it
    learned of the page's site), or the crawl's skip."""
    if text:
        plain = response.body.decode("utf-8", "replace")
        return plain, analyze_text(plain, config.min_text_length, view.features)
    reason = skip_reason(response)
    if reason is not None:
        return "", Analysis(None, reason)
    assert isinstance(response, HtmlResponse)
    decoded = decode(response) or redecode(response, detect_encoding(response.body))
    if decoded.skip_reason:
        return "", Analysis(None, decoded.skip_reason)
    main = extract_main_text(decoded.html, max_chars=config.max_html_chars)
    site = view.site_template(response.url, decoded.html)
    return main, analyze_extracted(
        main,
        decoded.html,
        response.url,
        config.min_text_length,
        view.features,
        site,
        config.max_html_chars,
    )


def check_page(
    target: str,
    response: Response,
    text: str,
    analysis: Analysis,
    view: IndexView,
    radius: int,
) -> dict[str, Any]:
    """The verdict on one page and every stored page within radius of it."""
    result: dict[str, Any] = {
        "page": target,
        "url": response.url,
        "status": response.status,
        "text_length": len(text.strip()),
        "language": language_of(text),
        "k": view.k,
        "confirm_k": view.header.confirm_k,
        "sentence_share": view.header.sentence_share,
        "radius": radius,
    }
    version = view.version(response.url)
    result["stored"] = version is not None
    result["first_stored"] = iso_time(version.first_stored) if version else None
    result["last_changed"] = iso_time(version.last_changed) if version else None
    if analysis.fingerprint is None:
        return {**result, "verdict": "skipped", "reason": analysis.skip_reason, "matches": []}
    keys = view.keys_by_fp()
    matches: list[dict[str, Any]] = [
        {
            "distance": d,
            "url": key,
            "fingerprint": to_hex(fp),
            "signature_distance": view.signature_distance(fp, analysis.signature),
            "duplicate": d <= view.k and view.confirms(fp, analysis.signature, d),
        }
        for fp, d in view.near(analysis.fingerprint, radius)
        for key in keys.get(fp, [])
    ]
    matches += [
        {
            "distance": None,
            "url": s.key,
            "fingerprint": to_hex(s.fingerprint),
            "signature_distance": None,
            "shared": round(s.of_both, 3),
            "duplicate": s.is_copy(view.header.sentence_share),
        }
        for s in view.shared_sentences(analysis.sentences, analysis.fingerprint)
    ]
    verdict = "dropped" if any(m["duplicate"] for m in matches) else "kept"
    return {
        **result,
        "fingerprint": to_hex(analysis.fingerprint),
        "verdict": verdict,
        "matches": matches,
    }


def format_check(result: dict[str, Any]) -> str:
    """The text ``check`` prints."""
    lines = [f"page          {result['page']}"]
    if result["url"] != result["page"]:
        lines.append(f"url           {result['url']}")
    lines.append(f"main text     {result['text_length']:,} characters ({result['language']})")
    if result["stored"]:
        changed = result["last_changed"] or "never"
        lines.append(f"url stored    since {result['first_stored']}, last changed {changed}")
    if result["verdict"] == "skipped":
        reason = result["reason"]
        if reason == "status":
            reason = f"HTTP status {result['status']}"
        lines.append(f"verdict       SKIPPED: not fingerprinted ({reason})")
        return "\n".join(lines)
    lines.append(f"fingerprint   {result['fingerprint']}")
    matches = result["matches"]
    if result["verdict"] == "dropped":
        first = next(m for m in matches if m["duplicate"])
        why = (
            f"distance {first['distance']} <= k={result['k']}"
            if first["distance"] is not None
            else f"shares {first['shared']:.0%} of the sentences of both pages"
        )
        lines.append(f"verdict       DROPPED: near-duplicate of {first['url']} ({why})")
    elif any(m["distance"] is not None and m["distance"] <= result["k"] for m in matches):
        lines.append(
            f"verdict       KEPT: the stored pages within k={result['k']} differ in word order "
            f"(fingerprint and signature distances add up to more than {result['confirm_k']})"
        )
    elif any(m["distance"] is None for m in matches):
        lines.append(
            f"verdict       KEPT: no stored page within k={result['k']}, and the pages sharing "
            f"its sentences share too little (a copy shares {result['sentence_share']:.0%} of "
            "both pages' sentences, twice that for one sentence, and half of one page)"
        )
    else:
        lines.append(f"verdict       KEPT: no stored page within k={result['k']}")
    lines += [
        "",
        f"stored pages within {result['radius']} bits or sharing sentences ({len(matches)}):",
    ]
    lines += ["  bits  signature  verdict    fingerprint       url"] if matches else []
    lines += [
        f"  {_bits(m['distance']):>4}  {_bits(m['signature_distance']):>9}  "
        f"{'DUPLICATE' if m['duplicate'] else 'near     '}  {m['fingerprint']}  {m['url']}"
        + ("" if m["distance"] is not None else f"  (shares {m['shared']:.0%} of the sentences)")
        for m in matches
    ] or ["  (none)"]
    return "\n".join(lines)


def _bits(distance: int | None) -> str:
    return "-" if distance is None else str(distance)
