"""The enterprise temporal-RAG article's retriever (``TemporalAwareRetriever`` in the
article's TypeScript listing), reproduced exactly, quirks included — a parity reference,
not the engine's own method.

What the listing does, step by step (each reproduced here):

1. ``parseTemporalIntent(query, clock)``: only the first ``(20\\d{2})年(?:度)?`` (ASCII digits)
   makes a historical query: window [Jan 1 00:00:00, Dec 31 23:59:59] UTC of that year (ms),
   target = the window's midpoint, the match removed once from the trimmed query. Then, if
   the *raw* query contains 最新 / 当前 / 现行 / 最近 / 有效, every such word is removed and the
   target is reset to the clock — while ``isHistoricalAudit`` and ``timeWindow`` stay as they
   were (so "2024年最新制度" is historical, windowed on 2024, targeted at now). Trimming is
   JavaScript's ``String.prototype.trim`` (Unicode Zs spaces, line terminators, U+FEFF).
2. Freshness: Gaussian on |target − valid_from| in days (86 400 000 ms), σ = h / √(2 ln 2),
   clamped to [0.01, 1].
3. Score: (dense·w + freshness·(1 − w)) × (0.1 if deprecated and not historical else 1).
   With a window, an item whose interval misses it (``to < start`` or ``from > end``, open
   ``validTo`` = +∞, comparisons inclusive) scores dense × 0.1 with freshness 0.001 and
   ``isArbitratedWinner`` false, and skips the deprecation rule.
4. Stable sort by score, descending (ties keep input order).
5. Arbitration: walk the ranking, keep the first item of each ``stemId`` (a missing stemId is
   one shared key), stop once ``topK`` are kept — checked *after* adding, so ``topK <= 0``
   still keeps one item. Out-of-window items are not skipped.

Where JavaScript leaves behaviour to the runtime, this module picks, and says so:

* Dates are the ECMAScript date-time string format (``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD``,
  optionally ``THH:mm[:ss[.sss…]]`` and ``Z`` / ``±HH:mm``; ``±YYYYYY`` years). Date-only forms
  are UTC as in JS; a date-time *without* an offset is local time in JS and is read as UTC
  here (a JS runtime with TZ=UTC). Fractions beyond milliseconds are truncated. Anything
  else (V8's lenient fallback formats, impossible dates, which V8 may roll over) raises
  :class:`~chrono_engine.errors.QueryError`: an invalid date gives NaN scores in JS, whose
  ranking is unspecified.
* ``exp`` is the C library's (``math.exp``): V8's fdlibm ``exp`` and libm can differ in the
  last bit, which changes a ranking only between scores equal to ~1e-16 relative.
"""
from __future__ import annotations

import calendar
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ._time import OPEN_END, column_us, errors_as, scalar_us
from .errors import QueryError

__all__ = ["article_reference_pipeline", "parse_article_intent", "article_freshness",
           "article_scores", "parse_js_date"]

_MS_PER_DAY = 1000 * 60 * 60 * 24
_YEAR = re.compile(r"(20[0-9]{2})年(?:度)?")
_LATEST = re.compile(r"(?:最新|当前|现行|最近|有效)")
# ECMAScript String.prototype.trim: WhiteSpace (TAB VT FF SP NBSP ZWNBSP, Zs) + LineTerminator
_JS_SPACE = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
             "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")
_JS_DATE = re.compile(
    r"(?P<y>[+-][0-9]{6}|[0-9]{4})(?:-(?P<mo>[0-9]{2})(?:-(?P<d>[0-9]{2}))?)?"
    r"(?:T(?P<h>[0-9]{2}):(?P<mi>[0-9]{2})(?::(?P<s>[0-9]{2})(?:\.(?P<f>[0-9]+))?)?)?"
    r"(?P<z>Z|[+-][0-9]{2}:[0-9]{2})?")


def _js_trim(s: str) -> str:
    return s.strip(_JS_SPACE)


