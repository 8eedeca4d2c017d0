"""The question in words (:meth:`Engine.query <chrono_engine.Engine.query>`): its time intent,
the embedded question, and the post-stage (undated hits, distinct stems, the window's fit)."""
from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .._args import K_MAX, as_float32, count, shown
from .._embedder import is_temporal, text_vectors
from .._time import MIN_TIME_US, OPEN_END, US_PER_DAY, errors_as, from_us, scalar_us
from ..errors import QueryError
from .options import SearchOptions, _LANGS, real
from .results import _UTC, citations


@dataclass(frozen=True)
class QueryResult:
    """What :meth:`Engine.query <chrono_engine.Engine.query>` returns: the ``hits`` table
    (as :meth:`~chrono_engine.Engine.search` returns it, citations in ``lang``) and the
    :class:`~chrono_engine.TemporalIntent` the search ran with; ``as_of`` / ``window`` are
    the instants actually used (UTC datetimes; ``as_of`` is T, the decay anchor, in every
    mode; ``window`` only in window mode) and ``lang`` the citation language.
    """

    hits: pa.Table
    intent: Any
    lang: str
    as_of: _dt.datetime
    window: tuple[_dt.datetime, _dt.datetime] | None = None

    @property
    def citations(self) -> list[str]:
        """The hits' citations, in rank order."""
        return self.hits.column("citation").to_pylist()

    def __len__(self) -> int:
        return self.hits.num_rows


def _has_cjk(text: str) -> bool:
    """Whether ``text`` holds a CJK ideograph (then citations default to Chinese)."""
    return any("\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" or "\uf900" <= ch <= "\ufaff"
               for ch in text)


# the options a text query takes from its time intent rather than from the caller
_FROM_INTENT = ("mode", "as_of", "window")


#: undated items in a text query: left out when the question has a time constraint ("auto"),
#: always left out, or always kept
UNDATED = ("auto", "exclude", "include")


#: the most rows a text query's post-stage asks the core for before it settles for an
#: uncertified answer (then ``certified`` is False on its hits)
POST_FETCH_MAX = 4096


#: the default ``window_fit`` of :meth:`Engine.query <chrono_engine.Engine.query>`: a
#: half-life in days (chosen on the TimeQA tune part: benches/bench_temporal_qa.py)
WINDOW_FIT_DAYS = 730.0


#: with the window fit on, how long before the window's start a fact may begin and still
#: qualify (µs): texts date the event that starts a state ("In June 2017 he replaced ...")
#: shortly before the span a question names ("from Jul 2017 to Jul 2018"); the fit then
#: ranks such facts by that distance. A quarter, chosen on the TimeQA tune part.
WINDOW_LEAD_US = 92 * US_PER_DAY


#: the most an end's distance from the window's end counts in the window fit: a text dates
#: the start of what it tells more often than its end, and a fact's stored end is often just
#: its expression's grain ("in 2004" ends with 2004)
FIT_END_CAP_US = 365 * US_PER_DAY


def window_closeness(valid_from: Any, valid_to: Any, start: int, end: int, half_life_us: float,
                     now: int) -> np.ndarray:
    """How well each item's validity fits the window ``[start, end)``, in (0, 1]: 2^(−d / h)
    with d = |valid_from − start| + min(|min(valid_to, now) − end|, :data:`FIT_END_CAP_US`)
    (the end term only for a window with an end) and h = ``half_life_us``. An open
    ``valid_to`` (the fact still holds) counts as ``now``. Every argument but the bounds is
    int64 µs (``valid_to``: an array or Arrow column, open = :data:`OPEN_END` or null)."""
    vf = np.asarray(valid_from, dtype=np.int64).astype(np.float64)
    d = np.abs(vf - float(start))
    if end != OPEN_END:
        if isinstance(valid_to, (pa.Array, pa.ChunkedArray)):
            valid_to = valid_to.cast(pa.int64()).fill_null(OPEN_END).to_numpy(zero_copy_only=False)
        vt = np.minimum(np.asarray(valid_to, dtype=np.int64), np.int64(now)).astype(np.float64)
        d += np.minimum(np.abs(vt - float(end)), float(FIT_END_CAP_US))
    return np.exp2(-d / half_life_us)


