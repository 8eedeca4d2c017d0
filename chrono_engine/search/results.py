"""The result table (natively or through NumPy), its JSON bodies, the layer-3 gate and citations."""
from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _core
from .._args import shown
from .._state import StoreState, _string_array
from .._time import OPEN_END, US_PER_DAY, from_us
from ..errors import QueryError
from ..schema import format_version, parse_version


_UTC = _dt.timezone.utc


_TS = pa.timestamp("us", tz="UTC")


#: the core's plan codes (searcher.hpp Plan): the certified scan, the graph walk, the probe,
#: the certified scan taken after a graph walk came back with fewer than k rows
_PLANS = np.array(["scan", "graph", "probe", "scan after graph"], dtype=object)


#: the result columns that come from the core's NumPy arrays, with their Arrow types
NUMERIC_COLUMNS = {"query": pa.int32(), "rank": pa.int32(), "id": pa.uint64(), "score": pa.float64(),
                   "similarity": pa.float32(), "validity": pa.float32(), "certified": pa.bool_(),
                   "decay": pa.float32(), "penalty": pa.float32()}


def result_table(state: StoreState, out: dict, explain: bool, lang: str, t: np.ndarray, mode: int,
                 *, with_query: bool = True) -> pa.Table:
    """The core's hits as the documented Arrow table (see Engine.search_batch); without
    its ``query`` column when ``with_query`` is False (a lone search).

    Up to :data:`_NATIVE_MAX` hits without ``explain`` (a lone search, a coalesced group),
    the table is built in one native call (``_core.record_batch``, through the Arrow C
    data interface) from the same columns as :func:`result_columns` gives; more, or with
    ``explain``, through :func:`to_table` (zero-copy from NumPy)."""
    if explain or len(out["row"]) > _NATIVE_MAX:
        table = to_table(result_columns(state, out, explain, lang, t, mode))
        return table if with_query else table.drop_columns(["query"])
    columns = _native_columns(state, out, lang, with_query)
    return _native_table(with_query, lambda with_schema: _core.record_batch(columns, with_schema))


def _native_table(with_query: bool, export: Callable[[bool], tuple | None]) -> pa.Table | None:
    """The table of a natively built record batch: ``export(with_schema)`` gives its two
    capsules, or (array capsule, address) without the schema, or None (no table). The first
    table of its kind (:data:`_NATIVE_SCHEMAS`) imports its schema, which is kept; later
    ones import the array alone against it (pyarrow parses no schema: ~8 µs a call)."""
    schema = _NATIVE_SCHEMAS.get(with_query)
    got = export(schema is None)
    if got is None:
        return None
    if schema is None:
        batch = pa.RecordBatch._import_from_c_capsule(*got)
        _NATIVE_SCHEMAS[with_query] = batch.schema
    else:
        capsule, address = got
        batch = pa.RecordBatch._import_from_c(address, schema)
        del capsule  # after the import, which moved the array out of it
    return pa.Table.from_batches([batch])


#: the native result table's schema by ``with_query``: :func:`_native_columns` gives each
#: column a fixed name and format, so a table's schema depends on nothing else
_NATIVE_SCHEMAS: dict = {}


def metadata_names(state: StoreState, columns: Any) -> list:
    """The metadata columns a result carries: ``columns`` (the ``columns=`` option's
    names; None: every metadata column of the store; an unknown name is a QueryError)."""
    if not state.user:
        if columns:
            raise QueryError(f"columns: the store has no metadata columns, asked for {shown(columns[0])}")
        return []
    if columns is None:
        return list(state.user)
    for name in columns:
        if name not in state.user:
            known = ", ".join(repr(n) for n in list(state.user)[:20])
            raise QueryError(f"columns: unknown metadata column {shown(name)} (the store's: {known})")
    return list(columns)


def with_metadata(state: StoreState, table: pa.Table, columns: Any, rows: np.ndarray | None = None) -> pa.Table:
    """``table`` (a result, ``id`` per hit) with the hits' metadata columns appended
    (:func:`metadata_names`); ``rows``: the hits' rows when known (else read by id)."""
    names = metadata_names(state, columns)
    if not names:
        return table
    if rows is None:
        rows = state.core.rows_of(np.asarray(table.column("id").to_numpy(), np.uint64))
    for name, arr in state.user_table(np.asarray(rows, np.int64), names).items():
        table = table.append_column(name, arr)
    return table