def parse_js_date(text: Any, name: str = "date") -> int:
    """``new Date(text).getTime()`` for the ECMAScript date-time string format (ms since the
    epoch, UTC; offset-less date-times read as UTC — see the module docstring)."""
    if not isinstance(text, str):
        raise QueryError(f"{name}: expected an ISO 8601 date string, got {text!r}")
    m = _JS_DATE.fullmatch(text)
    if m is None or (m["y"] == "-000000"):
        raise QueryError(f"{name}: {text!r} is not an ECMAScript date-time string")
    y, mo, d = int(m["y"]), int(m["mo"] or 1), int(m["d"] or 1)
    h, mi, s = int(m["h"] or 0), int(m["mi"] or 0), int(m["s"] or 0)
    ms = int((m["f"] or "0")[:3].ljust(3, "0"))
    if not (1 <= mo <= 12 and 1 <= d <= _days_in_month(y, mo)):
        raise QueryError(f"{name}: {text!r} is not a calendar date")
    if h == 24 and (mi or s or ms):
        raise QueryError(f"{name}: {text!r}: 24:00 only as the end of a day")
    if h > 24 or mi > 59 or s > 59:
        raise QueryError(f"{name}: {text!r} is not a time of day")
    off = 0
    z = m["z"]
    if z and z != "Z":
        oh, om = int(z[1:3]), int(z[4:6])
        if oh > 23 or om > 59:
            raise QueryError(f"{name}: {text!r} has an impossible offset")
        off = (oh * 60 + om) * (1 if z[0] == "+" else -1)
    days = _days_from_civil(y, mo, d)
    return (((days * 24 + h) * 60 + mi - off) * 60 + s) * 1000 + ms


def _days_in_month(y: int, m: int) -> int:
    if m == 2:
        return 29 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 28
    return 30 if m in (4, 6, 9, 11) else 31