def _post(hits: pa.Table, k: int, *, drop_undated: bool, distinct: bool, fit: tuple | None,
          alpha: float) -> tuple[pa.Table, float | None]:
    """The k best rows of ``hits`` (ranked by score) after the text query's post-stage:
    undated rows dropped, the window fit fused into the score, one row per distinct
    content. Returns the rows and the k-th final score (None when fewer than k)."""
    vf = hits.column("valid_from").cast(pa.int64()).to_numpy(zero_copy_only=False)
    score = hits.column("score").to_numpy(zero_copy_only=False).astype(np.float64)
    keep = np.ones(hits.num_rows, bool)
    vt = None
    if drop_undated or fit is not None:
        vt = hits.column("valid_to").cast(pa.int64()).fill_null(OPEN_END).to_numpy(zero_copy_only=False)
    if drop_undated:  # undated: valid from the beginning of time, open-ended (ground_rows' mark)
        keep &= (vf != MIN_TIME_US) | (vt != OPEN_END)
    if fit is not None:
        score = alpha * score + (1.0 - alpha) * window_closeness(vf, vt, *fit)
    order = np.flatnonzero(keep)
    order = order[np.argsort(-score[order], kind="stable")]
    if distinct and len(order):
        content = hits.column("content").to_pylist()
        seen, picked = set(), []
        for i in order.tolist():
            c = content[i]
            key = ("id", i) if c is None else c
            if key not in seen:
                seen.add(key)
                picked.append(i)
                if len(picked) == k:
                    break
        order = np.asarray(picked, np.int64)
    order = order[:k]
    out = hits.take(pa.array(order, pa.int64()))
    if fit is not None:
        out = out.set_column(out.column_names.index("score"), "score", pa.array(score[order], pa.float64()))
    out = out.set_column(out.column_names.index("rank"), "rank",
                         pa.array(np.arange(1, len(order) + 1), out.schema.field("rank").type))
    return out, (float(score[order[-1]]) if len(order) == k else None)


def post_search(search: Callable[..., pa.Table], vec: np.ndarray, k: int, opts: SearchOptions, *,
                drop_undated: bool, distinct: bool, fit: tuple | None, alpha: float) -> pa.Table:
    """``search`` with the text query's post-stage (:func:`_post`), asking the core for more
    rows until the answer is exact: k rows found and, with a window fit, no row not yet
    fetched could reach the k-th final score (its core score is at most the last fetched
    one and its closeness at most 1). Past :data:`POST_FETCH_MAX` rows the answer is
    returned with ``certified`` False."""
    if not (drop_undated or distinct or fit is not None):
        return search(vec, k, opts)
    m = min(max(4 * k, k + 16), K_MAX)
    while True:
        hits = search(vec, m, opts)
        out, kth = _post(hits, k, drop_undated=drop_undated, distinct=distinct, fit=fit, alpha=alpha)
        if hits.num_rows < m:
            return out  # every qualifying row was seen
        if kth is not None:
            if fit is None:
                return out
            last = float(hits.column("score")[hits.num_rows - 1].as_py())
            if kth >= alpha * last + (1.0 - alpha):
                return out
        if m >= POST_FETCH_MAX or m >= K_MAX:
            cert = pa.array(np.zeros(out.num_rows, bool))
            return out.set_column(out.column_names.index("certified"), "certified", cert)
        m = min(m * 4, POST_FETCH_MAX, K_MAX)


def _check_embedder(fn: Any) -> None:
    if fn is None:
        raise QueryError("query needs an embedder: pass embed= (a callable str -> vector) "
                         "or set engine.embedder")
    if not callable(fn) and not is_temporal(fn) and not callable(getattr(fn, "encode", None)):
        raise QueryError(f"embed must be callable (str -> vector), got {type(fn).__name__}")


def _embed_failed(row: int | None, detail: str) -> None:
    raise QueryError(f"embed returned something that is not a vector ({detail})")


def embed_question(fn: Any, question: str, t: int, dim: int) -> np.ndarray:
    """The question's float32 vector from ``fn``: a time-aware embedder (a
    :class:`~chrono_engine.TemporalEmbedder`: ``embed_query`` embeds it at T = ``t`` µs) or
    a plain one as ingest calls it (``encode([question])`` when it has ``encode``, else
    ``fn(question)``; :mod:`chrono_engine._embedder`), checked to be ``dim`` wide; anything
    else is a QueryError."""
    _check_embedder(fn)
    if is_temporal(fn):
        try:
            vec = as_float32(fn.embed_query(question, at=np.array([t], np.int64)))
        except (TypeError, ValueError) as e:
            raise QueryError(f"embed returned something that is not a vector: {shown(str(e))}") from None
    else:
        vec = text_vectors(fn, [question], _embed_failed)[0]
    if vec.shape != (dim,):
        raise QueryError(f"embed returned shape {vec.shape}, expected ({dim},)")
    return vec


