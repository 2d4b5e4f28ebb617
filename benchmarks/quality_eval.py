"""Near-duplicate detection quality on real pages: precision/recall per language and edit kind.

Run ``python benchmarks/quality_eval.py`` (``--quick`` for a smaller run, ``--seed N`` for
another sampling of the cases). Data is read from
``../shared/data`` next to the repository (override with ``NEARDUPE_DATA``), never copied here.

Every page goes through the real path: ``extract_main_text(html)`` then ``fingerprint``. Cases
(built deterministically by ``_quality_cases.py``): each real article body (aeb English;
zh-extract and thucnews Chinese) is placed into other real pages' templates, with one
syndication edit per case (or all combined). Positives: the same body in two templates.
Negatives: different articles in one template; different thucnews articles of one topic.
Also: Clough-Stevenson answers vs their source, and PAWS-X Chinese pairs (short texts).
"""

from __future__ import annotations

import functools
import multiprocessing
import random
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import arguments, markdown
from _quality_cases import (
    EDITS,
    CaseSet,
    build_cases,
    data_dir,
    load_articles,
    load_clough,
    load_pawsx,
    short_cases,
)

import nearDupe.features as _features
from nearDupe._settings import DEFAULT_CONFIRM_K, DEFAULT_K
from nearDupe.analysis import TINY_TEXT
from nearDupe.features import FeatureSettings
from nearDupe.shorttext import (
    SENTENCE_PAGE_LETTERS,
    Sentences,
    exact_fingerprint,
    normalize,
    sentences,
)
from nearDupe.simhash import fingerprint, fingerprint_and_signature
from nearDupe.store.base import NO_CONFIRMATION, SENTENCE_SHARE, holders_of, sentence_matches
from nearDupe.text import extract_main_text

#: Feature settings compared (name -> settings); the first is the current default.
SETTINGS: dict[str, FeatureSettings] = {
    "words tfidf (current)": FeatureSettings(),
    "words tf": FeatureSettings(weighting="tf"),
    "words tfidf sublinear-tf": FeatureSettings(sublinear_tf=True),
    "words tfidf top-128": FeatureSettings(top_n=128),
    "words tfidf digits": FeatureSettings(digits=True),
    "words tf sublinear-tf": FeatureSettings(weighting="tf", sublinear_tf=True),
    "2-shingles tfidf": FeatureSettings(kind="shingles", shingle=2),
    "2-shingles tf": FeatureSettings(kind="shingles", shingle=2, weighting="tf"),
    "3-shingles tfidf": FeatureSettings(kind="shingles", shingle=3),
    "3-shingles tf": FeatureSettings(kind="shingles", shingle=3, weighting="tf"),
}
CURRENT = "words tfidf (current)"
#: What this evaluation recommends (see docs/quality.md): now the default.
RECOMMENDED = CURRENT
#: The plugin's default k and confirmation distance (fingerprint plus signature distance);
#: the k sweeps cover 0..10.
K = DEFAULT_K
CONFIRM_K = DEFAULT_CONFIRM_K
#: confirm_k that accepts every candidate (no confirmation).
NO_CONFIRM = NO_CONFIRMATION
CURRENT_MIN_LENGTH = 200


@dataclass(frozen=True)
class Policy:
    """How texts under ``min_length`` are decided."""

    name: str
    min_length: int
    short: str  # "skip": never dropped; "exact": equal normalized text; "k<n>": stricter k
    measure: str = "chars"  # "chars" of stripped text, or "letters" after normalize()
    digits: bool = True  # whether the exact hash keeps digits
    #: Share of sentence letters at which pages under SENTENCE_PAGE_LETTERS also match (the
    #: plugin's sentence-level matching), None: off.
    sentence_share: float | None = None

    def length(self, text: str) -> int:
        """The length compared with min_length."""
        return len(normalize(text)) if self.measure == "letters" else len(text.strip())

    def key(self, text: str) -> int:
        """The exact hash of a short text."""
        return exact_fingerprint(text, digits=self.digits)