def query_cuts(query: np.ndarray, n: int) -> np.ndarray:
    """Where each of ``n`` queries' rows start in a ``search_batch`` answer (its ``query``
    column, ordered), and its end: rows ``cuts[i]:cuts[i + 1]`` answer query ``i``."""
    return np.searchsorted(query, np.arange(n + 1))


def result_json(state: StoreState, out: dict, lang: str, n_queries: int) -> list[bytes] | None:
    """Each query's hits as the service's JSON body ``{"hits": [{column: value, ...}, ...]}``
    (the result table's columns without ``query``; timestamps ISO 8601 UTC, open ends and
    non-finite numbers null), written by one native call (``_core.json_rows``); None beyond
    :data:`_NATIVE_MAX` hits (the caller takes :func:`result_columns`)."""
    if len(out["row"]) > _NATIVE_MAX:
        return None
    starts = query_cuts(out["query"], n_queries).astype(np.int64)
    return _core.json_rows(_native_columns(state, out, lang, False), starts, "hits")


def _native_columns(state: StoreState, out: dict, lang: str, with_query: bool) -> list:
    """The result table's columns (without ``explain``'s) as ``_core.record_batch`` and
    ``_core.json_rows`` take them: (name, format, values, valid or None)."""
    q = out["query"]
    rows, cols, text, cites = _hits(state, out, lang)
    columns = [("query", "i", q, None)] if with_query else []
    columns += [
        ("rank", "i", out["rank"], None), ("id", "L", out["id"], None), ("score", "g", out["score"], None),
        ("similarity", "f", out["similarity"], None), ("validity", "f", out["validity"], None),
        ("stem_id", "u") + _text(text["stem_id"]),
        ("version", "u") + _text(text["version"]),
        ("valid_from", _TS_FORMAT, cols["valid_from"], None),
        ("valid_to", _TS_FORMAT, cols["valid_to"], cols["valid_to_valid"]),
        ("title", "u") + _text(text["title"]),
        ("content", "u") + _text(text["content"]),
        ("citation", "u", cites if isinstance(cites, list) else cites.to_pylist(), None),
        ("certified", "b", out["certified"][q], None),
    ]
    return columns


#: the most hits :func:`result_table` builds natively (a lone search's, a coalesced group's)
_NATIVE_MAX = 4096


#: the C data interface's format of the result's timestamps (:data:`_TS`)
_TS_FORMAT = "tsu:UTC"


def _text(buffers: tuple) -> tuple:
    """(offsets, data, validity) as the (values, valid) of a ``_core.record_batch`` column."""
    return (buffers[0], buffers[1]), buffers[2]


def _hits(state: StoreState, out: dict, lang: str) -> tuple:
    """What both result forms read per hit, after the search (the table then holds every
    row the core returned): the rows (int64), the metadata the table reads
    (:meth:`StoreState.hit_meta`, as known at each query's ``known_at``), the string
    buffers of stem_id, version, title and content, and the citations
    (:func:`_hit_citations`)."""
    ka = out["known_at"]  # per query; one query's is the one time of all its hits
    cols = state.hit_meta(out["row"], ka if len(ka) == 1 else ka[out["query"]])
    rows = out["row"].astype(np.int64)
    title, version, content = state.hit_string_buffers(rows)
    text = {"stem_id": state.stem_buffers(cols["stem"]), "version": version, "title": title, "content": content}
    return rows, cols, text, _hit_citations(state, rows, title, version, cols["valid_from"], lang)


def result_columns(state: StoreState, out: dict, explain: bool, lang: str, t: np.ndarray, mode: int) -> dict:
    """The result table's columns before Arrow (:func:`to_table` makes the table): NumPy
    arrays for the :data:`NUMERIC_COLUMNS`, int64 µs for ``valid_from`` and ``valid_to``
    (``OPEN_END`` when open), Arrow string arrays or lists of str for the text. A service
    answering in JSON converts these without the round trip through Arrow."""
    rows, cols, text, cites = _hits(state, out, lang)
    data = {
        "query": out["query"], "rank": out["rank"], "id": out["id"], "score": out["score"],
        "similarity": out["similarity"], "validity": out["validity"],
        "stem_id": _string_array(*text["stem_id"]),
        "version": _string_array(*text["version"]),
        "valid_from": cols["valid_from"],
        "valid_to": cols["valid_to"],
        "title": _string_array(*text["title"]),
        "content": _string_array(*text["content"]),
        "citation": cites,
        "certified": out["certified"][out["query"]],
    }
    if explain:
        data["decay"] = out["decay"]
        data["penalty"] = out["penalty"]
        data["plan"] = _PLANS[out["plan"][out["query"]]].tolist()
        data["reason"] = _reasons(out, cols, t, mode)
    return data


