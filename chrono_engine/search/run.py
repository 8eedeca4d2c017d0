"""A prepared search through the core's planner, and its answer as a table, columns or JSON bodies."""
from __future__ import annotations


import numpy as np
import pyarrow as pa

from .._state import StoreState
from ..errors import QueryError
from .options import MODES
from .prepared import PreparedSearch
from .results import gate, _native_table, metadata_names, result_columns, result_json, result_table, with_metadata


def _overflowed(out: dict, metric: str) -> None:
    """QueryError when a hit's similarity overflowed float32 in the core: under ip an inner
    product beyond ±3.4e38 is inf (or NaN); under l2 a distance beyond ~1.8e19 is inf and
    its similarity 1 / (1 + distance) exactly 0, which no finite distance gives. Cosine
    cannot overflow (unit vectors). Items that overflowed without being returned cannot
    have displaced a returned one (inf is the top under ip; 0 is the bottom under l2)."""
    if metric == "cosine":
        return
    sim = out["similarity"]
    bad = (~np.isfinite(sim) | ~np.isfinite(out["score"])) if metric == "ip" else sim == 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = "inner product with" if metric == "ip" else "distance to"
        raise QueryError(f"query {int(out['query'][i])}: its {what} item {int(out['id'][i])} overflows float32; "
                         f"scale the query (or the stored vectors) down")


def core_search(state: StoreState, call: PreparedSearch, threads: int) -> tuple[dict, np.ndarray]:
    """One prepared search's queries through the core's planner: its raw answer (NumPy
    arrays by hit: query, rank, row, id, score, similarity, validity, decay, penalty; by
    query: certified, plan) and each query's T."""
    q, times = call.batch()
    t, ka, ws, we = times
    out = state.core.search_batch(q, t, ka, ws, we, call.params, max(int(threads), 1))
    _overflowed(out, state.metric)
    out["known_at"] = ka  # per query: the result table shows each hit as known then
    return out, t


def lone_table(state: StoreState, call: PreparedSearch) -> pa.Table | None:
    """One prepared query's result table without its ``query`` column (no ``explain``, no
    gate) in one native call (``Store.search_one``: the planner, the hits' metadata,
    strings and citations, and the Arrow batch), the table :func:`core_search` then
    :func:`result_table` make, column for column; None where that path must answer
    instead (the core says which: an overflowed similarity, whose QueryError it raises; a
    write that raced the search; a citation only Python writes) or before any ingest."""
    strings = state.hit_strings()
    if strings is None:
        return None
    t, ka, ws, we = call.times
    table = _native_table(False, lambda with_schema: state.core.search_one(
        call.queries, int(t[0]), int(ka[0]), int(ws[0]), int(we[0]), call.params, strings, state.stems,
        call.options.lang == "zh", with_schema))
    if table is None or not state.user:
        return table
    return with_metadata(state, table, call.options.columns)


#: what a search's answer is made into (:func:`run`)
FORMS = ("table", "columns", "json")


def run(state: StoreState, call: PreparedSearch, threads: int, *, form: str = "table",
        with_query: bool = True) -> pa.Table | dict | list:
    """:func:`core_search`, then its answer as the result table (and the layer-3 gate);
    ``form="columns"`` without the gate: as :func:`result_columns` (no Arrow);
    ``form="json"``: each query's JSON body (:func:`result_json`) where it applies (no
    ``explain``, no gate, at most :data:`_NATIVE_MAX` hits), else as ``"columns"``;
    ``with_query=False``: without the ``query`` column (one query; no gate)."""
    out, t = core_search(state, call, threads)
    opts = call.options
    n = call.n_queries
    meta = metadata_names(state, opts.columns)  # the hits' metadata columns, if any
    if opts.verify is None:
        if form == "json" and not opts.explain and not meta:
            bodies = result_json(state, out, opts.lang, n)
            if bodies is not None:
                return bodies
        if form != "table":
            cols = result_columns(state, out, opts.explain, opts.lang, t, MODES[opts.mode])
            if meta:
                cols.update(state.user_table(out["row"].astype(np.int64), meta))
            return cols
        table = result_table(state, out, opts.explain, opts.lang, t, MODES[opts.mode], with_query=with_query)
        return with_metadata(state, table, meta, out["row"]) if meta else table
    table = gate(result_table(state, out, opts.explain, opts.lang, t, MODES[opts.mode]), opts.verify, n)
    if meta:
        table = with_metadata(state, table, meta, out["row"])
    return table if with_query else table.drop_columns(["query"])