def _cached_tokenize() -> None:
    """Tokenize each text once across the feature settings (same results, less time)."""
    original = _features.tokenize_lines
    _features.tokenize_lines = functools.lru_cache(maxsize=4)(original)  # type: ignore[assignment]


def _analyze(html: str) -> tuple[str, list[int], int]:
    text = extract_main_text(html)
    fps = [fingerprint(text, s) for s in SETTINGS.values()]
    return text, fps, _signature(text)


def _signature(text: str) -> int:
    """The confirmation signature under the current settings (0 for a text with no words)."""
    result = fingerprint_and_signature(text, SETTINGS[CURRENT])
    return 0 if result is None else result[1]


def _fingerprints(text: str) -> list[int]:
    return [fingerprint(text, s) for s in SETTINGS.values()]


def run_pool(func: Callable, items: Sequence, workers: int) -> list:
    """Map func over items in worker processes (tokenizer cached per process)."""
    if workers <= 1:
        _cached_tokenize()
        return [func(x) for x in items]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(workers, initializer=_cached_tokenize) as pool:
        return pool.map(func, items, chunksize=8)


def hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise Hamming distance of uint64 arrays."""
    return np.bitwise_count(np.bitwise_xor(a, b)).astype(np.int64)


@dataclass
class Scored:
    """Pair distances under one feature setting and the short-text decision inputs."""

    pos: np.ndarray
    neg: np.ndarray
    pos_kind: list[str]
    neg_kind: list[str]
    pos_lang: list[str]
    neg_lang: list[str]


def page_sentences(text: str) -> Sentences:
    """The sentences the plugin keeps for a page (pages under SENTENCE_PAGE_LETTERS)."""
    size = len(normalize(text))
    return sentences(text) if TINY_TEXT <= size < SENTENCE_PAGE_LETTERS else ()


def share_matches(
    a: Sentences, b: Sentences, share: float, fps: tuple[int, int] | None = None
) -> bool:
    """Whether the plugin's sentence rule joins two pages (b stored, a asked about), of
    fingerprints ``fps`` (a's, b's; None: not known)."""
    if not a or not b:
        return False
    a_fp, b_fp = fps or (None, 0)
    return bool(sentence_matches(a, holders_of(b, "b", b_fp), share, a_fp))


def pair_matches(
    dist: np.ndarray, lens: tuple[np.ndarray, np.ndarray], exact: np.ndarray, k: int, p: Policy
) -> np.ndarray:
    """Whether each pair is judged a duplicate under k and the short-text policy."""
    short_a, short_b = lens[0] < p.min_length, lens[1] < p.min_length
    long_pair = ~short_a & ~short_b
    result = long_pair & (dist <= k)
    both_short = short_a & short_b
    if p.short == "exact":
        result |= both_short & exact
    elif p.short.startswith("k"):
        result |= both_short & (dist <= int(p.short[1:]))
    return result


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """Precision, recall, F1."""
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


class Evaluation:
    """Pages analysed once; pairs scored under any feature setting, k and policy."""

    def __init__(
        self, cases: CaseSet, texts: list[str], fps: np.ndarray, sigs: np.ndarray
    ) -> None:
        self.cases = cases
        self.texts = texts
        self.fps = fps  # (pages, settings) uint64
        self.sigs = sigs  # (pages,) confirmation signatures under the current settings
        self.lang = np.array([p.lang for p in cases.pages])
        self.exact = {
            d: np.array([exact_fingerprint(t, digits=d) for t in texts], dtype=np.uint64)
            for d in (True, False)
        }
        self.article = np.array([p.article for p in cases.pages])
        self.sentences = [page_sentences(t) for t in texts]
        # The fingerprint the plugin gives each page: an exact hash below its minimum length.
        short = np.array([len(normalize(t)) < CURRENT_MIN_LENGTH for t in texts], dtype=bool)
        self.plugin_fps = np.where(short, self.exact[True], fps[:, 0]).tolist()
        self._sentence_pairs: dict[float, set[tuple[int, int]]] = {}
        pos = np.array([(a, b) for a, b, _ in cases.positives])
        neg = np.array([(a, b) for a, b, _ in cases.negatives])
        self.pairs = {"pos": pos, "neg": neg}
        self._lengths: dict[str, np.ndarray] = {}
        self.kinds = {
            "pos": np.array([k for *_, k in cases.positives]),
            "neg": np.array([k for *_, k in cases.negatives]),
        }

    def lengths(self, policy: Policy) -> np.ndarray:
        """Each page's length as the policy measures it."""
        if policy.measure not in self._lengths:
            self._lengths[policy.measure] = np.array([policy.length(t) for t in self.texts])
        return self._lengths[policy.measure]

    def sentence_pairs(self, share: float) -> set[tuple[int, int]]:
        """Pairs (a < b) of pages the plugin's sentence rule joins at ``share``."""
        if share not in self._sentence_pairs:
            by_sentence: dict[int, list[int]] = defaultdict(list)
            for i, page in enumerate(self.sentences):
                for h, _ in page:
                    by_sentence[h].append(i)
            candidates = {(a, b) for ps in by_sentence.values() for a in ps for b in ps if a < b}
            self._sentence_pairs[share] = {
                (a, b)
                for a, b in candidates
                if share_matches(
                    self.sentences[a],
                    self.sentences[b],
                    share,
                    (self.plugin_fps[a], self.plugin_fps[b]),
                )
            }
        return self._sentence_pairs[share]

    def judged(
        self, which: str, setting: int, k: int, policy: Policy, confirm_k: int = CONFIRM_K
    ) -> np.ndarray:
        """Duplicate decisions for the positive ("pos") or negative ("neg") pairs.

        Signatures confirm matches of the current settings (setting 0) only: the fingerprint
        distance plus the signature distance is at most confirm_k.
        """
        pairs = self.pairs[which]
        a, b = pairs[:, 0], pairs[:, 1]
        dist = hamming(self.fps[a, setting], self.fps[b, setting])
        lens = self.lengths(policy)
        exact = self.exact[policy.digits]
        result = pair_matches(dist, (lens[a], lens[b]), exact[a] == exact[b], k, policy)
        if setting == 0 and confirm_k < NO_CONFIRM:
            result &= dist + hamming(self.sigs[a], self.sigs[b]) <= confirm_k
        if policy.sentence_share is not None:
            joined = self.sentence_pairs(policy.sentence_share)
            result |= np.array([(min(x, y), max(x, y)) in joined for x, y in pairs], dtype=bool)
        return result

    def distances(self, which: str, setting: int) -> np.ndarray:
        """Hamming distances of the pairs."""
        pairs = self.pairs[which]
        return hamming(self.fps[pairs[:, 0], setting], self.fps[pairs[:, 1], setting])

    def table(
        self, setting: int, k: int, policy: Policy, confirm_k: int = CONFIRM_K
    ) -> dict[str, tuple]:
        """Per language: (P, R, F1, TP, FP, FN)."""
        pos = self.judged("pos", setting, k, policy, confirm_k)
        neg = self.judged("neg", setting, k, policy, confirm_k)
        pos_lang, neg_lang = self.lang[self.pairs["pos"][:, 0]], self.lang[self.pairs["neg"][:, 0]]
        out = {}
        for lang in ("en", "zh"):
            tp = int(pos[pos_lang == lang].sum())
            fn = int((~pos[pos_lang == lang]).sum())
            fp = int(neg[neg_lang == lang].sum())
            out[lang] = (*prf(tp, fp, fn), tp, fp, fn)
        return out

    def all_pair_false_matches(
        self, setting: int, k: int, policy: Policy, confirm_k: int = CONFIRM_K
    ) -> dict[str, tuple]:
        """Per language: (pairs of pages of different articles judged duplicates, all pairs)."""
        out = {}
        lens = self.lengths(policy)
        for lang in ("en", "zh"):
            idx = np.flatnonzero(self.lang == lang)
            fps, arts, ln = self.fps[idx, setting], self.article[idx], lens[idx]
            ex = self.exact[policy.digits][idx]
            joined: dict[int, list[int]] = defaultdict(list)
            if policy.sentence_share is not None:
                for x, y in self.sentence_pairs(policy.sentence_share):
                    if self.lang[x] == lang:
                        joined[int(np.searchsorted(idx, x))].append(int(np.searchsorted(idx, y)))
            bad = total = 0
            for i in range(len(idx) - 1):
                other = slice(i + 1, None)
                diff = arts[other] != arts[i]
                dist = hamming(np.full(len(idx) - i - 1, fps[i]), fps[other])
                match = pair_matches(
                    dist, (np.full(len(dist), ln[i]), ln[other]), ex[other] == ex[i], k, policy
                )
                if setting == 0 and confirm_k < NO_CONFIRM:
                    sigs = self.sigs[idx]
                    match &= dist + hamming(np.full(len(dist), sigs[i]), sigs[other]) <= confirm_k
                for j in joined.get(i, ()):
                    match[j - i - 1] = True
                bad += int((match & diff).sum())
                total += int(diff.sum())
            out[lang] = (bad, total)
        return out