def query_text(search: Callable[..., pa.Table], dim: int, embedder: Any, text: str, k: int, *, now: Any,
               tz: Any, embed: Callable[[str], Any] | None, lang: str | None,
               options: SearchOptions | None, overrides: dict, embed_text: str = "full",
               distinct: bool = True, undated: str = "auto", window_fit: Any = WINDOW_FIT_DAYS) -> QueryResult:
    """The body of :meth:`Engine.query <chrono_engine.Engine.query>`; ``search(vector, k,
    options)`` runs one search, ``embedder`` is the engine's."""
    from ..timelang import parse_temporal_intent
    from ..timelang.parser import context

    if not isinstance(text, str) or not text.strip():
        raise QueryError(f"text must be a non-empty string, got {shown(text)}")
    for name in overrides:
        if name in _FROM_INTENT:
            raise QueryError(f"query: {name} comes from the text's time intent; use search() to set it")
        if name not in SearchOptions.names():
            known = [n for n in SearchOptions.names() if n not in _FROM_INTENT + ("lang",)]
            raise QueryError(f"query: unknown option {name!r} (known: {', '.join(known)})")
    if lang is None:
        lang = "zh" if _has_cjk(text) else "en"
    elif lang not in _LANGS:
        raise QueryError(f"lang must be 'en', 'zh' or None, got {shown(lang)}")
    if embed_text not in ("full", "cleaned"):
        raise QueryError(f"embed_text must be 'full' or 'cleaned', got {shown(embed_text)}")
    if not isinstance(distinct, (bool, np.bool_)):
        raise QueryError(f"distinct must be True or False, got {shown(distinct)}")
    if not isinstance(undated, str) or undated not in UNDATED:
        raise QueryError(f"undated must be one of {', '.join(UNDATED)}, got {shown(undated)}")
    if window_fit is not None:  # a half-life in days
        window_fit = real(window_fit, "window_fit", 0.0, 1e7, open_lo=True)
    k = count(k, "k", lo=1, hi=K_MAX, error=QueryError)
    fn = embed if embed is not None else embedder
    _check_embedder(fn)
    ctx = context(now, tz)
    intent = parse_temporal_intent(text, now=ctx.now, tz=ctx.tz)
    with errors_as(QueryError):
        now_at = scalar_us(ctx.now, "now")
        window = None
        if intent.mode == "as_of":
            t = scalar_us(intent.anchor, "anchor")
            kw = {"mode": "as_of", "as_of": t}
        elif intent.mode == "window":
            start, end = intent.window
            ws = scalar_us(start, "window start") if start is not None else MIN_TIME_US
            we = scalar_us(end, "window end") if end is not None else OPEN_END
            t = min(we, now_at)
            window = (ws, we)
            kw = {"mode": "window", "window": window, "as_of": t}
        else:
            t = now_at
            kw = {"mode": "latest", "as_of": t}
    vec = embed_question(fn, text if embed_text == "full" else (intent.cleaned_query or text), t, dim)
    fit = None
    if window_fit is not None and window is not None and window[0] != MIN_TIME_US:
        fit = (window[0], window[1], window_fit * US_PER_DAY, now_at)
        # the core's window starts a quarter early; the fit measures from the real start
        kw["window"] = (max(MIN_TIME_US, window[0] - WINDOW_LEAD_US), window[1])
    opts = SearchOptions.of(options, **overrides, **kw, lang=lang)
    drop = undated == "exclude" or (undated == "auto" and intent.mode != "latest")
    hits = post_search(search, vec, k, opts, drop_undated=drop, distinct=bool(distinct), fit=fit,
                       alpha=opts.alpha)
    if ctx.tz is not _UTC and hits.num_rows:
        vf = hits.column("valid_from").cast(pa.int64()).to_numpy()
        cites = citations(hits.column("title"), hits.column("version"), vf, lang, ctx.tz)
        hits = hits.set_column(hits.column_names.index("citation"), "citation", cites)
    return QueryResult(hits=hits, intent=intent, lang=lang, as_of=from_us(t),
                       window=None if window is None else (from_us(window[0]), from_us(window[1])))