def to_table(data: dict) -> pa.Table:
    """The Arrow result table of :func:`result_columns`."""
    cols = {}
    for name, v in data.items():
        if name in NUMERIC_COLUMNS:
            cols[name] = pa.array(v, NUMERIC_COLUMNS[name])
        elif name == "valid_from":
            # int64 arrays viewed as timestamps: pa.array(..., timestamp) takes a pandas-compat
            # path that costs ~4x more per call
            cols[name] = pa.array(v, pa.int64()).view(_TS)
        elif name == "valid_to":
            open_ = v == OPEN_END
            cols[name] = (pa.array(np.where(open_, 0, v), pa.int64(), mask=open_) if open_.any()
                          else pa.array(v, pa.int64())).view(_TS)
        else:
            cols[name] = v if isinstance(v, (pa.Array, pa.ChunkedArray)) else pa.array(v, pa.string())
    return pa.table(cols)


def _reasons(out: dict, cols: dict, t: np.ndarray, mode: int) -> list[str]:
    reasons = []
    for i in range(len(out["row"])):
        tq = t[out["query"][i]]
        parts = []
        if out["penalty"][i] < 1.0:
            parts.append(f"penalised ×{out['penalty'][i]:.3g}: " + (
                "not yet valid at T" if cols["valid_from"][i] > tq else
                "no longer valid at T" if cols["valid_to"][i] <= tq else "deprecated at T"))
        elif mode in (0, 1):
            parts.append("in force at T" if cols["valid_from"][i] <= tq < cols["valid_to"][i] else "not in force at T")
        if cols["stem"][i] >= 0:
            parts.append("arbitration winner of its stem" if mode != 1 else "the version in force at T for its stem")
        reasons.append("; ".join(parts) if parts else "eligible")
    return reasons


def gate(table: pa.Table, gamma: float, n_queries: int) -> pa.Table:
    """Layer-3 gate over a result table (SearchOptions ``verify=``)."""
    from ..verify import verify_hits

    report = verify_hits(table.column("validity").to_numpy(), table.column("id").to_numpy(), gamma,
                         query=table.column("query").to_numpy(), n_queries=n_queries)
    q = table.column("query").to_numpy()
    rho = report.column("robustness").to_numpy()[q]
    ok = report.column("satisfied").to_numpy(zero_copy_only=False)[q]
    refetch = table.column("validity").to_numpy() < gamma
    return (table.append_column("robustness", pa.array(rho, pa.float64()))
                 .append_column("satisfied", pa.array(ok, pa.bool_()))
                 .append_column("refetch", pa.array(refetch, pa.bool_())))