def histogram(title: str, rows: dict[str, np.ndarray], top: int = 32) -> list[str]:
    """Text histogram of distances 0..top (counts, and a bar per row scaled to its size)."""
    lines = [title, "  d  " + "  ".join(f"{name:>24}" for name in rows)]
    for d in range(top + 1):
        cells = []
        for values in rows.values():
            n = int((values == d).sum()) if d < top else int((values >= d).sum())
            bar = "#" * round(20 * n / max(1, len(values)))
            cells.append(f"{n:6d} {bar:<17}")
        label = f"{d:3d}" if d < top else f"{d:2d}+"
        lines.append(f"{label}  " + "  ".join(cells))
    return lines


def _fmt(values: tuple) -> str:
    p, r, f1, _, fp, _ = values
    return f"{p:.3f} {r:.3f} {f1:.3f} {fp:4d}"


#: The headings of a table of P / R / F1 / FP per language, after its first column's.
_PRF_HEADINGS = ("EN P", "EN R", "EN F1", "EN FP", "ZH P", "ZH R", "ZH F1", "ZH FP")


def _prf_cells(label: str, table: dict[str, tuple], last: str) -> list[str]:
    """One row's cells: label, EN and ZH P / R / F1 / FP, then ``last``."""
    en, zh = (_fmt(table[lang]).split() for lang in ("en", "zh"))
    return [label, *en, *zh, last]


