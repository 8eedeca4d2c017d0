"""A search described once (:class:`PreparedSearch`, the seam every search path crosses): query
vectors checked and scaled, the core's parameters (option codes, the fact-type mask, k, the
planner's settings)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _core
from .._args import as_float32, count, shown
from .._state import StoreState
from ..errors import ConfigError, QueryError
from . import filters
from .options import FUSIONS, MODES, OUT_OF_FORCE, SCAN_ORDERS, SearchOptions, choice
from .results import metadata_names


# The planner's settings (Engine attributes) and their least values; each is a size_t in
# the core, where the graph walk's width may grow to 4·k, so 2**62 bounds them all.
_PLANNER_MIN = {"ef": 1, "ef_max": 1, "scan_limit": 0, "seed_ef": 0, "seed_min": 0, "group": 0}


def query_vectors(vectors: Any, dim: int, metric: str) -> np.ndarray:
    """Query vectors as C-contiguous float32 (n, dim), a new array, unit length under
    cosine; bad ones (not numbers, wrong shape, non-finite or beyond float32, zero under
    cosine) raise QueryError naming the query. Each row is scaled natively
    (``_core.unit_rows``: its sum of squares in double, where no float32 row over- or
    underflows, each component times 1/sqrt of it in double, rounded to float32), the one
    routine :func:`query_vector_one` calls too, so a lone ``search()`` and ``search_batch``
    ask with the same bits."""
    try:
        q = np.ascontiguousarray(as_float32(vectors))
    except (TypeError, ValueError) as e:
        raise QueryError(f"vectors must be numbers of shape (n, {dim}), got {type(vectors).__name__} "
                         f"{shown(vectors)} ({shown(str(e))})") from None
    if q.ndim != 2 or q.shape[1] != dim:
        raise QueryError(f"vectors must have shape (n, {dim}), got {q.shape}")
    out, row, why = _core.unit_rows(q, metric == "cosine")
    if row >= 0:
        what = "is a zero vector (cosine)" if why == 2 else "has a non-finite value (NaN, inf, or beyond float32)"
        raise QueryError(f"query {row} {what}")
    return out


#: a list of Python floats (and ints up to 2^24 in magnitude) as float32 with NumPy's bits
#: (``np.asarray(x).astype(np.float32)``), natively; None for any other list
list_f32 = _core.list_f32


def query_vector_one(vector: Any, dim: int, metric: str) -> np.ndarray | None:
    """One search's query vector as :func:`query_vectors` makes it (the same native
    routine, so the same bits), for the common call — a C-contiguous float32 NumPy vector
    of length ``dim`` — without the general path's checks (one native call); None for any
    other input, and for a bad vector (the caller takes the general path, which names the
    problem)."""
    if type(vector) is not np.ndarray or vector.dtype != np.float32 or vector.shape != (dim,) \
            or not vector.flags.c_contiguous:
        return None
    out, row, _ = _core.unit_rows(vector[None, :], metric == "cosine")
    return None if row >= 0 else out[0]


class PreparedSearch:
    """One search described once: the seam every search crosses (:meth:`Engine.search
    <chrono_engine.Engine.search>`, ``search_batch``, ``asearch``, the coalescer and the
    service), made by :meth:`Engine.prepare_search <chrono_engine.Engine.prepare_search>`
    (one query) or ``search_batch`` (many), run by :meth:`Engine.search_prepared
    <chrono_engine.Engine.search_prepared>`.

    ``queries``: (n, dim) float32, unit length under cosine (one query: a (dim,) vector);
    ``times``: (T, known_at, window start, window end), int64 µs per query, "now" fixed
    when the call was made; ``options``: the checked :class:`SearchOptions`; ``k``: checked
    once; ``params``: the core's parameters (:func:`core_params`: option codes, the
    fact-type mask, k, the planner settings), built once per distinct set of options;
    ``key``: calls with equal keys run as one batch, their times as arrays."""

    __slots__ = ("queries", "times", "options", "k", "params", "key")

    def __init__(self, queries: np.ndarray, times: tuple, options: SearchOptions, k: int, params: _core.SearchParams,
                 key: tuple) -> None:
        self.queries, self.times, self.options, self.k, self.params, self.key = \
            queries, times, options, k, params, key

    def __repr__(self) -> str:
        n = self.n_queries
        return f"PreparedSearch({n} quer{'y' if n == 1 else 'ies'}, k={self.k}, mode={self.options.mode!r})"

    @property
    def n_queries(self) -> int:
        """How many queries: 1 for a lone call's (dim,) vector."""
        return 1 if self.queries.ndim == 1 else self.queries.shape[0]

    def batch(self) -> tuple[np.ndarray, tuple]:
        """The queries as (n, dim) and their times."""
        q = self.queries
        return (q[None, :] if q.ndim == 1 else q), self.times


def joined(calls: Sequence[PreparedSearch]) -> PreparedSearch:
    """Calls with one key as one batch: their queries stacked, their times concatenated."""
    if len(calls) == 1:
        return calls[0]
    first = calls[0]
    q = np.stack([c.queries for c in calls])
    times = tuple(np.concatenate([c.times[i] for c in calls]) for i in range(4))
    return PreparedSearch(q, times, first.options, first.k, first.params, first.key)


def core_params(state: StoreState, opts: SearchOptions, k: int, planner: dict) -> _core.SearchParams:
    """The core's description of a search with options ``opts`` and a checked ``k``
    (:class:`_core.SearchParams`, checked once when made, read-only after): mode, fusion,
    α, τ, the out-of-force codes, the penalty, arbitration, the fact-type mask (an unknown
    type is a QueryError here, :meth:`StoreState.type_mask`), k, exact, and the planner's
    settings (:func:`planner_args`; the graph walk's width at least 4·k). The Engine keeps
    one per distinct options (``Engine._core_params``): made once, not per call."""
    ef, ef_max, scan_limit, seed_ef, seed_min, group, scan = planner_args(planner)
    metadata_names(state, opts.columns)  # an unknown column is this call's QueryError
    where = None if opts.where is None else filters.compile(opts.where, state.user)
    return _core.SearchParams(
        mode=MODES[opts.mode], fusion=FUSIONS[opts.fusion], alpha=opts.alpha, tau=opts.tau,
        deprecated=OUT_OF_FORCE[opts.deprecated], future=OUT_OF_FORCE[opts.future],
        deprecation_penalty=opts.deprecation_penalty, arbitrate=bool(opts.arbitrate),
        type_mask=state.type_mask(opts.fact_types), k=k, exact=bool(opts.exact), ef=max(ef, 4 * k), ef_max=ef_max,
        scan_limit=scan_limit, seed_ef=seed_ef, seed_min=seed_min, group=group, scan=scan, filter=where)


def planner_args(planner: dict) -> tuple:
    """The planner settings (an Engine's ``ef``, ``ef_max``, ...) checked, as the core
    takes them: ef, ef_max, scan_limit, seed_ef, seed_min, group, the scan order's code; a
    bad one is a ConfigError naming it."""
    args = tuple(count(planner[name], name, lo=lo, hi=2**62, error=ConfigError) for name, lo in _PLANNER_MIN.items())
    return args + (choice(planner["scan"], SCAN_ORDERS, "scan"),)