def citations(titles: Any, versions: Any, valid_from: np.ndarray, lang: str,
              tz: _dt.tzinfo | None = None) -> pa.Array:
    """Citation strings (Arrow), vectorised: title, canonical version (``"2.0"`` ->
    ``v2.0.0``) and the effective date (``valid_from``'s calendar day in ``tz``, default UTC).

    zh: ``依据《差旅报销管理制度》v2.0.0（2026-03-01 起施行）``;
    en: ``per Travel Expense Policy v2.0.0, effective 2026-03-01``.
    A missing title reads 未命名文档 / untitled; a missing version is left out.
    ``titles`` / ``versions``: Arrow string arrays (or lists); ``valid_from``: int64 µs.
    """
    def arrow(x: Any) -> pa.Array:
        a = x if isinstance(x, (pa.Array, pa.ChunkedArray)) else pa.array(list(x), pa.string())
        a = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
        return a.cast(pa.string())

    if 0 < len(titles) <= _FEW and (tz is None or tz is _UTC):
        def pylist(x: Any) -> list:
            return x.to_pylist() if isinstance(x, (pa.Array, pa.ChunkedArray)) else list(x)
        return pa.array(_few_citations(pylist(titles), pylist(versions), valid_from, lang), pa.string())
    title, ver = arrow(titles), arrow(versions)
    n = len(title)
    if n == 0:
        return pa.array([], pa.string())
    enc = pc.dictionary_encode(ver)  # canonical form of each distinct version string once
    canon = pa.array([_canonical_version(v) for v in enc.dictionary.to_pylist()], pa.string())
    ver = canon.take(enc.indices).fill_null("") if len(canon) else pa.nulls(n, pa.string()).fill_null("")
    vf = np.asarray(valid_from, dtype=np.int64)
    if tz is None or tz is _UTC:
        day = pa.array(vf.astype("datetime64[us]").astype("datetime64[D]").astype(str), pa.string())
    else:
        day = pa.array([from_us(u).astimezone(tz).date().isoformat() for u in vf], pa.string())
    join = pc.binary_join_element_wise
    if lang == "zh":
        return join("依据《", title.fill_null("未命名文档"), "》", ver, "（", day, " 起施行）", "")
    sep = pc.if_else(pc.equal(ver, ""), "", " ")
    return join("per ", title.fill_null("untitled"), sep, ver, ", effective ", day, "")


#: below this many citations, Python string joins cost less than Arrow's kernels (a
#: search's few hits: ~10 µs against ~150 µs); the two paths give the same strings
_FEW = 64


#: citations kept per store state and language, by row (a row's title, version and
#: valid_from never change: amendments move valid_to and deprecation only); cleared when full
_CITED_MAX = 65536


def _hit_citations(state: StoreState, rows: np.ndarray, title: tuple, version: tuple,
                   valid_from: np.ndarray, lang: str) -> list[str] | pa.Array:
    """:func:`citations` of a search's hits (UTC days) from their titles' and versions'
    string buffers (:meth:`StoreState.hit_string_buffers`), as a list: each row's text is
    made once per store state and language and kept (at most :data:`_CITED_MAX` rows, then
    cleared), so a search's hits cost a dict lookup each; the rows not kept yet are made
    together (Python's joins up to :data:`_FEW` of them, Arrow's kernels beyond). More hits
    than the cache holds: an Arrow array, without the cache."""
    if not 0 < len(rows) <= _CITED_MAX:
        return citations(_string_array(*title), _string_array(*version), valid_from, lang)
    cache = state.cited.get(lang)
    if cache is None:
        cache = state.cited[lang] = {}
    keys = rows.tolist()
    got = [cache.get(r) for r in keys]
    if None in got:
        miss = [i for i, g in enumerate(got) if g is None]
        titles, versions, vf = _string_array(*title), _string_array(*version), valid_from
        if len(miss) < len(keys):
            at = pa.array(miss, pa.int64())
            titles, versions, vf = titles.take(at), versions.take(at), np.asarray(valid_from)[miss]
        made = (_few_citations(titles.to_pylist(), versions.to_pylist(), vf, lang) if len(miss) <= _FEW
                else citations(titles, versions, vf, lang).to_pylist())
        if len(cache) + len(miss) > _CITED_MAX:
            cache.clear()
        for i, text in zip(miss, made):
            got[i] = cache[keys[i]] = text
    return got


@functools.lru_cache(maxsize=4096)
def _canonical_version(v: str) -> str:
    return format_version(parse_version(v))


@functools.lru_cache(maxsize=65536)
def _day_text(day: int) -> str:
    """Day ``day`` since the epoch as ``YYYY-MM-DD`` (NumPy's text, as the Arrow path's)."""
    return str(np.datetime64(day, "D"))


def _few_citations(titles: list, versions: list, valid_from: Any, lang: str) -> list[str]:
    days = [_day_text(d) for d in (np.asarray(valid_from, dtype=np.int64) // US_PER_DAY).tolist()]
    out = []
    for t, v, day in zip(titles, versions, days):
        ver = "" if v is None else _canonical_version(v)
        if lang == "zh":
            out.append(f"依据《{'未命名文档' if t is None else t}》{ver}（{day} 起施行）")
        else:
            out.append(f"per {'untitled' if t is None else t}{' ' if ver else ''}{ver}, effective {day}")
    return out