def report_main(ev: Evaluation, policy: Policy, out: list[str]) -> None:
    """Feature-setting table, k sweep, per-edit recall and histograms."""
    names = list(SETTINGS)
    out.append(f"\n## Feature settings at k={K} ({policy.name})\n")
    out.append(
        "The current settings' row is confirmed by the word-pair signature (fingerprint plus "
        f"signature distance at most confirm_k={CONFIRM_K}); the next row is the same without "
        "it; the others are not confirmed.\n"
    )
    rows = [(0, f"{CURRENT}, confirmed", CONFIRM_K), (0, f"{CURRENT}, not confirmed", NO_CONFIRM)]
    rows += [(i, name, NO_CONFIRM) for i, name in enumerate(names) if i]
    cells = []
    for i, name, confirm_k in rows:
        allp = ev.all_pair_false_matches(i, K, policy, confirm_k)
        pairs = f"{allp['en'][0]} / {allp['en'][1]}, {allp['zh'][0]} / {allp['zh'][1]}"
        cells.append(_prf_cells(name, ev.table(i, K, policy, confirm_k), pairs))
    all_pairs = "false matches among all different-article pairs EN / ZH"
    out.extend(markdown(["features", *_PRF_HEADINGS, all_pairs], cells))
    for name in dict.fromkeys((CURRENT, RECOMMENDED)):
        i = names.index(name)
        for confirm_k in (CONFIRM_K, NO_CONFIRM):
            how = f"confirm_k={confirm_k}" if confirm_k < NO_CONFIRM else "no confirmation"
            out.append(f"\n### k sweep: {name}, {how} ({policy.name})\n")
            cells = []
            for k in range(11):
                allp = ev.all_pair_false_matches(i, k, policy, confirm_k)
                pairs = f"{allp['en'][0]} / {allp['zh'][0]}"
                cells.append(_prf_cells(str(k), ev.table(i, k, policy, confirm_k), pairs))
            all_pairs = "all-pair false matches EN / ZH"
            out.extend(markdown(["k", *_PRF_HEADINGS, all_pairs], cells))
        out.append(f"\n### Recall per edit kind at k={K}: {name} ({policy.name})\n")
        judged = ev.judged("pos", i, K, policy)
        dist = ev.distances("pos", i)
        pos_lang = ev.lang[ev.pairs["pos"][:, 0]]
        cells = []
        for edit in EDITS:
            row = [edit]
            meds = []
            for lang in ("en", "zh"):
                sel = (ev.kinds["pos"] == edit) & (pos_lang == lang)
                recall = f"{judged[sel].mean():.3f}" if sel.any() else "-"
                row += [recall, str(int(sel.sum()))]
                meds.append(f"{np.median(dist[sel]):.0f}" if sel.any() else "-")
            cells.append([*row, " / ".join(meds)])
        headings = ["edit", "EN recall", "EN pairs", "ZH recall", "ZH pairs", "median d EN / ZH"]
        out.extend(markdown(headings, cells))
        neg_lang = ev.lang[ev.pairs["neg"][:, 0]]
        neg_dist = ev.distances("neg", i)
        for lang in ("en", "zh"):
            rows = {
                "same article": dist[pos_lang == lang],
                "diff. article, same tmpl": neg_dist[
                    (neg_lang == lang) & (ev.kinds["neg"] == "same-template")
                ],
            }
            if lang == "zh":
                rows["diff. article, same topic"] = neg_dist[
                    (neg_lang == lang) & (ev.kinds["neg"] == "same-topic")
                ]
            out.append("\n```")
            out.extend(histogram(f"Hamming distances, {lang}, {name}", rows))
            out.append("```")