def _days_from_civil(y: int, m: int, d: int) -> int:
    # proleptic Gregorian days since 1970-01-01, any year (H. Hinnant's algorithm)
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _number(x: Any, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise QueryError(f"{name} must be a number, got {x!r}")
    x = float(x)
    if not math.isfinite(x):
        raise QueryError(f"{name} must be finite, got {x!r}")
    return x


def _num_out(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def parse_article_intent(query: str, clock_ms: float) -> dict:
    """The listing's ``parseTemporalIntent(query, currentClock)`` as a dict: rawQuery,
    cleanedQuery, isHistoricalAudit, targetTimestamp (ms) and, when a year matched,
    timeWindow {start, end} (ms; absent otherwise)."""
    if not isinstance(query, str):
        raise QueryError(f"query must be a str, got {type(query).__name__}")
    clock = _number(clock_ms, "clock_ms")
    cleaned = _js_trim(query)
    historical = False
    target: float = clock
    window = None
    m = _YEAR.search(query)
    if m:
        year = int(m[1])
        start = calendar.timegm((year, 1, 1, 0, 0, 0)) * 1000
        end = calendar.timegm((year, 12, 31, 23, 59, 59)) * 1000
        historical = True
        target = start + (end - start) / 2
        window = {"start": start, "end": end}
        cleaned = _js_trim(cleaned.replace(m[0], "", 1))
    if _LATEST.search(query):
        cleaned = _js_trim(_LATEST.sub("", cleaned))
        target = clock
    out = {"rawQuery": query, "cleanedQuery": cleaned, "isHistoricalAudit": historical,
           "targetTimestamp": _num_out(target)}
    if window is not None:
        out["timeWindow"] = window
    return out


def _sigma(half_life_days: float) -> float:
    # the listing's halfLifeDays / Math.sqrt(2 * Math.LN2); ce.Gaussian(half_life=h) computes the same
    return half_life_days / math.sqrt(2 * math.log(2))


def article_freshness(valid_from_ms: Any, target_ms: float, half_life_days: float | None = None, *,
                      sigma: float | None = None) -> np.ndarray:
    """``calculateGaussianFreshness`` over arrays: exp(−Δ²/(2σ²)), Δ = |target − from| in
    days, σ = h/√(2 ln 2) (or ``sigma``), clamped to [0.01, 1]."""
    if sigma is None:
        sigma = _sigma(half_life_days)
    two_sigma2 = 2 * (sigma * sigma)
    vf = np.asarray(valid_from_ms, dtype=np.float64)
    delta = np.abs(float(target_ms) - vf) / _MS_PER_DAY
    f = np.fromiter((math.exp(-(d * d) / two_sigma2) for d in delta.tolist()), np.float64, count=len(delta))
    return np.maximum(0.01, np.minimum(1.0, f))


def article_scores(dense: Any, valid_from_ms: Any, valid_to_ms: Any, deprecated: Any, *,
                   target_ms: float, historical: bool, window: tuple[float, float] | None,
                   semantic_weight: float, half_life_days: float | None = None,
                   sigma: float | None = None, penalty: float = 0.1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``rankWithTemporalScoring`` before its sort: (freshness, final score, winner flag)
    per item, in input order. ``valid_to_ms``: +inf for open; ``window``: (start, end) ms."""
    dense = np.asarray(dense, dtype=np.float64)
    vf = np.asarray(valid_from_ms, dtype=np.float64)
    vt = np.asarray(valid_to_ms, dtype=np.float64)
    dep = np.asarray(deprecated, dtype=bool)
    fresh = article_freshness(vf, target_ms, half_life_days, sigma=sigma)
    w_sem = float(semantic_weight)
    w_fresh = 1.0 - w_sem
    pen = np.where(dep & (not historical), penalty, 1.0)
    final = (dense * w_sem + fresh * w_fresh) * pen
    winner = np.ones(len(dense), dtype=bool)
    if window is not None:
        out = (vt < window[0]) | (vf > window[1])
        fresh = np.where(out, 0.001, fresh)
        final = np.where(out, dense * 0.1, final)
        winner = ~out
    return fresh, final, winner


def _rank_and_arbitrate(final: np.ndarray, stems: Sequence[Any], top_k: int) -> tuple[np.ndarray, list[int]]:
    order = np.argsort(-final, kind="stable")  # Array.prototype.sort is stable (ES2019)
    winners: list[int] = []
    seen: set = set()
    for i in order.tolist():
        key = stems[i]
        if key in seen:
            continue
        seen.add(key)
        winners.append(i)
        if len(winners) >= top_k:  # checked after adding: topK <= 0 keeps one
            break
    return order, winners


def article_reference_pipeline(chunks: Sequence[Mapping[str, Any]], query: str, clock_ms: float,
                               semantic_weight: float = 0.75, half_life_days: float = 365,
                               top_k: int = 5) -> dict:
    """Run the listing end to end on its own inputs; returns its outputs.

    ``chunks``: ``[{id, content, metadata: {stemId, version, validFrom, validTo?,
    isDeprecated}, denseScore}, ...]`` (ISO date strings); ``clock_ms``: the clock in epoch
    milliseconds. Returns ``{"intent": parseTemporalIntent(...), "ranked": [{id,
    freshnessScore, finalScore, isArbitratedWinner}, ...] (rank order), "winners": [ids]}``
    (``arbitrateVersionConflicts(ranked, top_k)``).

    >>> out = article_reference_pipeline(
    ...     [{"id": "old", "metadata": {"stemId": "T", "version": "v1", "validFrom": "2023-01-01",
    ...       "isDeprecated": True}, "denseScore": 0.9},
    ...      {"id": "new", "metadata": {"stemId": "T", "version": "v2", "validFrom": "2026-03-01",
    ...       "isDeprecated": False}, "denseScore": 0.89}],
    ...     "现在总监住宿标准", clock_ms=1777593600000)
    >>> out["winners"]
    ['new']
    """
    w = _number(semantic_weight, "semantic_weight")
    h = _number(half_life_days, "half_life_days")
    if h <= 0:
        raise QueryError(f"half_life_days must be positive, got {half_life_days!r}")
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)):
        raise QueryError(f"top_k must be an integer, got {top_k!r}")
    intent = parse_article_intent(query, clock_ms)
    if isinstance(chunks, (str, bytes, Mapping)) or not isinstance(chunks, Sequence):
        raise QueryError("chunks must be a list of chunk dicts")
    ids, dense, vf, vt, dep, stems = [], [], [], [], [], []
    for i, c in enumerate(chunks):
        if not isinstance(c, Mapping) or not isinstance(c.get("metadata"), Mapping):
            raise QueryError(f"chunk {i}: expected {{id, content, metadata: {{...}}, denseScore}}")
        md = c["metadata"]
        ids.append(c.get("id"))
        dense.append(_number(c.get("denseScore"), f"chunk {i}: denseScore"))
        vf.append(parse_js_date(md.get("validFrom"), f"chunk {i}: metadata.validFrom"))
        to = md.get("validTo")
        vt.append(parse_js_date(to, f"chunk {i}: metadata.validTo") if to else math.inf)  # falsy -> Infinity
        flag = md.get("isDeprecated", False)
        if flag is not None and not isinstance(flag, (bool, np.bool_)):
            raise QueryError(f"chunk {i}: metadata.isDeprecated must be a boolean, got {flag!r}")
        dep.append(bool(flag))
        stems.append(md.get("stemId"))
    tw = intent.get("timeWindow")
    fresh, final, winner = article_scores(
        dense, vf, vt, dep, target_ms=intent["targetTimestamp"], historical=intent["isHistoricalAudit"],
        window=(tw["start"], tw["end"]) if tw else None, semantic_weight=w, half_life_days=h)
    order, winners = _rank_and_arbitrate(final, stems, int(top_k))
    ranked = [{"id": ids[i], "freshnessScore": float(fresh[i]), "finalScore": float(final[i]),
               "isArbitratedWinner": bool(winner[i])} for i in order.tolist()]
    return {"intent": intent, "ranked": ranked, "winners": [ids[i] for i in winners]}


# ----------------------------------------------------------------------------- ce.score

def _ms(col: Any, name: str, nullable: bool) -> np.ndarray:
    """A candidate time column as float milliseconds (JS dates hold whole ms); with
    ``nullable``, a null or open end reads +inf."""
    with errors_as(QueryError):
        us, nulls = column_us(name, col, nullable=nullable, stored=False)
    ms = np.floor_divide(us, 1000).astype(np.float64)
    if nullable:
        open_ = us == OPEN_END
        ms = np.where(open_ if nulls is None else (nulls | open_), np.inf, ms)
    return ms


def score_table(t: pa.Table, *, as_of_us: int, policy: Any, window: Any = None,
                query: str | None = None) -> pa.Table:
    """``ce.score`` under :meth:`ScoringPolicy.article_reference`: the listing's per-item
    scores (input order kept; ``validity`` = freshnessScore, ``score`` = finalScore).

    Columns: ``similarity`` (denseScore), ``valid_from``, optional ``valid_to`` (null =
    open) and ``deprecated``. ``as_of`` is the clock; ``query`` runs the listing's own
    intent parser against it (target, window, historical), or ``window=(start, end)``
    (inclusive ends, as the listing compares) makes a historical query targeted at
    ``as_of``; neither: a plain current query.
    """
    names = set(t.column_names)
    for need in ("similarity", "valid_from"):
        if need not in names:
            raise QueryError(f"the article preset needs a {need!r} column")
    dense = t.column("similarity").to_numpy().astype(np.float64)
    if not np.isfinite(dense).all():
        raise QueryError(f"column 'similarity', row {int(np.flatnonzero(~np.isfinite(dense))[0])}: not finite")
    vf = _ms(t.column("valid_from"), "valid_from", False)
    vt = _ms(t.column("valid_to"), "valid_to", True) if "valid_to" in names else np.full(len(t), np.inf)
    dep = (t.column("deprecated").fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
           if "deprecated" in names else np.zeros(len(t), bool))
    clock = float(as_of_us // 1000)
    if query is not None and window is not None:
        raise QueryError("give the article preset a query or a window, not both")
    if query is not None:
        intent = parse_article_intent(query, clock)
        target, historical = float(intent["targetTimestamp"]), intent["isHistoricalAudit"]
        tw = intent.get("timeWindow")
        win = (tw["start"], tw["end"]) if tw else None
    elif window is not None:
        if len(window) != 2:
            raise QueryError("window must be (start, end)")
        with errors_as(QueryError):
            win = (scalar_us(window[0], "window start") // 1000, scalar_us(window[1], "window end") // 1000)
        target, historical = clock, True
    else:
        target, historical, win = clock, False, None
    fresh, final, _ = article_scores(dense, vf, vt, dep, target_ms=target, historical=historical,
                                     window=win, semantic_weight=policy.alpha,
                                     sigma=policy.decay.sigma, penalty=policy.penalty)
    return t.append_column("validity", pa.array(fresh)).append_column("score", pa.array(final))