def report_sentences(ev: Evaluation, policy: Policy, out: list[str], root: Path) -> None:
    """Sentence-level matching of short pages: recall, false matches and PAWS-X by share."""
    paws = [(a, b) for a, b, _ in load_pawsx(root) if normalize(a) != normalize(b)]
    paws_sentences = [(page_sentences(a), page_sentences(b)) for a, b in paws]
    pos_lang = ev.lang[ev.pairs["pos"][:, 0]]
    out.append("\n## Sentence-level matching of short pages\n")
    out.append(
        f"Pages under {SENTENCE_PAGE_LETTERS} letters keep the hashes of their normalized "
        "sentences (8+ letters); two such pages also match when the sentences they share make "
        "up at least the given share of the sentence letters of both (one sentence alone: "
        f"twice the share). Default {SENTENCE_SHARE:.0%}.\n"
    )
    cells = []
    for share in (None, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5):
        variant = Policy(
            policy.name, policy.min_length, policy.short, policy.measure, policy.digits, share
        )
        judged = ev.judged("pos", 0, K, variant)
        false = ev.all_pair_false_matches(0, K, variant)
        matched = sum(share_matches(a, b, share) for a, b in paws_sentences) if share else 0
        label = (
            "off"
            if share is None
            else f"{share:.0%}" + (" (default)" if share == SENTENCE_SHARE else "")
        )
        cells.append(
            [
                label,
                f"{judged[pos_lang == 'en'].mean():.3f}",
                f"{judged[pos_lang == 'zh'].mean():.3f}",
                f"{false['en'][0]} / {false['zh'][0]}",
                f"{matched} of {len(paws)}",
            ]
        )
    all_pairs = "false matches among all different-article pairs EN / ZH"
    headings = ["sentence share", "EN R", "ZH R", all_pairs, "PAWS-X pairs matched"]
    out.extend(markdown(headings, cells))


def report_clough(root: Path, out: list[str], workers: int) -> None:
    """Distance of each Clough-Stevenson answer to its task's source text, per category."""
    rows = load_clough(root)
    texts = [r[3] for r in rows]
    fps = np.array(run_pool(_fingerprints, texts, workers), dtype=np.uint64)
    orig = {r[1]: i for i, r in enumerate(rows) if r[2] == "orig"}
    out.append(f"\n## Clough-Stevenson answers vs their source text (k={K})\n")
    cells = []
    for s, name in enumerate(SETTINGS):
        if name not in (CURRENT, RECOMMENDED, "2-shingles tfidf", "3-shingles tfidf"):
            continue
        by_cat: dict[str, list[int]] = defaultdict(list)
        for i, (_, task, cat, _) in enumerate(rows):
            if cat != "orig":
                by_cat[cat].append(int(fps[i, s] ^ fps[orig[task], s]).bit_count())
        for cat in ("cut", "light", "heavy", "non"):
            d = np.array(by_cat[cat])
            median, within = f"{np.median(d):.0f}", f"{(d <= K).mean():.2f}"
            cells.append([name, cat, len(d), d.min(), median, d.max(), within])
    headings = ["features", "category", "n", "min", "median", "max", "share within k"]
    out.extend(markdown(headings, cells))


def _fp_one(text: str) -> int:
    return fingerprint(text, SETTINGS[RECOMMENDED])


def report_short(
    root: Path, ev: Evaluation, policies: list[Policy], out: list[str], workers: int, quick: bool
) -> None:
    """PAWS-X pairs and short syndicated briefs under each short-text policy."""
    paws = load_pawsx(root)
    identical = [normalize(a) == normalize(b) for a, b, _ in paws]
    paws = [p for p, same in zip(paws, identical, strict=True) if not same]
    if quick:
        paws = paws[::4]
    flat = [s for a, b, _ in paws for s in (a, b)]
    fps = np.array(run_pool(_fingerprints, flat, workers), dtype=np.uint64)
    s = list(SETTINGS).index(RECOMMENDED)
    pd = hamming(fps[0::2, s], fps[1::2, s])
    out.append(f"\n## Short texts: PAWS-X Chinese pairs ({len(paws)} pairs of different texts)\n")
    lens = [len(x) for x in flat]
    out.append(
        f"{sum(identical)} of the 2000 pairs are the same sentence twice (after NFKC, case and "
        f"punctuation folding) and are left out. Sentence length: median "
        f"{np.median(lens):.0f} chars, max {max(lens)}.\n"
    )
    cells = []
    for i, name in enumerate(SETTINGS):
        d = hamming(fps[0::2, i], fps[1::2, i])
        cells.append([name, (d <= 3).sum(), (d <= 1).sum(), (d == 0).sum()])
    headings = ["features", "pairs within k=3 (simhash alone)", "within k=1", "within k=0"]
    out.extend(markdown(headings, cells))
    out.append("\n```")
    out.extend(histogram(f"PAWS-X pair distances ({RECOMMENDED})", {"pairs": pd}, top=24))
    out.append("```")
    # Longer look-alike texts: m PAWS-X pairs concatenated (sentence 1s vs sentence 2s).
    out.append(
        f"\n### Look-alike texts of growing length: m PAWS-X pairs joined ({RECOMMENDED})\n"
    )
    out.append(
        "Dropped by the plugin: within k and confirmed by the signatures, or, under "
        f"{CURRENT_POLICY.min_length} letters, the same normalized text, or, under "
        f"{SENTENCE_PAGE_LETTERS} letters, {SENTENCE_SHARE:.0%} of both texts' sentence letters "
        "shared (one sentence alone: twice that).\n"
    )
    cells = []
    for m in (1, 2, 3, 5, 8, 12):
        groups = [paws[i : i + m] for i in range(0, len(paws) - m + 1, m)]
        a_texts = ["\n".join(g[0] for g in grp) for grp in groups]
        b_texts = ["\n".join(g[1] for g in grp) for grp in groups]
        fa = np.array(run_pool(_fp_one, a_texts, workers), dtype=np.uint64)
        fb = np.array(run_pool(_fp_one, b_texts, workers), dtype=np.uint64)
        sa = np.array(run_pool(_signature, a_texts, workers), dtype=np.uint64)
        sb = np.array(run_pool(_signature, b_texts, workers), dtype=np.uint64)
        d = hamming(fa, fb)
        confirmed = (d <= K) & (d + hamming(sa, sb) <= CONFIRM_K)
        p = CURRENT_POLICY
        la, lb = (np.array([p.length(t) for t in texts]) for texts in (a_texts, b_texts))
        short, long = np.maximum(la, lb) < p.min_length, np.minimum(la, lb) >= p.min_length
        same = np.array([p.key(a) == p.key(b) for a, b in zip(a_texts, b_texts, strict=True)])
        shared = np.array(
            [
                share_matches(page_sentences(a), page_sentences(b), SENTENCE_SHARE)
                for a, b in zip(a_texts, b_texts, strict=True)
            ],
            dtype=bool,
        )
        dropped = (long & confirmed) | (short & same) | shared
        med = np.median([len(t) for t in a_texts])
        cells.append(
            [m, f"{med:.0f}", len(d), dropped.sum(), confirmed.sum()]
            + [(d <= within).sum() for within in (8, 6, 3, 1, 0)]
        )
    confirmed_within = f"within k={K} and confirmed (≤ {CONFIRM_K})"
    headings = ["m", "median chars", "texts", "dropped by the plugin", confirmed_within]
    out.extend(markdown(headings + [f"within k={k}" for k in (8, 6, 3, 1, 0)], cells))
    rng = random.Random(7)
    articles = load_articles(root)
    if quick:
        articles = articles[::3]
    briefs = short_cases(articles, rng)
    brief_texts = [t for _, a, b, _, _ in briefs for t in (a, b)]
    bfp = np.array(run_pool(_fp_one, brief_texts, workers), dtype=np.uint64)
    bd = hamming(bfp[0::2], bfp[1::2])
    out.append("\n### Short-text policies\n")
    out.append(
        "PAWS-X false drops: pairs judged duplicates (each pair is two different texts). "
        "Briefs: the first sentences (60-400 chars) of real articles vs a copy with one "
        f"syndication edit ({len(briefs)} pairs); recall = copies judged duplicates. "
        "Long set: the page-level near-duplicate set above (P / R)."
    )
    out.append("")
    cells = []
    targets = np.array([b[4] for b in briefs])
    edits = np.array([b[3] for b in briefs])
    for p in policies:
        pl = np.array([p.length(x) for x in flat])
        pk = np.array([p.key(x) for x in flat], dtype=np.uint64)
        paws_fd = pair_matches(pd, (pl[0::2], pl[1::2]), pk[0::2] == pk[1::2], K, p)
        bl = np.array([p.length(x) for x in brief_texts])
        bk = np.array([p.key(x) for x in brief_texts], dtype=np.uint64)
        brief = pair_matches(bd, (bl[0::2], bl[1::2]), bk[0::2] == bk[1::2], K, p)
        if p.sentence_share is not None:
            paws_fd |= _shared(flat, p.sentence_share)
            brief |= _shared(brief_texts, p.sentence_share)
        by_len = " / ".join(f"{brief[targets == t].mean():.2f}" for t in (60, 120, 250, 400))
        by_edit = " / ".join(
            f"{brief[edits == e].mean():.2f}" for e in ("counter", "typo", "sentence-added")
        )
        t = ev.table(s, K, p)
        cells.append(
            [p.name, int(paws_fd.sum()), f"{brief.mean():.3f}", by_len, by_edit]
            + [f"{t[lang][0]:.3f} / {t[lang][1]:.3f}" for lang in ("en", "zh")]
        )
    headings = [
        "policy",
        "PAWS-X false drops",
        "brief recall",
        "brief recall at 60/120/250/400 chars",
    ]
    headings += ["brief recall: counter/typo/sentence-added", "long EN P / R", "long ZH P / R"]
    out.extend(markdown(headings, cells))


def _shared(texts: list[str], share: float) -> np.ndarray:
    """For texts paired as (0, 1), (2, 3), ...: whether the sentence rule joins each pair."""
    pages = [page_sentences(t) for t in texts]
    return np.array(
        [share_matches(a, b, share) for a, b in zip(pages[0::2], pages[1::2], strict=True)],
        dtype=bool,
    )


POLICIES = [
    Policy("skip < 200 chars", 200, "skip"),
    Policy("skip < 300 chars", 300, "skip"),
    Policy(
        f"exact < 200 letters, shared sentences < {SENTENCE_PAGE_LETTERS} (current)",
        200,
        "exact",
        measure="letters",
        sentence_share=SENTENCE_SHARE,
    ),
    Policy("exact < 200 letters, no sentences", 200, "exact", measure="letters"),
    Policy("exact < 200 chars, digits stripped", 200, "exact", digits=False),
    Policy("exact < 300 chars", 300, "exact"),
    Policy("exact < 400 chars", 400, "exact"),
    Policy("k=1 < 200 chars", 200, "k1"),
    Policy("k=0 < 300 chars", 300, "k0"),
]
CURRENT_POLICY = POLICIES[2]
BEFORE_POLICY = POLICIES[0]


def main() -> None:
    """Build the cases, analyse every page, print the tables (Markdown)."""
    parser = arguments(__doc__)
    parser.add_argument("--quick", action="store_true", help="a third of the cases")
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    parser.add_argument(
        "--seed", type=int, help="another sampling of the cases (docs/quality.md: 1, 2, 3)"
    )
    args = parser.parse_args()
    root = data_dir()
    if not root.is_dir():
        sys.exit(f"no data at {root} (set NEARDUPE_DATA)")
    start = time.perf_counter()
    sampling = {} if args.seed is None else {"seed": args.seed}
    cases = build_cases(root, quick=args.quick, **sampling)
    built = time.perf_counter()
    results = run_pool(_analyze, [p.html for p in cases.pages], args.workers)
    texts = [r[0] for r in results]
    fps = np.array([r[1] for r in results], dtype=np.uint64)
    sigs = np.array([r[2] for r in results], dtype=np.uint64)
    analysed = time.perf_counter()
    ev = Evaluation(cases, texts, fps, sigs)
    out: list[str] = []
    langs = Counter(p.lang for p in cases.pages)
    out.append(
        f"# nearDupe quality ({'quick' if args.quick else 'full'} run)\n\n"
        f"{len(cases.pages)} pages ({langs['en']} en, {langs['zh']} zh) from "
        f"{len({p.template for p in cases.pages})} real templates and {len(cases.articles)} "
        f"real articles; {len(cases.positives)} positive pairs, "
        f"{Counter(k for *_, k in cases.negatives)} negative pairs. "
        f"Built in {built - start:.0f} s, analysed in {analysed - built:.0f} s."
    )
    report_main(ev, CURRENT_POLICY, out)
    report_sentences(ev, CURRENT_POLICY, out, root)
    report_main(ev, BEFORE_POLICY, out)
    report_clough(root, out, args.workers)
    report_short(root, ev, POLICIES, out, args.workers, args.quick)
    out.append(f"\nTotal {time.perf_counter() - start:.0f} s.")
    text = "\n".join(out)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
